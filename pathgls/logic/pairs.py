"""Which statements Logic compares: pairs drawn from the case model.

Two statements are paired only when they state facts about the same target
(:meth:`~pathgls.logic.checks.base.CaseView.same`):

* ``check`` — every pair the checks compared (a conflict, or a compatible comparison such as
  "grade 2" and "moderately differentiated");
* ``finding->diagnosis`` — with an NLI model, or when the checks compared nothing: each statement
  of a fact about a diagnosed tumour against the statement that gives the tumour its type (the
  published PathGLS pairing, restricted to the same target).

Statements of another part, a margin, a node group or background tissue are never paired with
the tumour's. Pairs are deterministic (conflicts first, then report order) and at most
``max_pairs``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pathgls.logic.checks import CaseView, Comparison
from pathgls.text.case import Case

#: Slots whose facts are findings about the tumour, paired with its diagnosis statement.
FINDING_SLOTS = frozenset(
    {"invasion", "extent", "finding", "grade", "size", "stage", "marker", "behaviour"}
)


@dataclass(frozen=True)
class LogicPair:
    """One premise → hypothesis pair (statement indices into the case's document)."""

    premise: int
    hypothesis: int
    kind: str  # "check", "within-statement", "finding->diagnosis"


def support_pairs(case: Case) -> Iterator[tuple[int, int]]:
    """Finding statements against the type statement of the same tumour."""
    view = CaseView(case)
    types = view.facts("type", kind="tumour") or view.facts("mention", kind="tumour")
    for f in case.facts:
        if not f.certain or f.slot not in FINDING_SLOTS or f.target.kind != "tumour":
            continue
        for t in types:
            if view.same(f.target, t.target):
                yield f.statement, t.statement  # the same statement too: "Adenocarcinoma, G2"
                break


def case_pairs(
    case: Case,
    comparisons: Sequence[Comparison],
    *,
    with_model: bool,
    max_pairs: int = 2000,
) -> list[LogicPair]:
    """The pairs Logic scores (see the module docstring)."""
    seen: set[tuple[int, int]] = set()
    pairs: list[LogicPair] = []

    def add(a: int, b: int, kind: str) -> bool:
        key = (min(a, b), max(a, b))
        if key not in seen:
            seen.add(key)
            pairs.append(LogicPair(key[0], key[1], kind))
        return len(pairs) < max_pairs

    for c in comparisons:
        a, b = c.statements
        if not add(a, b, "within-statement" if a == b else "check"):
            return pairs
    if with_model or not pairs:
        for a, b in support_pairs(case):
            if not add(a, b, "within-statement" if a == b else "finding->diagnosis"):
                return pairs
    return pairs
