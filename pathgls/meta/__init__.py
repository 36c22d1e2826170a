"""Which metric to believe, and how to weigh the modules: validation against experts.

- :mod:`.correlate` — correlation with expert scores (the published protocol), sensitivity;
- :mod:`.metrics` — the registry of reference-based report metrics;
- :mod:`.calibrate` — fusion weights, gate thresholds and ablation from labelled data;
- :mod:`.certify` — certified gate thresholds (Learn-then-Test, exact binomial bound), and
  :mod:`.certificate` — what they guarantee, on which rows, and when a run differs;
- :mod:`.labels` — labels from review files and expert scores; :mod:`.expert_rows` — an
  expert-scored table scored offline (report side + Logic);
- :mod:`.ranking` — coverage-aware ranking of subjects on the modules they share;
- :mod:`.compare` — paired comparison of subjects on the same items;
- :mod:`.stats` — bootstrap CI, rank with ties, Holm.

May import: every scoring stage (baselines, hare, fusion and below).
"""

from pathgls.meta.correlate import (
    Correlation,
    ExpertRow,
    SensitivityRow,
    SensitivityTable,
    correlate,
    read_expert_table,
    scatter_plot,
    sensitivity,
)

__all__ = [
    "Correlation",
    "ExpertRow",
    "SensitivityRow",
    "SensitivityTable",
    "correlate",
    "read_expert_table",
    "scatter_plot",
    "sensitivity",
]
