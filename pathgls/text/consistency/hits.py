"""What a consistency check reports, and how sure each kind of finding is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pathgls.errors import ConfigError
from pathgls.text.consistency.statements import ReportStatements, Statement


@dataclass(frozen=True)
class CheckWeights:
    """Contradiction probability of each check when it fires (an NLI-like scale)."""

    polarity: float = 0.95  # the same concept affirmed and denied
    polarity_general: float = 0.9  # a general denial ("no metastasis") against a specific finding
    in_situ_vs_invasive: float = 0.9
    node_status: float = 0.9  # positive nodes against "no nodal metastasis" / a negative count
    node_counts: float = 0.8  # two different counts for the same station
    margin: float = 0.85
    margin_close: float = 0.7  # a close (free) margin against an involved one
    grade_opposite: float = 0.9  # grades two levels apart (well vs poorly differentiated)
    grade_adjacent: float = 0.75  # grades one level apart, or Gleason vs grade group
    benign_vs_malignant: float = 0.9
    benign_diagnosis: float = 0.85  # a benign diagnosis given as the diagnosis of a malignancy
    benign_same_kind: float = 0.75  # a benign tumour of the kind of the diagnosed malignancy
    unsupported_metastasis: float = 0.85
    stage_nodes: float = 0.9  # pN0 with positive nodes, N+ with only negative nodes
    stage_metastasis: float = 0.85  # M0 with distant metastasis and the reverse
    stage_size: float = 0.75  # a pT category its own stated size rules out
    marker_result: float = 0.9

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"CheckWeights.{name} must be in [0, 1], got {value}")


@dataclass(frozen=True)
class CheckHit:
    """Two statements of one report that cannot both be true, and why.

    ``a`` and ``b`` may lie in one sentence ("Grade 1 (poorly differentiated)").
    """

    rule: str  # the check that fired: polarity, node_status, margin, grade, ...
    probability: float
    a: Statement
    b: Statement
    explanation: str

    @property
    def sentences(self) -> tuple[int, int]:
        """The two sentence indices, in report order."""
        return tuple(sorted((self.a.sentence, self.b.sentence)))  # type: ignore[return-value]

    def to_dict(self, statements: ReportStatements) -> dict[str, Any]:
        """JSON-ready evidence: the rule, both sentences, both entities and their scopes."""
        first, second = sorted((self.a, self.b), key=lambda s: (s.sentence, s.entity.start))
        return {
            "rule": self.rule,
            "probability": self.probability,
            "explanation": self.explanation,
            "first": {
                "sentence": statements.sentence(first.sentence),
                "entity": first.describe(),
                "scope": first.scope.describe(),
            },
            "second": {
                "sentence": statements.sentence(second.sentence),
                "entity": second.describe(),
                "scope": second.scope.describe(),
            },
        }


#: A check reads every statement of a report and returns the contradictions it finds.
Check = Callable[[ReportStatements, CheckWeights], list[CheckHit]]


def hit(rule: str, p: float, a: Statement, b: Statement, why: str) -> CheckHit:
    """A :class:`CheckHit` (shorter to write in the checks)."""
    return CheckHit(rule=rule, probability=p, a=a, b=b, explanation=why)
