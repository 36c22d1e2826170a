"""pathgls: can a pathology VLM's report be trusted, without a ground-truth report?

Public API (stable names; everything else is internal):

- configuration: :class:`PathGLSConfig` (one typed tree: every stage's section),
  :func:`load_config` (TOML with any subset of the sections), :func:`save_config` (the whole tree)
- slides: :func:`open_slide`, :func:`find_slides`
- feature bags: :func:`extract_slide`, :func:`read_bag`, :func:`validate_bag`
- encoders: :func:`build_encoder`, :func:`list_encoders`
- reports: :func:`analyze_report`, :func:`build_extractor`, :func:`build_nli`, :func:`score_logic`
  (S_l from text), :func:`logic_score` (S_l of an analysed report)
- grounding: :func:`ground` (S_g of a report's entities on a :class:`WindowSource`),
  :func:`open_bag_source` (a feature bag), :func:`roi_source` (an ROI image),
  :class:`GroundingConfig`
- trust and gate: :func:`fuse`, :func:`gate_scorecard`, :class:`FusionConfig`, :class:`GateConfig`
- runs: :func:`run_benchmark` (slides × subjects into a run directory, with a
  :class:`PathGLSConfig`), :class:`ResultsStore` (read a run's ScoreCards)
- results: :class:`ScoreCard`, :class:`ModuleScore`, :class:`Entity`, ...
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

# Public names → defining module. Imported on first use, so that `import pathgls` (and the
# CLI's start) stays fast and torch is loaded only by what needs it.
_LAZY = {
    "FeatureBag": "pathgls.features.bags",
    "read_bag": "pathgls.features.bags",
    "validate_bag": "pathgls.features.bags",
    "PathGLSConfig": "pathgls.config",
    "load_config": "pathgls.config",
    "save_config": "pathgls.config",
    "build_encoder": "pathgls.encoders",
    "list_encoders": "pathgls.encoders",
    "ExtractResult": "pathgls.features.extract",
    "analyze_report": "pathgls.text",
    "build_extractor": "pathgls.text",
    "build_nli": "pathgls.nli",
    "logic_score": "pathgls.logic",
    "score_logic": "pathgls.logic",
    "extract_slide": "pathgls.features.extract",
    "find_slides": "pathgls.tiling",
    "open_slide": "pathgls.tiling",
    "GroundingConfig": "pathgls.config",
    "GroundingResult": "pathgls.grounding.score",
    "WindowSource": "pathgls.grounding.sources",
    "ground": "pathgls.grounding.score",
    "open_bag_source": "pathgls.grounding.sources",
    "roi_source": "pathgls.grounding.sources",
    "FusionConfig": "pathgls.config",
    "GateConfig": "pathgls.config",
    "fuse": "pathgls.fusion",
    "gate_scorecard": "pathgls.fusion",
    "ResultsStore": "pathgls.runner.store",
    "run_benchmark": "pathgls.runner.run",
    "Entity": "pathgls.types",
    "GateDecision": "pathgls.types",
    "ModuleScore": "pathgls.types",
    "Relation": "pathgls.types",
    "Report": "pathgls.types",
    "ReportGraph": "pathgls.types",
    "ScoreCard": "pathgls.types",
}

if TYPE_CHECKING:  # for type checkers and IDEs
    from pathgls.config import (
        FusionConfig,
        GateConfig,
        GroundingConfig,
        PathGLSConfig,
        load_config,
        save_config,
    )
    from pathgls.encoders import build_encoder, list_encoders
    from pathgls.features.bags import FeatureBag, read_bag, validate_bag
    from pathgls.features.extract import ExtractResult, extract_slide
    from pathgls.fusion import fuse, gate_scorecard
    from pathgls.grounding.score import GroundingResult, ground
    from pathgls.grounding.sources import WindowSource, open_bag_source, roi_source
    from pathgls.logic import logic_score, score_logic
    from pathgls.nli import build_nli
    from pathgls.runner.run import run_benchmark
    from pathgls.runner.store import ResultsStore
    from pathgls.text import analyze_report, build_extractor
    from pathgls.tiling import find_slides, open_slide
    from pathgls.types import (
        Entity,
        GateDecision,
        ModuleScore,
        Relation,
        Report,
        ReportGraph,
        ScoreCard,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pathgls' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Entity",
    "ExtractResult",
    "FeatureBag",
    "FusionConfig",
    "GateConfig",
    "GateDecision",
    "GroundingConfig",
    "GroundingResult",
    "ModuleScore",
    "PathGLSConfig",
    "Relation",
    "Report",
    "ReportGraph",
    "ResultsStore",
    "ScoreCard",
    "WindowSource",
    "__version__",
    "analyze_report",
    "build_encoder",
    "build_extractor",
    "build_nli",
    "extract_slide",
    "find_slides",
    "fuse",
    "gate_scorecard",
    "ground",
    "list_encoders",
    "load_config",
    "logic_score",
    "open_bag_source",
    "open_slide",
    "read_bag",
    "roi_source",
    "run_benchmark",
    "save_config",
    "score_logic",
    "validate_bag",
]
