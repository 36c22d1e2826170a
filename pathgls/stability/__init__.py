"""Stability, S_s: does a subject's report hold under a stain shift and a false prompt?

- :mod:`.delta` — Δ backends (dx, embedding, entity, NLI) between two reports and S_s itself;
- :mod:`.dx` — the dx Δ: what two reports diagnose, compared both ways, and what changed;
- :mod:`.run` — S_s of a subject's generated reports (:func:`score_generation`), and
  :func:`run_stability`: generation (:mod:`pathgls.generation`) then that score.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.text`, :mod:`pathgls.nli`,
:mod:`pathgls.attacks`, :mod:`pathgls.subjects`, :mod:`pathgls.generation`.
"""

from pathgls.stability.delta import (
    StabilityConfig,
    comparison_texts,
    diagnosis_text,
    embedding_delta,
    entity_delta,
    finding_changes,
    findings,
    make_delta,
    nli_delta,
    stability_score,
)
from pathgls.stability.dx import DxChanges, DxDelta, dx_changes, dx_delta
from pathgls.stability.run import StabilityRun, run_stability, score_generation

__all__ = [
    "DxChanges",
    "DxDelta",
    "StabilityConfig",
    "StabilityRun",
    "comparison_texts",
    "diagnosis_text",
    "dx_changes",
    "dx_delta",
    "embedding_delta",
    "entity_delta",
    "finding_changes",
    "findings",
    "make_delta",
    "nli_delta",
    "run_stability",
    "score_generation",
    "stability_score",
]
