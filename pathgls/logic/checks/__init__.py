"""Logic's consistency checks: slot conflicts on the same target of the case model.

Each check is small and named (:data:`CHECKS`): ``behaviour``, ``type``, ``side``, ``site``,
``size``, ``grade``, ``stage`` (pT against size and extent, pN against the node count, FIGO
against depth, pM0 against a distant metastasis), ``nodes`` (counts, station sums, status),
``margin``, ``marker``, ``finding`` (an invasion kind, an extent or a finding affirmed and
denied), ``amount`` (two Ki-67 indices or shares of the specimen involved that cannot agree).
A check fires only when both facts are certainly about the same target
(:class:`~pathgls.logic.checks.base.CaseView`); what it compared without a conflict is reported
too, so every comparison is a scored pair. A finding, margin, amount or side is never set
against another fact of the same sentence.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from pathgls.config import CheckWeights
from pathgls.logic.checks.amounts import check_amounts
from pathgls.logic.checks.base import CaseView, Check, Comparison
from pathgls.logic.checks.findings import check_findings, check_margins, check_markers, check_nodes
from pathgls.logic.checks.staging import check_stage
from pathgls.logic.checks.tumour import (
    check_behaviour,
    check_benign,
    check_grade,
    check_metastasis,
    check_side,
    check_site,
    check_size,
    check_type,
)
from pathgls.text.case import Case

#: Check name → function, in the order they run.
CHECKS: MappingProxyType[str, Check] = MappingProxyType(
    {
        "behaviour": check_behaviour,
        "type": check_type,
        "metastasis": check_metastasis,
        "benign": check_benign,
        "side": check_side,
        "site": check_site,
        "size": check_size,
        "grade": check_grade,
        "stage": check_stage,
        "nodes": check_nodes,
        "margin": check_margins,
        "marker": check_markers,
        "finding": check_findings,
        "amount": check_amounts,
    }
)


#: Checks of things one sentence never affirms and denies at once (a finding, a margin, an
#: amount, a side): two such facts of one sentence are a misreading. Stage, counts, grades and
#: markers are compared within a sentence too ("invading the muscularis propria, pT1", "5 of 3
#: lymph nodes", "glioblastoma, WHO grade II", "positive for AMACR, negative for P504S").
_NOT_IN_ONE_STATEMENT = frozenset({"finding", "margin", "amount", "side", "site"})


def _one_statement(c: Comparison) -> bool:
    """Two facts of one sentence: its writer saw both at once, so a reading that sets them
    against each other is far likelier a misreading ("confined to the kidney with focal
    extension into the perirenal fat", "seen on frozen sections but not on the permanent")."""
    return c.a is not c.b and c.a.statement == c.b.statement


#: Values a comment qualifies (a grade, a stage, an amount); a comment that names another
#: tumour type or denies a finding still contradicts.
_QUALIFIED_IN_COMMENTS = frozenset(
    {"grade", "amount", "stage_extent", "stage_size", "stage_nodes", "stage_repeat"}
)
_SEE_COMMENT = re.compile(r"\bsee\s+(?:the\s+|a\s+)?(?:comment|note|addendum)", re.I)


def _explained(case: Case, c: Comparison) -> bool:
    """A value marked "(see comment)" set against a statement of the comment: the report says
    the comment qualifies that value ("Histologic grade: 3 (see comment)" / "the morphology is
    grade 2 …, but …"), so the two are an explanation, not a contradiction."""
    if c.rule not in _QUALIFIED_IN_COMMENTS:
        return False
    doc = case.document
    a, b = doc.statements[c.a.statement], doc.statements[c.b.statement]
    return any(
        _SEE_COMMENT.search(doc.statement_text(x)) and y.region == "comment"
        for x, y in ((a, b), (b, a))
    )


def run_checks(case: Case, *, weights: CheckWeights | None = None) -> list[Comparison]:
    """Every comparison the checks made over ``case``; conflicts first, strongest first.

    A pair of facts appears once per rule (its strongest verdict); the order is deterministic.
    """
    w = weights or CheckWeights()
    view = CaseView(case)
    best: dict[tuple[str, int, int, int, int], Comparison] = {}
    for check in CHECKS.values():
        for c in check(view, w):
            if c.conflict and (
                (c.rule in _NOT_IN_ONE_STATEMENT and _one_statement(c)) or _explained(case, c)
            ):
                c = Comparison(c.rule, c.a, c.b)  # precision first: module docstring
            ends = sorted(((c.a.statement, c.a.start), (c.b.statement, c.b.start)))
            key = (c.rule, *ends[0], *ends[1])
            if key not in best or c.probability > best[key].probability:
                best[key] = c
    return sorted(
        best.values(),
        key=lambda c: (-c.probability, c.statements, c.rule, c.a.start, c.b.start),
    )


__all__ = ["CHECKS", "CaseView", "Check", "Comparison", "run_checks"]
