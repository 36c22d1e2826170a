"""Checks on findings, lymph nodes, margins and markers of one target."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pathgls.config import CheckWeights
from pathgls.logic.checks.base import CaseView, Comparison, compared, conflict
from pathgls.text.case import Fact, Target
from pathgls.text.case.vocab import vocabulary


def check_findings(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """An invasion kind, an extent or a finding affirmed and denied of the same target."""
    for slot in ("invasion", "extent", "finding"):
        facts = [f for f in view.facts(slot) if f.value in ("present", "absent")]
        by_key: dict[str, list[Fact]] = {}
        for f in facts:
            by_key.setdefault(f.key, []).append(f)
        for key, group in by_key.items():
            for a, b in view.pairs(group):
                if a.value == b.value:
                    continue
                if view.multiple & {a.target.part, b.target.part} and a.target.kind == "tumour":
                    if slot != "finding":
                        continue
                what = key if slot != "extent" else f"involvement of the {key}"
                yield conflict(
                    "finding",
                    w.finding,
                    a,
                    b,
                    f"{what} {a.value} ('{view.text(a)}') and {b.value} ('{view.text(b)}')",
                )
    yield from _tissue_vs_extent(view, w)


def _tissue_vs_extent(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """ "Adrenal gland: no tumor" against "the tumour invades the adrenal gland"."""
    vocab = vocabulary()
    denied = [f for f in view.facts("presence", kind="tissue") if f.target.name != "background"]
    extents = [f for f in view.facts("extent", kind="tumour") if f.value == "present"]
    for d in denied:
        keys = {k for k, rx in vocab.structures if rx.fullmatch(d.target.name)}
        if not keys:
            continue
        for e in extents:
            if e.key in keys and view.same(Target("tumour", d.target.part), e.target):
                yield conflict(
                    "finding",
                    w.finding,
                    d,
                    e,
                    f"no tumour in the {d.target.name} ('{view.text(d)}') but '{view.text(e)}'",
                )


def check_nodes(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Node counts: positive above examined, two counts for one station, station counts above
    the stated total; node status against counts."""
    counts = [f for f in view.facts("nodes", kind="nodes") if "partial" not in f.note]
    by_stmt: dict[tuple[int, int], dict[str, Fact]] = {}
    for f in counts:
        by_stmt.setdefault((f.statement, f.start), {})[f.key] = f
    for pair in by_stmt.values():
        p, e = pair.get("positive"), pair.get("examined")
        if p is not None and e is not None and p.value > e.value:
            yield conflict(
                "node_counts", w.node_counts, p, e, f"{p.value} positive of {e.value} examined"
            )
    regions = {s.index: s.region for s in view.case.document.statements}
    per_statement: dict[tuple[int, str], int] = {}
    for f in counts:
        per_statement[(f.statement, f.key)] = per_statement.get((f.statement, f.key), 0) + 1
    for key in ("positive", "examined"):
        group = [
            f
            for f in counts
            if f.key == key and per_statement[(f.statement, key)] == 1 and "count" not in f.note
        ]
        for a, b in view.pairs(group):
            # one count per statement, stated in two sections (diagnosis and checklist, say):
            # counts listed within one section are usually of different node groups
            if regions.get(a.statement) == regions.get(b.statement):
                continue
            if "field" in a.note and "field" in b.note:
                continue
            if a.value != b.value:
                yield conflict(
                    "node_counts",
                    w.node_counts,
                    a,
                    b,
                    f"{a.value} and {b.value} {key} nodes for the same nodes",
                )
            else:
                yield compared("node_counts", a, b)
    yield from _total_vs_stations(view, w, counts)
    status = [f for f in view.facts("node_status", kind="nodes") if "partial" not in f.note]
    if view.primaries > 1:
        return  # two primary tumours (a cystoprostatectomy, say): whose nodes is not certain
    for a in status:
        if a.value != "negative":
            continue
        for b in status + [f for f in counts if f.key == "positive"]:
            if a is b or (a.statement, a.start) == (b.statement, b.start):
                continue
            pos_b = b.value == "positive" if b.slot == "node_status" else b.value > 0
            if not pos_b:
                continue
            same_station = bool(a.target.name) and view.same(a.target, b.target)
            all_nodes = _all_nodes(view, a) and _same_scope(view, a.target, b.target)
            if same_station or all_nodes:
                yield conflict(
                    "node_status",
                    w.node_status,
                    a,
                    b,
                    f"nodes negative ('{view.text(a)}') but positive ('{view.text(b)}')",
                )


_ALL_NODES = re.compile(
    r"\ball\b[^.;]{0,40}\bnodes?|\bno\s+(?:regional\s+)?(?:lymph\s+node|nodal)\s+metasta|"
    r"\bnegative\s+(?:regional\s+)?(?:lymph\s+)?nodes|\bnode[\s\-]negative|\bpN0\b",
    re.I,
)


def _all_nodes(view: CaseView, f: Fact) -> bool:
    """Whether a negative node statement covers every node of the case ("all nodes negative",
    "no lymph node metastasis", "Regional lymph nodes: negative")."""
    s = view.case.statement(f.statement)
    text = view.case.sentence(f.statement)
    if re.search(
        r"\bno\s+(?:\w+\s+){0,2}(?:lymph\s+)?nodes?\s+(?:are\s+|were\s+)?(?:identified|"
        r"found|present|seen|recovered)",
        text,
        re.I,
    ):
        return False  # "no lymph nodes are identified": none found, not negative ones
    if _ALL_NODES.search(text):
        return True
    return (
        s.label is not None
        and re.fullmatch(r"\s*(?:regional\s+)?lymph\s+nodes?(?:\s+status)?\s*", s.label, re.I)
        is not None
        and f.target.name == ""
    )


def _same_scope(view: CaseView, a: Target, b: Target) -> bool:
    return view.same(Target("tumour", a.part), Target("tumour", b.part)) or a.part == b.part


def _total_vs_stations(view: CaseView, w: CheckWeights, counts: list[Fact]) -> Iterator[Comparison]:
    """A stated total of positive nodes below what the stations add up to."""
    totals = [f for f in counts if f.key == "positive" and not f.target.name and "field" in f.note]
    stations = [f for f in counts if f.key == "positive" and f.target.name]
    if not totals or not stations:
        return
    best: dict[tuple[str | None, str], int] = {}
    where: dict[tuple[str | None, str], Fact] = {}
    for f in stations:
        k = (f.target.part, f.target.name)
        if int(f.value) >= best.get(k, -1):
            best[k], where[k] = int(f.value), f
    total = sum(best.values())
    for t in totals:
        if int(t.value) < total:
            first = next(iter(where.values()))
            yield conflict(
                "node_counts",
                w.node_counts,
                t,
                first,
                f"{t.value} positive nodes in all, but the stations add up to {total}",
            )


_QUAL_OK = {("", ""), ("invasive", "invasive"), ("in situ", "in situ"), ("", "invasive")}


def check_margins(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """One margin involved and free; all margins free and a named one involved; a distance to a
    margin said to be involved."""
    facts = view.facts("margin", kind="margin")
    for a, b in _margin_pairs(view, facts):
        if a.value == b.value:
            yield compared("margin", a, b)
            continue
        if (a.key, b.key) not in _QUAL_OK and (b.key, a.key) not in _QUAL_OK:
            continue
        if "close" in (a.note + b.note) and {a.value, b.value} == {"free", "involved"}:
            pass
        yield conflict(
            "margin",
            w.margin,
            a,
            b,
            f"margin {a.target.name or '(all)'} {a.value} ('{view.text(a)}') and "
            f"{b.value} ('{view.text(b)}')",
        )
    distances = [f for f in view.facts("margin_distance", kind="margin") if float(f.value) > 0]
    for d in distances:
        for m in facts:
            if m.value != "involved" or m.key == "in situ":
                continue
            if not d.target.name:
                continue  # a distance to an unnamed margin: which one is not certain
            if (d.target.name == m.target.name or d.target.name == "closest") and _part_match(
                view, d.target, m.target
            ):
                yield conflict(
                    "margin",
                    w.margin,
                    d,
                    m,
                    f"{d.value:g} cm to the margin, but the margin is involved",
                )


def _part_match(view: CaseView, a: Target, b: Target) -> bool:
    return view.same(Target("margin", a.part, ""), Target("margin", b.part, ""))


def _margin_pairs(view: CaseView, facts: list[Fact]) -> Iterator[tuple[Fact, Fact]]:
    for i, a in enumerate(facts):
        for b in facts[i + 1 :]:
            if (a.statement, a.start) == (b.statement, b.start) or view.repeated_label(a, b):
                continue
            if view.same(a.target, b.target):
                yield a, b
            elif _part_match(view, a.target, b.target) and (
                (
                    not a.target.name
                    and a.value == "free"
                    and b.value == "involved"
                    and b.target.name not in ("closest",)
                )
                or (
                    not b.target.name
                    and b.value == "free"
                    and a.value == "involved"
                    and a.target.name not in ("closest",)
                )
            ):
                general = a if not a.target.name else b
                if re.search(r"\ball\b|margins", view.case.sentence(general.statement), re.I):
                    yield a, b


def check_markers(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """One marker positive and negative in the same cell population."""
    facts = [
        f
        for f in view.facts("marker")
        if f.value in ("positive", "negative") and "partial" not in f.note
    ]
    for a, b in view.pairs(facts):
        if a.key != b.key:
            continue
        ma = re.search(r"method=(\w+)", a.note)
        mb = re.search(r"method=(\w+)", b.note)
        if ma and mb and ma.group(1) != mb.group(1):
            continue
        if a.value == b.value:
            yield compared("marker", a, b)
            continue
        if "weak" in (a.note + b.note) and "pct" in (a.note + b.note):
            continue
        yield conflict(
            "marker",
            w.marker,
            a,
            b,
            f"{a.key} {a.value} ('{view.text(a)}') and {b.value} ('{view.text(b)}')",
        )
