"""Amounts given as percentages: two proliferation indices, or two shares of the specimen
involved, that cannot describe the same tumour."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pathgls.config import CheckWeights
from pathgls.logic.checks.base import CaseView, Comparison, compared, conflict
from pathgls.text.case import Fact

#: Two proliferation indices conflict when they differ by this factor and this many points
#: (counting differences between fields stay below both); shares of the specimen when their
#: intervals lie this many points apart.
INDEX_RATIO = 2.5
INDEX_POINTS = 5.0
SHARE_GAP = 10.0


def check_amounts(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Ki-67 / MIB-1 indices and the share of the specimen involved, stated twice."""
    for key in ("proliferation", "involvement"):
        facts = [f for f in view.facts("amount", kind="tumour", key=key) if f.certain]
        for a, b in view.pairs(facts):
            if a.statement == b.statement:
                continue  # "5% overall, up to 20% in hot spots": one statement, two regions
            if _local(view, a) or _local(view, b):
                continue  # a focal count; another cell population
            verdict = _index_conflict(a, b) if key == "proliferation" else _share_conflict(a, b)
            if verdict is None:
                yield compared("amount", a, b)
                continue
            yield conflict(
                "amount", w.amount, a, b, f"{_what(key)} {_show(a)} and {_show(b)}: {verdict}"
            )


#: A count of part of the tumour or of one cell population ("focally 10% in areas of tumour",
#: "of the epithelial cells in the fallopian tube", "of the smooth muscle cells in the ovary").
_LOCAL = re.compile(
    r"\b(?:focal(?:ly)?|areas?|hot\s*-?\s*spots?|region|(?:epithelial|smooth\s+muscle|stromal|"
    r"lymphoid|normal|background|non-?neoplastic|benign)\s+cells?|cells?\s+in\s+the)\b",
    re.I,
)


def _local(view: CaseView, f: Fact) -> bool:
    return bool(_LOCAL.search(view.case.sentence(f.statement)))


def _index_conflict(a: Fact, b: Fact) -> str | None:
    notes = {a.note, b.note}
    # a hot spot against the whole ("5% overall", "up to 20% in the most proliferative areas")
    if any("overall" in n for n in notes) and any("areas" in n for n in notes):
        return None
    (alo, ahi), (blo, bhi) = a.value, b.value
    if "max" in a.note and "max" in b.note:
        lo, hi = sorted((ahi, bhi))
    elif "max" in a.note or "max" in b.note:
        cap, other = (a, b) if "max" in a.note else (b, a)
        if other.value[0] > cap.value[1] + INDEX_POINTS:
            return "more than the stated maximum"
        lo, hi = sorted((other.value[1], cap.value[1]))
    elif "range" in a.note or "range" in b.note:
        gap = max(alo, blo) - min(ahi, bhi)
        return "far outside the stated range" if gap > INDEX_POINTS else None
    else:
        lo, hi = sorted((ahi, bhi))
    if hi - lo >= INDEX_POINTS and hi >= INDEX_RATIO * max(lo, 0.5):
        return "not the same count"
    return None


def _share_conflict(a: Fact, b: Fact) -> str | None:
    (alo, ahi), (blo, bhi) = a.value, b.value
    gap = max(alo, blo) - min(ahi, bhi)
    return "the intervals do not meet" if gap > SHARE_GAP else None


def _what(key: str) -> str:
    return "proliferation index" if key == "proliferation" else "share of the specimen involved"


def _show(f: Fact) -> str:
    lo, hi = f.value
    if "max" in f.note:
        return f"up to {hi:g}%"
    if "min" in f.note:
        return f"over {lo:g}%"
    return f"{lo:g}%" if lo == hi else f"{lo:g}-{hi:g}%"
