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

import importlib
from typing import TYPE_CHECKING, Any

from pathgls.version import __version__ as __version__

# The public API, in one table: name → the module it is imported from. `__all__`, `dir()` and
# attribute access derive from it; each name is imported on first use, so that `import pathgls`
# (and the CLI's start) stays fast and torch is loaded only by what needs it. The TYPE_CHECKING
# block below repeats it for type checkers and IDEs (tests/test_api.py checks they agree).
_LAZY: dict[str, str] = {
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

if TYPE_CHECKING:  # the table again, for type checkers and IDEs (`X as X`: a re-export)
    from pathgls.config import FusionConfig as FusionConfig
    from pathgls.config import GateConfig as GateConfig
    from pathgls.config import GroundingConfig as GroundingConfig
    from pathgls.config import PathGLSConfig as PathGLSConfig
    from pathgls.config import load_config as load_config
    from pathgls.config import save_config as save_config
    from pathgls.encoders import build_encoder as build_encoder
    from pathgls.encoders import list_encoders as list_encoders
    from pathgls.features.bags import FeatureBag as FeatureBag
    from pathgls.features.bags import read_bag as read_bag
    from pathgls.features.bags import validate_bag as validate_bag
    from pathgls.features.extract import ExtractResult as ExtractResult
    from pathgls.features.extract import extract_slide as extract_slide
    from pathgls.fusion import fuse as fuse
    from pathgls.fusion import gate_scorecard as gate_scorecard
    from pathgls.grounding.score import GroundingResult as GroundingResult
    from pathgls.grounding.score import ground as ground
    from pathgls.grounding.sources import WindowSource as WindowSource
    from pathgls.grounding.sources import open_bag_source as open_bag_source
    from pathgls.grounding.sources import roi_source as roi_source
    from pathgls.logic import logic_score as logic_score
    from pathgls.logic import score_logic as score_logic
    from pathgls.nli import build_nli as build_nli
    from pathgls.runner.run import run_benchmark as run_benchmark
    from pathgls.runner.store import ResultsStore as ResultsStore
    from pathgls.text import analyze_report as analyze_report
    from pathgls.text import build_extractor as build_extractor
    from pathgls.tiling import find_slides as find_slides
    from pathgls.tiling import open_slide as open_slide
    from pathgls.types import Entity as Entity
    from pathgls.types import GateDecision as GateDecision
    from pathgls.types import ModuleScore as ModuleScore
    from pathgls.types import Relation as Relation
    from pathgls.types import Report as Report
    from pathgls.types import ReportGraph as ReportGraph
    from pathgls.types import ScoreCard as ScoreCard


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pathgls' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = sorted(["__version__", *_LAZY])
