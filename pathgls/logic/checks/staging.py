"""Checks of the stage against the report's own size, extent, nodes and metastases.

The cut-offs are AJCC's (and FIGO's for the uterus), kept only where they hold in every edition
the reports use (6th to 8th): a pT1 lung carcinoma is at most 3 cm in all three, while a pT2
lung carcinoma may be any size above 3 cm in the 6th and is bounded in the 7th and 8th, so only
the former is checked. An organ the report does not name certainly gets no stage check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from pathgls.config import CheckWeights
from pathgls.logic.checks.base import CaseView, Comparison, compared, conflict
from pathgls.text.case import Fact
from pathgls.text.vocab_files import bound, load_table


def _extent(rule: str) -> MappingProxyType[str, Mapping[str, tuple[str, ...]]]:
    """organ → pT category → structures, for one rule of ``stage_extent.tsv`` (file order)."""
    by_organ = load_table("stage_extent").rows_by("organ", "category", "structure", rule=rule)
    return MappingProxyType(
        {
            organ: MappingProxyType(
                {cat: tuple(st for c, st in rows if c == cat) for cat, _ in rows}
            )
            for organ, rows in by_organ.items()
        }
    )


#: organ → pT category prefix → (lower bound exclusive, upper bound inclusive) in cm, None: open.
SIZE_LIMITS: MappingProxyType[str, Mapping[str, tuple[float | None, float | None]]] = (
    MappingProxyType(
        {
            organ: MappingProxyType(
                {cat: (bound(lo, float), bound(hi, float)) for cat, lo, hi in rows}
            )
            for organ, rows in load_table("stage_sizes")
            .rows_by("organ", "category", "above_cm", "up_to_cm")
            .items()
        }
    )
)

#: organ → pT category prefix → structures that category rules out when involved.
EXTENT_RULES_OUT: MappingProxyType[str, Mapping[str, tuple[str, ...]]] = _extent("rules_out")

#: organ → pT category prefix → structures (one of which) that category requires.
EXTENT_REQUIRES: MappingProxyType[str, Mapping[str, tuple[str, ...]]] = _extent("requires")

#: organ → pN category → (min, max) positive regional nodes; only organs where counts define N.
NODE_COUNTS: MappingProxyType[str, Mapping[str, tuple[int, int | None]]] = MappingProxyType(
    {
        organ: MappingProxyType({cat: (int(lo), bound(hi, int)) for cat, lo, hi in rows})
        for organ, rows in load_table("stage_nodes")
        .rows_by("organ", "category", "min", "max")
        .items()
    }
)
_ITC = re.compile(r"isolated\s+tumou?r\s+cells|\(i\+\)|i\+|micro-?\s?metasta|mi\b", re.I)


def _category(f: Fact) -> str:
    return str(f.value)


def _match(cat: str, table: Mapping[str, object]) -> str | None:
    """The longest key of ``table`` that ``cat`` starts with (T1b → T1b, T1 → T1)."""
    best = None
    for k in table:
        if cat.startswith(k) and (best is None or len(k) > len(best)):
            best = k
    return best


def check_stage(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """pT against size and extent; pN against node counts; FIGO against depth and nodes; pM0
    against a metastasis in a distant organ's specimen."""
    t_facts = [f for f in view.facts("stage", kind="tumour", key="T") if "prefix=y" not in f.note]
    sizes = view.facts("size", kind="tumour")
    extents = view.facts("extent", kind="tumour")
    for t in t_facts:
        organ = view.organ(t)
        if organ is None or view.ambiguous(t.target) or not view.carcinoma(t.target):
            continue
        if t.target.part in view.multiple or view.primaries > 1 or _several_t(view, t):
            continue
        cat = _category(t)
        limits = SIZE_LIMITS.get(organ, {})
        key = _match(cat, limits)
        if key is not None:
            lo, hi = limits[key]
            for s in sizes:
                if not view.same(t.target, s.target) or s.target.part in view.multiple:
                    continue
                v = float(s.value)
                if (hi is not None and v > hi + 0.05) or (lo is not None and v <= lo - 0.05):
                    yield conflict(
                        "stage_size",
                        w.stage_size,
                        t,
                        s,
                        f"p{cat} ({organ}) allows {_range(lo, hi)}, the tumour measures {v:g} cm",
                    )
                else:
                    yield compared("stage_size", t, s)
        rules = EXTENT_RULES_OUT.get(organ, {})
        key = _match(cat, rules)
        if key is not None:
            for e in extents:
                if e.key in rules[key] and e.value == "present" and view.same(t.target, e.target):
                    yield conflict(
                        "stage_extent",
                        w.stage_extent,
                        t,
                        e,
                        f"p{cat} ({organ}) rules out involvement of the {e.key}",
                    )
        needs = EXTENT_REQUIRES.get(organ, {})
        key = _match(cat, needs)
        if key is not None:
            same = [e for e in extents if e.key in needs[key] and view.same(t.target, e.target)]
            if (
                same
                and all(e.value == "absent" for e in same)
                and not any(e.value == "present" for e in same)
            ):
                yield conflict(
                    "stage_extent",
                    w.stage_extent,
                    t,
                    same[0],
                    f"p{cat} ({organ}) needs involvement of the {' or '.join(needs[key])}",
                )
    yield from _restaged(view, w)
    yield from _depth(view, w)
    yield from check_depths(view, w)
    yield from _nodes(view, w)
    yield from _distant(view, w)


def _restaged(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """One tumour given two T (or N) categories of different rank ("pT2 pN0" in the summary,
    "pT3" in the diagnosis), both pathological, of one edition, in statements that stage one
    tumour each; subdivisions (T3 / T3a) and unknowns (TX, Tis against nothing) agree."""
    for axis in ("T", "N"):
        facts = [
            f
            for f in view.facts("stage", kind="tumour", key=axis)
            if "prefix=y" not in f.note
            and "prefix=r" not in f.note
            and re.match(rf"{axis}[0-4]", str(f.value))
            and not _several(view, f)
            and not _aside(view, f)
        ]
        if _several_staged(view, facts) or _RESTAGING.search(view.case.document.text):
            continue
        for a, b in view.pairs(facts):
            if a.statement == b.statement or view.primaries > 1:
                continue
            oa, ob = view.organs_named(a), view.organs_named(b)
            if oa and ob and not oa & ob:
                continue  # "AJCC staging (bladder): pT2" / "(prostate): pT3b": two tumours
            if {a.target.part, b.target.part} & view.separate:
                continue  # separate tumours (a multifocal one still has one pT)
            ea, eb = (re.search(r"edition=(\d+)", f.note) for f in (a, b))
            if ea and eb and ea.group(1) != eb.group(1):
                continue
            if str(a.value)[:2] != str(b.value)[:2]:
                yield conflict(
                    "stage_repeat",
                    w.stage_repeat,
                    a,
                    b,
                    f"the tumour is p{a.value} in one place and p{b.value} in another",
                )
            else:
                yield compared("stage_repeat", a, b)


#: "The staging is therefore changed to a pT3", "upstaged to pT3a": the report carries the
#: category it replaced as well, so two categories are the old and the new one.
_RESTAGING = re.compile(
    r"\b(?:stag\w*|category|classification|p[TN])\b[^.;]{0,40}?\b(?:is|was|has\s+been|be)\s+"
    r"(?:therefore\s+|now\s+|thus\s+|hence\s+)?(?:changed|amended|revised|corrected|upgraded|"
    r"downgraded)\s+to\b|\b(?:up|down)[\s\-]?stag(?:ed|ing)\s+to\b",
    re.I,
)


def _several_staged(view: CaseView, facts: list[Fact]) -> bool:
    """A report that stages several tumours: three or more categories, or one staging label
    twice ("Final TNM: pT3b …" and, later, "Final TNM: pT2a …": two checklists)."""
    if len({str(f.value) for f in facts}) >= 3:
        return True
    labels = [
        " ".join(lab.lower().split())
        for f in facts
        if (lab := view.case.statement(f.statement).label) is not None
    ]
    texts = [view.case.sentence(f.statement).split("\n")[0].strip().lower() for f in facts]
    return len(set(labels)) < len(labels) or len(set(texts)) < len(texts)


def _aside(view: CaseView, f: Fact) -> bool:
    """A category in a field's name ("Mediastinal (N2) nodes involved:") or in parentheses after
    a finding ("Visceral pleural involvement: Present (pT2)"): what that finding would stage."""
    s = view.case.statement(f.statement)
    text = view.case.document.text
    if s.label is not None and f.start < s.value_start:
        return True
    before = text[s.start : f.start]
    return before.count("(") > before.count(")")


def _several(view: CaseView, f: Fact) -> bool:
    """A statement giving one axis twice ("pT2 (largest tumor), pT1 (smallest)")."""
    return (
        sum(
            1
            for g in view.case.facts
            if g.slot == "stage" and g.key == f.key and g.statement == f.statement
        )
        > 1
    )


def _several_t(view: CaseView, t: Fact) -> bool:
    """ "pT2 (largest tumor), pT1 (smallest tumor)": a statement staging several tumours."""
    return (
        sum(
            1
            for f in view.case.facts
            if f.slot == "stage" and f.key == "T" and f.statement == t.statement
        )
        > 1
    )


def _range(lo: float | None, hi: float | None) -> str:
    if lo is None:
        return f"at most {hi:g} cm"
    if hi is None:
        return f"more than {lo:g} cm"
    return f"more than {lo:g} and at most {hi:g} cm"


_OLD_UTERUS = re.compile(r"\b(?:6th|sixth|5th|fifth)\s+ed|ajcc\s*(?:6|5)\b|figo\W{0,3}1988", re.I)
_NEW_UTERUS = re.compile(
    r"\b(?:7th|seventh|8th|eighth)\s+ed|ajcc\s*(?:7|8)\b|figo\W{0,3}(?:2008|2009|20[12]\d)",
    re.I,
)


def _uterus_scheme(view: CaseView, s: Fact) -> str | None:
    """Which endometrial staging the report uses: "old" (FIGO 1988 / AJCC 6th: IB below half
    the myometrium, IC at least half) or "new" (FIGO 2009 / AJCC 7th+: IA below half, IB at
    least half); None when it does not say."""
    edition = re.search(r"edition=(\d)", s.note)
    if edition:
        return "old" if int(edition.group(1)) <= 6 else "new"
    text = view.case.document.text
    old, new = bool(_OLD_UTERUS.search(text)), bool(_NEW_UTERUS.search(text))
    if old != new:
        return "old" if old else "new"
    if any(str(f.value).startswith(("T1c", "IC")) for f in view.facts("stage", kind="tumour")):
        return "old"  # only the old scheme has a stage IC
    return None


def check_depths(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Two depths of myometrial invasion of one tumour: fractions on either side of half the
    wall, or depths in mm beyond rounding and measuring."""
    depths = view.facts("depth", kind="tumour")
    fractions = [f for f in depths if f.key == "myometrium"]
    for a, b in view.pairs(fractions):
        lo, hi = sorted((float(a.value), float(b.value)))
        if lo < 0.45 and hi >= 0.55 and hi - lo >= 0.2:
            yield conflict(
                "stage_extent",
                w.stage_extent,
                a,
                b,
                f"myometrial invasion of {lo:.0%} and of {hi:.0%} (either side of half the wall)",
            )
        else:
            yield compared("stage_extent", a, b)
    mms = [f for f in depths if f.key == "myometrium_mm"]
    for a, b in view.pairs(mms):
        lo, hi = sorted((float(a.value), float(b.value)))
        if lo > 0 and hi / lo >= 1.5 and hi - lo >= 3.0:
            yield conflict(
                "stage_extent",
                w.stage_extent,
                a,
                b,
                f"myometrial invasion {lo:g} mm deep and {hi:g} mm deep",
            )
        else:
            yield compared("stage_extent", a, b)


def _depth(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Endometrial carcinoma: the stage against how deep the tumour invades the myometrium.
    IA / pT1a is below half in both schemes (none at all in the old one); IC / pT1c (old) at
    least half; IB / pT1b is at least half in the new scheme and below half in the old one, so
    it is checked only when the report says which it uses."""
    depths = [f for f in view.facts("depth", kind="tumour") if f.key == "myometrium"]
    stages = [f for f in view.facts("stage", kind="tumour") if f.key in ("T", "FIGO")]
    for s in stages:
        if view.organ(s) != "uterus":
            continue
        v = str(s.value)
        shallow = v.startswith(("T1a", "IA"))
        deep = v.startswith(("T1c", "IC"))
        if v.startswith(("T1b", "IB")):
            scheme = _uterus_scheme(view, s)
            if scheme is None:
                continue
            deep, shallow = scheme == "new", scheme == "old"
        if not (deep or shallow):
            continue
        for d in depths:
            if not view.same(s.target, d.target):
                continue
            frac = float(d.value)
            # a depth at the boundary itself ("measured at 50%") is not set against the stage
            if (shallow and frac >= 0.55) or (deep and frac < 0.45):
                yield conflict(
                    "stage_extent",
                    w.stage_extent,
                    s,
                    d,
                    f"{v} against myometrial invasion of {frac:.0%}",
                )
            else:
                yield compared("stage_extent", s, d)


#: Organs whose metastasis is distant (M1) for a primary elsewhere; the peritoneum and omentum
#: are regional for gynaecological primaries (FIGO III), not distant.
_DISTANT_WORDS = load_table("organ_words").alternations("organ", "pattern", list="distant")
_DISTANT = {organ: re.compile(words, re.I) for organ, words in _DISTANT_WORDS.items()}
_REGIONAL_PERITONEUM = frozenset({"ovary", "uterus", "fallopian tube", "cervix"})


def _distant(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """pM0 against a metastasis in a distant organ's specimen ("C. Liver, left lobe nodule,
    excisional biopsy: metastatic adenocarcinoma")."""
    m0 = [
        f
        for f in view.facts("stage", kind="tumour", key="M")
        if str(f.value).startswith("M0") and f.certain and "prefix=c" not in f.note
    ]
    if not m0 or view.primaries > 1:
        return
    for m in m0:
        organ = view.organ(m)
        for f in view.facts("metastasis"):
            if not f.certain or f.target.part is None:
                continue
            title = view.case.parts[f.target.part].title if f.target.part in view.case.parts else ""
            site = next((k for k, rx in _DISTANT.items() if rx.search(title)), None)
            if site is None or site == organ or re.search(r"lymph|\bnodes?\b", title, re.I):
                continue
            if site == "peritoneum" and organ in _REGIONAL_PERITONEUM:
                continue
            yield conflict(
                "stage_metastasis",
                w.stage_nodes,
                m,
                f,
                f"p{m.value} but a metastasis in the {site} ('{title.strip()[:60]}')",
            )


_OTHER_ORGAN_STAGE = re.compile(
    r"\(\s*(?:for\s+)?(?P<o>prostate|bladder|kidney|lung|breast|colon|uterus|ovary|cervix)\b", re.I
)


def _node_evidence(view: CaseView) -> tuple[list[Fact], list[Fact], Fact | None]:
    """Positive counts > 0 (certain, whole groups), zero counts, and an explicit total or an
    all-negative statement ("all nodes negative", "Regional lymph nodes: 0/14")."""
    counts = [
        f for f in view.facts("nodes", kind="nodes", key="positive") if "partial" not in f.note
    ]
    status = view.facts("node_status", kind="nodes")
    if any(_ITC.search(view.case.sentence(f.statement)) for f in counts + status):
        return [], [], None
    positive = [f for f in counts if int(f.value) > 0]
    positive += [f for f in status if f.value == "positive" and "status" in f.note]
    zeros = [f for f in counts if int(f.value) == 0]
    total = next(
        (
            f
            for f in counts
            if not f.target.name
            and ("field" in f.note or _TOTAL_WORDS.search(view.case.sentence(f.statement)))
        ),
        None,
    )
    if total is None:
        total = next(
            (
                f
                for f in status
                if f.value == "negative"
                and not f.target.name
                and _ALL_NEG.search(view.case.sentence(f.statement))
            ),
            None,
        )
    return positive, zeros, total


def _every_node_part_negative(view: CaseView, zeros: list[Fact]) -> Fact | None:
    """A zero count of every part that holds lymph nodes ("A. Right pelvic lymph nodes: 0/10",
    "B. Left pelvic lymph nodes: 0/5"), when the report has such parts: one of those counts."""
    node_parts = {
        k
        for k, p in view.case.parts.items()
        if k is not None and re.search(r"lymph|\bnodes?\b", p.title, re.I)
    }
    if not node_parts:
        return None
    zero_parts = {f.target.part for f in zeros}
    if not node_parts <= zero_parts:
        return None
    return next(f for f in zeros if f.target.part in node_parts)


_TOTAL_WORDS = re.compile(r"\b(?:total|regional|all|overall)\b", re.I)
_ALL_NEG = re.compile(r"\ball\b|\bno\s+(?:regional\s+)?(?:lymph\s+node|nodal)\s+metasta", re.I)


def _nodes(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """pN0 against a positive node; pN1+ against nodes all negative; pN against the count."""
    n_facts = view.facts("stage", kind="tumour", key="N")
    if not n_facts or view.primaries > 1:
        return
    positive, _zeros, total = _node_evidence(view)
    for n in n_facts:
        cat = str(n.value)
        if cat.startswith("NX") or _ITC.search(cat) or "prefix=y" in n.note:
            continue
        other = _OTHER_ORGAN_STAGE.search(view.case.sentence(n.statement))
        organ = view.organ(n)
        if other and organ and other.group("o").lower() not in organ:
            continue  # "AJCC staging (prostate)" in a cystectomy: another tumour's stage
        if cat.startswith("N0"):
            if positive:
                ev = positive[0]
                yield conflict(
                    "stage_nodes",
                    w.stage_nodes,
                    n,
                    ev,
                    f"p{cat} but positive lymph nodes ('{view.text(ev)}')",
                )
            continue
        if total is not None and total.slot == "nodes" and int(total.value) == 0 and not positive:
            yield conflict(
                "stage_nodes", w.stage_nodes, n, total, f"p{cat} with no positive lymph node"
            )
            continue
        every = _every_node_part_negative(view, _zeros)
        if total is None and every is not None and not positive:
            yield conflict(
                "stage_nodes",
                w.stage_nodes,
                n,
                every,
                f"p{cat} but every lymph node part is negative ('{view.text(every)}')",
            )
            continue
        if total is None or total.slot != "nodes":
            continue
        count = int(total.value)
        table = NODE_COUNTS.get(organ or "", {})
        key = _match(cat, table)
        if key is not None and key == cat:
            lo, hi = table[key]
            if count < lo or (hi is not None and count > hi):
                yield conflict(
                    "stage_nodes",
                    w.stage_nodes,
                    n,
                    total,
                    f"p{cat} ({organ}) means {lo}{'-' + str(hi) if hi else '+'} positive nodes, "
                    f"the report counts {count}",
                )
                continue
        yield compared("stage_nodes", n, total)
