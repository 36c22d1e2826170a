"""Checks on findings, lymph nodes, margins and markers of one target."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

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
                # the foci of one multifocal cancer may differ in depth, not in whether it
                # invades vessels or nerves
                cues = view.separate if slot == "invasion" else view.multiple
                several = cues & {a.target.part, b.target.part}
                if several and a.target.kind == "tumour" and slot != "finding":
                    continue
                what = key if slot != "extent" else f"involvement of the {key}"
                yield conflict(
                    "finding",
                    w.finding,
                    a,
                    b,
                    f"{what} {a.value} ('{view.text(a)}') and {b.value} ('{view.text(b)}')",
                )
    yield from _invasion_kinds(view, w)
    yield from _tissue_vs_extent(view, w)


#: Kinds of invasion a denial of lymphovascular invasion covers: lymphatic, and in a report
#: that names no venous invasion, "vascular"; large-vessel (venous) invasion of a kidney or
#: liver tumour is staged apart and is no lymphovascular invasion.
_KINDS_OF_LVI = ("lymphatic", "vascular")


def _invasion_kinds(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Lymphovascular invasion denied while lymphatic invasion is affirmed (or vascular, where
    the report never names lymphatic or venous invasion); and, in such a report, a "vascular
    invasion" field denied while lymphovascular (angiolymphatic) invasion is affirmed: there
    "vascular invasion" is the template's name for it."""
    facts = [f for f in view.facts("invasion") if f.value in ("present", "absent")]
    distinguishes = any(f.key in ("lymphatic", "venous") for f in facts)
    cues = view.separate
    for a, b in view.pairs(facts):
        if a.value == b.value or {a.key, b.key} == {"lymphovascular"}:
            continue
        lvi, other = (a, b) if a.key == "lymphovascular" else (b, a)
        if lvi.key != "lymphovascular" or other.key not in _KINDS_OF_LVI:
            continue
        implied = lvi.value == "absent" and (other.key == "lymphatic" or not distinguishes)
        template = (
            lvi.value == "present" and other.key == "vascular" and not distinguishes
        )  # "angiolymphatic invasion is identified" / "Vascular invasion: absent"
        if not (implied or template):
            continue
        if cues & {a.target.part, b.target.part} and a.target.kind == "tumour":
            continue
        yield conflict(
            "finding",
            w.finding,
            a,
            b,
            f"{a.key} invasion {a.value} ('{view.text(a)}') but {b.key} invasion {b.value} "
            f"('{view.text(b)}')",
        )
    # "no lymphatic or vascular invasion" denies lymphovascular invasion as a whole
    denied = [f for f in facts if f.value == "absent"]
    for a in (f for f in denied if f.key == "lymphatic"):
        if not any(g.statement == a.statement and g.key in ("vascular", "venous") for g in denied):
            continue
        for b in facts:
            if b.key != "lymphovascular" or b.value != "present" or b.statement == a.statement:
                continue
            if not view.same(a.target, b.target) or view.other_sample(a, b):
                continue
            if view.separate & {a.target.part, b.target.part} and a.target.kind == "tumour":
                continue
            first, second = sorted((a, b), key=lambda f: f.start)
            yield conflict(
                "finding",
                w.finding,
                first,
                second,
                f"lymphatic and vascular invasion denied ('{view.text(a)}') but lymphovascular "
                f"invasion present ('{view.text(b)}')",
            )


def _tissue_vs_extent(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """ "Adrenal gland: no tumor" against "the tumour invades the adrenal gland"."""
    vocab = vocabulary()
    denied = [f for f in view.facts("presence", kind="tissue") if f.target.name != "background"]
    extents = [f for f in view.facts("extent", kind="tumour") if f.value == "present"]
    for d in denied:
        keys = {k for k, rx in vocab.structures if rx.fullmatch(d.target.name)}
        if not keys:
            continue
        side = _side_before(view, d)
        for e in extents:
            if view.repeated_label(d, e):
                continue
            if side is not None and _side_before(view, e) != side:
                continue  # "RIGHT FALLOPIAN TUBE: negative" says nothing of the left one
            if e.key in keys and view.same(Target("tumour", d.target.part), e.target):
                yield conflict(
                    "finding",
                    w.finding,
                    d,
                    e,
                    f"no tumour in the {d.target.name} ('{view.text(d)}') but '{view.text(e)}'",
                )


def _side_before(view: CaseView, f: Fact) -> str | None:
    """The side its statement names ("RIGHT FALLOPIAN TUBE: ..."), when it names one."""
    doc = view.case.document
    s = doc.statements[f.statement]
    sides = {m.lower() for m in re.findall(r"\b(left|right)\b", doc.text[s.start : s.end], re.I)}
    return sides.pop() if len(sides) == 1 else ("both" if sides else None)


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
    # a checklist's "examined" and "involved" lines, a few lines apart
    fields = [f for f in counts if "field" in f.note]
    for p in (f for f in fields if f.key == "positive"):
        for e in (f for f in fields if f.key == "examined"):
            if (
                abs(p.statement - e.statement) <= 3
                and view.same(p.target, e.target)
                and p.value > e.value
            ):
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
            same_set = key == "positive" and _examined(counts, a) == _examined(counts, b) != 0
            if regions.get(a.statement) == regions.get(b.statement) and not same_set:
                continue
            if "field" in a.note and "field" in b.note and not same_set:
                continue
            named = bool(a.target.name)  # same() made the names equal
            totals = _is_total(view, a) and _is_total(view, b)
            if not (same_set or named or totals):
                continue  # which nodes an unnamed count is of is not certain
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
    # two primary tumours (a cystoprostatectomy, say): whose nodes a statement is about is not
    # certain, unless it speaks of all the nodes
    several = view.primaries > 1
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
            all_nodes = (
                _all_nodes(view, a)
                and _covers(a.target.name, b.target.name)
                and (_same_scope(view, a.target, b.target) or a.target.part is None)
            )
            if _other_counted_group(view, counts, a, b):
                continue
            if (same_station and not several) or all_nodes:
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


def _other_counted_group(view: CaseView, counts: list[Fact], a: Fact, b: Fact) -> bool:
    """Two counted statements of different sizes ("two lymph nodes, negative (0/2)" and
    "carcinoma in 1 of 3 lymph nodes (1/3)"): two groups of nodes, unless one is the total."""
    own = [_examined(counts, f) for f in (a, b)]  # the count each status was read from
    if all(own):
        ea, eb = {own[0]}, {own[1]}
    else:
        ea, eb = (
            {int(g.value) for g in counts if g.key == "examined" and g.statement == f.statement}
            for f in (a, b)
        )
    if len(ea) != 1 or len(eb) != 1 or ea == eb:
        return False
    return not any(_is_total(view, g) for g in counts if g.statement in (a.statement, b.statement))


def _is_total(view: CaseView, f: Fact) -> bool:
    """A count said of all the nodes: a checklist field or a sentence with "total"."""
    if f.target.name:
        return False
    s = view.case.statement(f.statement)
    return (
        "field" in f.note
        or bool(_TOTAL.search(view.case.sentence(f.statement)))
        or (s.label is not None and bool(_TOTAL.search(s.label)))
    )


def _examined(counts: list[Fact], f: Fact) -> int:
    """The examined count stated with a positive count (0 when none)."""
    e = next(
        (
            g
            for g in counts
            if g.key == "examined" and g.statement == f.statement and g.start == f.start
        ),
        None,
    )
    return int(e.value) if e is not None else 0


def _covers(general: str, specific: str) -> bool:
    """ "pelvic" covers "left pelvic"; "" (all nodes) covers every station."""
    return set(general.split()) <= set(specific.split())


def _same_scope(view: CaseView, a: Target, b: Target) -> bool:
    return view.same(Target("tumour", a.part), Target("tumour", b.part)) or a.part == b.part


_SUM = re.compile(r"\b(?:in\s+total|total\s+of|altogether|overall|in\s+all)\b", re.I)
_TOTAL = re.compile(
    r"\b(?:in\s+total|total|overall|altogether|summary|all\s+regional|regional\s+lymph)", re.I
)


def _total_vs_stations(view: CaseView, w: CheckWeights, counts: list[Fact]) -> Iterator[Comparison]:
    """A stated total that the node groups cannot add up to: fewer positive (or examined)
    nodes in all than the groups hold, or — when the examined nodes add up exactly — another
    number of positive ones."""

    def node_part(p: str | None) -> bool:
        part = view.case.parts.get(p) if p is not None else None
        return part is not None and bool(re.search(r"lymph|\bnodes?\b", part.title, re.I))

    by_part = any(node_part(f.target.part) and not f.target.name for f in counts)

    def is_total(f: Fact) -> bool:
        said = (
            view.case.sentence(f.statement) + " " + (view.case.statement(f.statement).label or "")
        )
        if by_part:  # node parts ("C. Lymph nodes, right pelvic"): the case's one count
            alone = sum(g.key == f.key and g.statement == f.statement for g in counts) == 1
            return (
                f.target.part is None
                and alone
                and _is_total(view, f)
                and bool(re.search(r"\btotal\b|\bin\s+all\b|overall|altogether", said, re.I))
            )
        return _is_total(view, f) and bool(_SUM.search(view.case.sentence(f.statement)))

    stations: dict[tuple[str | None, str], dict[str, Fact]] = {}
    for f in counts:
        group = bool(f.target.name) if not by_part else node_part(f.target.part)
        if group and f.key in ("positive", "examined"):
            name = "" if by_part else f.target.name  # a node part counts once
            stations.setdefault((f.target.part, name), {}).setdefault(f.key, f)
    yield from _positive_floor(view, w, counts, stations, is_total)
    complete = [v for v in stations.values() if "positive" in v and "examined" in v]
    if len(complete) < 2 or len(complete) != len(stations):
        return  # a total is only checked against two or more groups that all give both counts
    sum_pos = sum(int(v["positive"].value) for v in complete)
    sum_exam = sum(int(v["examined"].value) for v in complete)
    first = complete[0]["positive"]
    for t in (f for f in counts if is_total(f)):
        summed = sum_pos if t.key == "positive" else sum_exam
        if int(t.value) < summed:
            yield conflict(
                "node_counts",
                w.node_counts,
                t,
                first,
                f"{t.value} {t.key} nodes in all, but the groups add up to {summed}",
            )
        elif t.key == "positive" and int(t.value) != sum_pos:
            exam = next(
                (
                    f
                    for f in counts
                    if f.key == "examined" and f.statement == t.statement and f.start == t.start
                ),
                None,
            )
            if exam is not None and int(exam.value) == sum_exam:
                yield conflict(
                    "node_counts",
                    w.node_counts,
                    t,
                    first,
                    f"{t.value} positive of {sum_exam} nodes in all, but the groups "
                    f"({sum_exam} nodes) hold {sum_pos} positive",
                )


def _positive_floor(
    view: CaseView,
    w: CheckWeights,
    counts: list[Fact],
    stations: dict[tuple[str | None, str], dict[str, Fact]],
    is_total: Callable[[Fact], bool],
) -> Iterator[Comparison]:
    """Positive nodes of distinct named groups are a floor for the stated total, even when
    some groups give no examined count ("two of five level 11 nodes positive", "four of eight
    peribronchial nodes positive", "in total, 5 of 19 nodes": at least 6)."""
    best: dict[str, Fact] = {}
    for (_, name), v in stations.items():
        f = v.get("positive")
        if not name or f is None or not f.certain or int(f.value) <= 0:
            continue
        if name not in best or int(f.value) > int(best[name].value):
            best[name] = f
    names = list(best)
    if len(names) < 2 or any(
        a != b and (set(a.split()) <= set(b.split())) for a in names for b in names
    ):
        return  # one group named twice in other words ("left" and "left level 11")
    floor = sum(int(f.value) for f in best.values())
    for t in (f for f in counts if f.key == "positive" and f.certain and is_total(f)):
        if int(t.value) < floor:
            yield conflict(
                "node_counts",
                w.node_counts,
                t,
                next(iter(best.values())),
                f"{t.value} positive nodes in all, but the named groups hold at least {floor}",
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
        if _margin_scope(view, a) != _margin_scope(view, b) or _other_tumour(view, a, b):
            continue  # "margins of the ureters" / "of the soft tissue"; another tumour's margins
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
    # "Distance to closest margin: 0 cm" is tumour at the margin: against every margin free
    for d in (f for f in view.facts("margin_distance", kind="margin") if float(f.value) == 0):
        for m in facts:
            if (
                m.value == "free"
                and not m.target.name
                and d.statement != m.statement
                and _part_match(view, d.target, m.target)
                and re.search(r"\ball\b|margins", view.case.sentence(m.statement), re.I)
            ):
                yield conflict(
                    "margin", w.margin, d, m, "0 cm to the closest margin, but the margins are free"
                )
    distances = [f for f in view.facts("margin_distance", kind="margin") if float(f.value) > 0]
    for d in distances:
        in_situ = bool(_IN_SITU.search(view.case.sentence(d.statement)))
        for m in facts:
            if m.value != "involved" or (m.key == "in situ") != in_situ:
                continue  # DCIS at the margin, invasive carcinoma 0.5 cm from it: no conflict
            if not d.target.name:
                continue  # a distance to an unnamed margin: which one is not certain
            if (d.target.name == m.target.name or d.target.name == "closest") and (
                _part_match(view, d.target, m.target) or _one_part_names(view, d.target, m.target)
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


def _one_part_names(view: CaseView, a: Target, b: Target) -> bool:
    """A margin named outside any part ("Distance from parenchymal margin: 0.4 cm") and the
    margin of that name in the one part that has it."""
    if not a.name or a.name != b.name or (a.part is None) == (b.part is None):
        return False
    loose = next(
        f
        for f in view.case.facts
        if f.target == (a if a.part is None else b) and f.slot in ("margin", "margin_distance")
    )
    if re.search(
        r"\b(?:specimens?|parts?)\s*#?\s*[A-Z0-9]\b", view.case.sentence(loose.statement), re.I
    ):
        return False  # "In specimen #E the tumor extends to the bronchial margin": another part's
    parts = {
        f.target.part
        for f in view.case.facts
        if f.slot in ("margin", "margin_distance") and f.target.name == a.name
    }
    return len(parts - {None}) == 1


_IN_SITU = re.compile(r"\bDCIS\b|\bin[\s\-]situ\b|\bCIS\b", re.I)


#: What narrows a margin statement: "margins of the ureters", "at the site of extraprostatic
#: extension", "in the region of the apex", "the non-dominant tumour foci … negative margins".
_MARGIN_OF = re.compile(
    r"\bmargins?\s+of\s+(?:the\s+)?(?!(?:the|resection|excision|specimen|partial|radical|total|"
    r"surgical|\w+ectomy|\w+otomy)\b)(\w+)",
    re.I,
)
_MARGIN_AT = re.compile(
    r"\b(?:at\s+the\s+site|in\s+the\s+region|in\s+the\s+area|at\s+the\s+(?:apex|base|bladder\s+neck)|"
    r"non-?dominant|(?:second|other|smaller|additional|secondary)\s+(?:tumou?r|foci|focus|nodule|lesion))",
    re.I,
)


def _margin_scope(view: CaseView, f: Fact) -> frozenset[str]:
    """The qualifiers of a margin statement ("of the ureters", "at the site of …")."""
    sentence = view.case.sentence(f.statement)
    quals = {m.group(1).lower().rstrip("s") for m in _MARGIN_OF.finditer(sentence)}
    quals |= {" ".join(m.group().lower().split()) for m in _MARGIN_AT.finditer(sentence)}
    return frozenset(quals)


def _other_tumour(view: CaseView, a: Fact, b: Fact) -> bool:
    """Two margin statements naming malignancies of incompatible types ("free of prostatic
    adenocarcinoma" beside urothelial carcinoma at the margin): two tumours, two verdicts."""
    from pathgls.text.case import compatible_types
    from pathgls.text.case.vocab import vocabulary

    vocab = vocabulary()

    def named(f: Fact) -> list[str]:
        out = []
        for d in vocab.diagnoses.finditer(view.case.sentence(f.statement)):
            term = vocab.diagnosis(d.group())
            if term is not None and term.attributes.get("behavior") == "malignant":
                out.append(term.concept)
        return out

    na, nb = named(a), named(b)
    return any(compatible_types(x, y) is False for x in na for y in nb)


def _margin_pairs(view: CaseView, facts: list[Fact]) -> Iterator[tuple[Fact, Fact]]:
    for i, a in enumerate(facts):
        for b in facts[i + 1 :]:
            if (a.statement, a.start) == (b.statement, b.start) or view.repeated_label(a, b):
                continue
            if view.same(a.target, b.target) or _one_part_names(view, a.target, b.target):
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


#: Proliferation markers are counted (the amount check), never positive or negative.
_INDEX_MARKERS = frozenset({"ki-67", "ki67", "mib-1", "pcna", "phh3"})
_COEXPRESSION = re.compile(
    r"\bco-?\s?(?:express|stain|localiz)\w*|\bdual(?:ly)?\s+(?:positive|stain)", re.I
)


def check_markers(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """One marker positive and negative in the same cell population."""
    facts = [
        f
        for f in view.facts("marker")
        if f.value in ("positive", "negative") and "partial" not in f.note
    ]
    for a, b in view.pairs(facts):
        if (
            a.key != b.key
            or a.key in _INDEX_MARKERS
            or _COEXPRESSION.search(
                view.case.sentence(a.statement) + " " + view.case.sentence(b.statement)
            )
        ):
            continue  # "no co-expression of CD20 and CD5" says nothing of CD5 alone
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
