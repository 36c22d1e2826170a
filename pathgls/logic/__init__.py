"""Logic, S_l: does a report contradict itself?

- :mod:`.checks` — the consistency checks (their one home): slot conflicts on the same target of
  the typed case model (:mod:`pathgls.text.case`);
- :mod:`.pairs` — which statements are compared: the checks' comparisons (and, with an NLI
  model, finding → diagnosis statements of the same tumour);
- :mod:`.score` — checks + NLI per pair, the published top-K aggregation, the evidence;
- :mod:`.base` — the NLI scorer protocol (the backends live one floor up, in :mod:`pathgls.nli`).

May import: core, :mod:`pathgls.config`, :mod:`pathgls.text`.
"""

from pathgls.config import CheckWeights, LogicConfig
from pathgls.logic.base import NLIScorer
from pathgls.logic.checks import CHECKS, CaseView, Comparison, run_checks
from pathgls.logic.pairs import LogicPair, case_pairs, support_pairs
from pathgls.logic.score import (
    LogicAnalysis,
    ModelFreeNLI,
    analyze_logic,
    check_evidence,
    logic_score,
    score_logic,
    top_k,
)

__all__ = [
    "CHECKS",
    "CaseView",
    "CheckWeights",
    "Comparison",
    "LogicAnalysis",
    "LogicConfig",
    "LogicPair",
    "ModelFreeNLI",
    "NLIScorer",
    "analyze_logic",
    "case_pairs",
    "check_evidence",
    "logic_score",
    "run_checks",
    "score_logic",
    "support_pairs",
    "top_k",
]
