"""What a consistency check reports, and how sure each kind of finding is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pathgls.config import CheckWeights as CheckWeights  # re-exported
from pathgls.evidence import CheckedStatement, CheckEvidence
from pathgls.text.consistency.statements import ReportStatements, Statement


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

    def evidence(self, statements: ReportStatements) -> CheckEvidence:
        """The hit as evidence: the rule, both sentences, both entities and their scopes."""
        first, second = sorted((self.a, self.b), key=lambda s: (s.sentence, s.entity.start))

        def side(s: Statement) -> CheckedStatement:
            return CheckedStatement(
                sentence=statements.sentence(s.sentence),
                entity=s.describe(),
                scope=s.scope.describe(),
            )

        return CheckEvidence(
            rule=self.rule,
            probability=self.probability,
            explanation=self.explanation,
            first=side(first),
            second=side(second),
        )


#: A check reads every statement of a report and returns the contradictions it finds.
Check = Callable[[ReportStatements, CheckWeights], list[CheckHit]]


def hit(rule: str, p: float, a: Statement, b: Statement, why: str) -> CheckHit:
    """A :class:`CheckHit` (shorter to write in the checks)."""
    return CheckHit(rule=rule, probability=p, a=a, b=b, explanation=why)
