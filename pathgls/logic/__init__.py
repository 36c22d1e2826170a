"""Logic, S_l: does a report contradict itself?

- :mod:`.pairs` — which sentences are compared: scoped pairs from the report graph;
- :mod:`.score` — checks + NLI per pair, the published top-K aggregation, the evidence.

The checks themselves live with the report graph (:mod:`pathgls.text.consistency`), so the
offline ``rules`` NLI backend can use them too.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.text`, :mod:`pathgls.nli`.
"""

from pathgls.config import CheckWeights, LogicConfig
from pathgls.logic.pairs import LogicPair, build_pairs, scoped_pairs, topic
from pathgls.logic.score import (
    LogicAnalysis,
    ModelFreeNLI,
    analyze_logic,
    logic_score,
    score_logic,
    top_k,
)
from pathgls.text.consistency import CHECKS, run_checks
from pathgls.text.consistency.hits import CheckHit

__all__ = [
    "CHECKS",
    "CheckHit",
    "CheckWeights",
    "LogicAnalysis",
    "LogicConfig",
    "LogicPair",
    "ModelFreeNLI",
    "analyze_logic",
    "build_pairs",
    "logic_score",
    "run_checks",
    "scoped_pairs",
    "score_logic",
    "top_k",
    "topic",
]
