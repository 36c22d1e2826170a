"""HARE: the entity- and relation-centric reference-based metric for histopathology reports.

- :mod:`.metric` — the metric on prepared reports (:func:`hare_score`) and its config;
- :mod:`.models` — the models it runs on, by spec (offline or HARE's own), and batch scoring;
- :mod:`.hf` — HARE-RE and HARE-alignment behind pathgls's interfaces.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.hub`, :mod:`pathgls.text`.
"""

from pathgls.hare.metric import (
    EmptyReportWarning,
    EntityMatch,
    HareConfig,
    HareEntity,
    HareReport,
    HareResult,
    RelationMatch,
    RelationTriple,
    hare_score,
    normalise_text,
)
from pathgls.hare.models import (
    HARE_EMBEDDERS,
    HARE_RELATIONS,
    HARE_SPECS,
    OFFLINE_SPECS,
    GraphRelations,
    HareModels,
    HareSpecs,
    RelationBackend,
    build_hare_models,
    prepare_reports,
    score_pairs,
)

__all__ = [
    "HARE_EMBEDDERS",
    "HARE_RELATIONS",
    "HARE_SPECS",
    "OFFLINE_SPECS",
    "EmptyReportWarning",
    "EntityMatch",
    "GraphRelations",
    "HareConfig",
    "HareEntity",
    "HareModels",
    "HareReport",
    "HareResult",
    "HareSpecs",
    "RelationBackend",
    "RelationMatch",
    "RelationTriple",
    "build_hare_models",
    "hare_score",
    "normalise_text",
    "prepare_reports",
    "score_pairs",
]
