"""Readers of staging and lymph nodes: pTNM / FIGO categories, node counts and status.

A TNM category is read when it carries the pathologic prefix (``pT2a``, ``ypN1``) or stands in a
staging context (``T3N0M0``, "Primary tumor: T2"); legends that list categories are not
assertions (:mod:`pathgls.text.document`) and never reach here. Node counts come as "3/15",
"3 of 15 lymph nodes", "four lymph nodes, no tumor present", checklist lines ("Number examined:
26") and are kept per station ("left pelvic", "" for the regional nodes as a whole).
"""

from __future__ import annotations

import re

from pathgls.text.case.context import Context
from pathgls.text.case.model import Target
from pathgls.text.case.polarity import ABSENT, PRESENT
from pathgls.text.case.subjects import subjects_in
from pathgls.text.case.vocab import NUMBER_WORDS, TENS_WORDS, UNIT_WORDS

_TNM = re.compile(
    r"(?<![A-Za-z0-9])(?P<pre>(?:y|r|yr|ry)?p|(?:y|r)?c)?\s?(?:S(?=N))?(?P<axis>T|N|M)\s?"
    r"(?P<cat>is|[0-4]|X|O(?=\s*M|\b)|(?<=pT)l(?=[a-d]?\b))"  # OCR: "pTlb" is pT1b
    r"(?P<sub>(?:mi|[a-d])(?:\d|\(\w+\))?|\((?:i[+\-]|mol[+\-]|sn|m|\d+)\))?"
    r"(?=[A-Za-z]?\b|[\s,;.:()\-/]|[pcyrTNM]|$)",
)
_STAGE_LABEL = re.compile(
    r"stag|tnm|primary\s+tumou?r|regional\s+lymph|distant\s+metast|\(p?[tnm]\)|\bp?[tnm]\b|"
    r"pathologic|ajcc",
    re.I,
)
_STAGE_CONTEXT = re.compile(r"stag(?:e|ing)|tnm|ajcc|classification", re.I)
_FIGO = re.compile(
    r"figo(?:\s+(?:stage|staging))?\s*(?:is|[:=])?\s*(?P<s>IV|I{1,3})(?P<sub>[A-C]\d?)?(?![A-Za-z])|"
    r"stage\s*(?P<s2>IV|I{1,3})(?P<sub2>[A-C]\d?)?\s*\(?\s*figo|"
    r"figo\s*\([^)\n]{0,30}\)\s*(?:stage\s*)?(?:grouping|stage)\s*[:=]?\s*(?P<s3>IV|I{1,3})"
    r"(?P<sub3>[A-C]\d?)?(?![A-Za-z])",
    re.I,
)
_EDITION = re.compile(r"(?P<e>[5-8])(?:th)?\s+(?:ed\.?|edition)|ajcc\s*(?P<e2>[5-8])", re.I)
_UNITS = UNIT_WORDS
_TENS = TENS_WORDS
#: Counts written as words ("no", "a single", "eighteen"); "twenty-one" is read from _TENS and
#: _UNITS (:data:`_COMPOUND`).
_WORDNUM = {"no": 0, "single": 1, "a": 1, **NUMBER_WORDS}
_COMPOUND = r"(?:" + "|".join(_TENS) + r")[\s\-]+(?:" + "|".join(_UNITS) + r")(?![A-Za-z])"
_N = (
    r"(?:\d{1,3}|"
    + _COMPOUND
    + "|"
    + "|".join(sorted((re.escape(w) for w in _WORDNUM), key=len, reverse=True))
    + r")"
)
_NODE = r"(?:lymph[\s\-]*nodes?|nodes?|LNs?)"
_FRACTION = re.compile(r"(?<![\d./A-Za-z])(?P<p>\d{1,3})\s*/\s*(?P<t>\d{1,3})(?![\d/%A-Za-z]|\.\d)")
_OF = re.compile(
    rf"(?<![A-Za-z\d])(?P<p>{_N})\s+(?:\(\s*\d+\s*\)\s+)?(?:out\s+)?of\s+(?:a\s+total\s+of\s+|the\s+|these\s+)?"
    rf"(?P<t>{_N})\s+"
    rf"(?:\(\s*\d+\s*\)\s+)?(?:\w+\s+){{0,4}}?{_NODE}",
    re.I,
)
#: "15 positive of 23 examined", "2 involved / 14 examined" (in a lymph-node field).
_POSITIVE_OF = re.compile(
    rf"(?<![A-Za-z\d])(?P<p>{_N})\s+(?:positive|involved)\s*(?:,\s*)?(?:out\s+of|of|/)\s*"
    rf"(?P<t>{_N})(?:\s+(?:examined|retrieved|identified|total))?",
    re.I,
)
_COUNT_STATUS = re.compile(
    rf"(?<![A-Za-z\d])(?:(?:all|the)\s+)?(?P<t>{_N})\s+(?:\(\s*\d+\s*\)\s+)?(?:[\w\-]+\s+){{0,3}}?"
    rf"{_NODE}\b(?P<rest>[^.;]{{0,80}})",
    re.I,
)
_NEG_STATUS = re.compile(
    r"negative|no\s+(?:evidence\s+of\s+)?(?:tumou?r|malignancy|carcinoma|metasta\w+|"
    r"neoplasm|cancer)|free\s+of|benign|without\s+(?:evidence\s+of\s+)?(?:tumou?r|"
    r"malignancy|carcinoma|metasta\w+)|uninvolved|not\s+involved|reactive|"
    r"no\s+(?:histopathologic\s+|significant\s+)?abnormalit\w*",
    re.I,
)
_POS_STATUS = re.compile(
    r"positive\s+for|(?:involved|replaced)\s+by|with\s+metasta\w+|metastatic|contain(?:s|ing)?\s+"
    r"(?:metasta\w+|carcinoma|tumou?r)",
    re.I,
)
_FIELD_EXAMINED = re.compile(
    r"(?:number|#|no\.?|total)?\s*(?:of\s+)?(?:lymph\s+)?(?:nodes?\s+)?(?:examined|identified|"
    r"recovered|found|submitted|retrieved|harvested|sampled|total|assessed)",
    re.I,
)
_FIELD_POSITIVE = re.compile(
    r"(?:number|#|no\.?)?\s*(?:of\s+)?(?:lymph\s+)?(?:nodes?\s+)?(?:positive|involved|with\s+"
    r"metasta\w+|metastatic|containing\s+metasta\w+)",
    re.I,
)


def _count(word: str) -> int | None:
    w = " ".join(word.lower().replace("-", " ").split())
    if w.isdigit():
        return int(w)
    if " " in w:
        tens, _, unit = w.partition(" ")
        if tens in _TENS and unit in _UNITS:
            return _TENS[tens] + _UNITS[unit]
    return _WORDNUM.get(w.replace(" ", "-"), _WORDNUM.get(w))


#: "from" before a stage in a sentence that amends the stage.
_SUPERSEDED = re.compile(r"\b(?:from|previously|formerly|originally|instead\s+of)\s*$", re.I)
_AMENDED = re.compile(r"\b(?:amend\w*|revis\w*|chang\w*|correct\w*|upstag\w*|downstag\w*)", re.I)
_IF_CATEGORY = re.compile(r"[a-d]?\s+(?:for|if|when|would|requires?)\b", re.I)


_DENIED_CATEGORY_AFTER = re.compile(
    r"[a-d]?\d?\s*(?:\([^()]{0,30}\)\s*)?(?:is|was|would\s+be|cannot\s+be|can\s*not\s+be)\s+"
    r"(?:not\s+)?(?:not\s+(?:assigned|met|applicable|appropriate|warranted|used|fulfilled|given|"
    r"reached|justified)|excluded|ruled\s+out)\b|[a-d]?\d?\s+(?:criteria\s+)?(?:are\s+|is\s+)?not\s+met\b",
    re.I,
)
_DENIED_CATEGORY_BEFORE = re.compile(
    r"\b(?:not|rather\s+than|instead\s+of|no\s+longer|exclud\w*|rul\w+\s+out|"
    r"(?:does|do|did)\s*n[o']?t\s+(?:meet|reach|qualify\s+(?:as|for)|warrant))\s+(?:an?\s+|the\s+)?$",
    re.I,
)


def read_stage(ctx: Context) -> None:
    """pT / pN / pM categories and FIGO stages ("stage" facts keyed T, N, M, FIGO)."""
    text = ctx.text
    staging_line = bool(ctx.label is not None and _STAGE_LABEL.search(ctx.label_text))
    edition = _EDITION.search(text, ctx.start, ctx.end)
    ed = f"edition={edition.group('e') or edition.group('e2')}" if edition else ""
    found = list(_TNM.finditer(text, ctx.start, ctx.end))
    for m in found:
        pre = (m.group("pre") or "").lower()
        axis, cat = m.group("axis"), m.group("cat")
        neighbours = sum(
            1
            for o in found
            if o is not m and (0 <= o.start() - m.end() <= 6 or 0 <= m.start() - o.end() <= 6)
        )
        context = _STAGE_CONTEXT.search(text, max(ctx.start, m.start() - 40), m.start())
        if cat == "l":
            cat = "1"
        if cat == "O":
            if not neighbours or axis == "T":
                continue
            cat = "0"  # OCR: "T2b NO MX"
        if not ("p" in pre or staging_line or neighbours or context):
            continue
        if pre.endswith("c"):
            continue  # clinical stage: not the pathologist's
        if _SUPERSEDED.search(text, max(ctx.start, m.start() - 12), m.start()) and _AMENDED.search(
            text, ctx.start, ctx.end
        ):
            continue  # "the stage is amended to pT1a from pT1b": the old stage is withdrawn
        if _IF_CATEGORY.match(text, m.end(), min(ctx.end, m.end() + 30)) and text[
            max(ctx.start, m.start() - 3) : m.start()
        ].strip().endswith("("):
            continue  # "(pT4 for seminal vesicle involvement)": what would stage it, a legend
        if _DENIED_CATEGORY_AFTER.match(text, m.end(), ctx.end) or _DENIED_CATEGORY_BEFORE.search(
            text, max(ctx.start, m.start() - 25), m.start()
        ):
            continue  # "so pT4a is not assigned", "rather than pT3": a category set aside
        sub = (m.group("sub") or "").lower()
        value = f"{axis}{cat.lower() if cat == 'is' else cat.upper()}{sub}"
        target = Target("tumour", ctx.part)
        note = " ".join(x for x in (f"prefix={pre}" if pre.strip("p") else "", ed) if x)
        ctx.add("stage", axis, value, m.start(), m.end(), target=target, note=note)
    for m in _FIGO.finditer(text, ctx.start, ctx.end):
        s = (m.group("s") or m.group("s2") or m.group("s3")).upper()
        sub = (m.group("sub") or m.group("sub2") or m.group("sub3") or "").upper()
        if re.search(r"grade", text[max(ctx.start, m.start() - 3) : m.end() + 8], re.I):
            continue
        ctx.add("stage", "FIGO", s + sub, m.start(), m.end(), target=Target("tumour", ctx.part))


def _station(ctx: Context, pos: int) -> tuple[str, bool]:
    """The node station a count at ``pos`` is about, and whether it is part of a set."""
    subject = ctx.subject(pos)
    if subject is not None and subject.kind == "nodes":
        return subject.name, subject.partial or _partial(ctx, subject.start)
    c = ctx.clause(pos)
    near = [s for s in subjects_in(ctx.text, c.start, min(c.end, pos + 80)) if s.kind == "nodes"]
    if near:
        best = min(near, key=lambda s: abs(s.end - pos))
        return best.name, best.partial or _partial(ctx, best.start)
    return "", False


_PARTIAL_BEFORE = re.compile(
    r"\b(?:remaining|other|additional|rest\s+of\s+the)\s+(?:[\w\-]+\s+){0,3}$", re.I
)


def _partial(ctx: Context, pos: int) -> bool:
    """ "the remaining eight lymph nodes": part of a set, not its whole."""
    return _PARTIAL_BEFORE.search(ctx.text, max(ctx.start, pos - 50), pos) is not None


def read_nodes(ctx: Context) -> None:
    """Lymph-node counts (positive / examined) and status per station."""
    text = ctx.text
    lab = ctx.label_text
    node_context = (
        bool(re.search(_NODE, text[ctx.start : ctx.end], re.I))
        or ctx.topic == "nodes"
        or bool(_NODAL_METASTASIS.search(text, ctx.start, ctx.end))
        or bool(
            re.search(
                r"\bp?N[0-3][a-c]?\s*\(\s*\d{1,3}\s*/\s*\d{1,3}\s*\)", text[ctx.start : ctx.end]
            )
        )
    )
    if not node_context:
        return
    seen: list[tuple[int, int]] = []

    def record(
        pos: int, end: int, positive: int | None, total: int | None, *, note: str = ""
    ) -> None:
        if any(a <= pos < b for a, b in seen):
            return
        seen.append((pos, end))
        station, partial = _station(ctx, pos)
        target = Target("nodes", ctx.part, station)
        certain = not partial and ctx.region != "gross"
        note = " ".join(x for x in (note, "partial" if partial else "") if x)
        if total is not None:
            ctx.add("nodes", "examined", total, pos, end, target=target, certain=certain, note=note)
        if positive is not None:
            ctx.add(
                "nodes", "positive", positive, pos, end, target=target, certain=certain, note=note
            )
            status = "positive" if positive > 0 else "negative"
            ctx.add("node_status", "", status, pos, end, target=target, certain=certain, note=note)

    # checklist lines: "Number examined: 26", "Lymph nodes positive: 3"
    if ctx.label is not None and ctx.value_start >= 0:
        value = re.match(
            rf"\s*(?P<n>{_N})\b(?![.,]\d)(?!\s*(?:cm|mm|%))", text[ctx.value_start : ctx.end], re.I
        )
        if value and _count(value.group("n")) is not None:
            n = _count(value.group("n"))
            vs, ve = ctx.value_start + value.start("n"), ctx.value_start + value.end("n")
            if _FIELD_POSITIVE.search(lab):
                record(vs, ve, n, None, note="field")
            elif _FIELD_EXAMINED.search(lab):
                record(vs, ve, None, n, note="field")
    p: int | None  # counts read below (None: not a count)
    t: int | None
    for m in _FRACTION.finditer(text, ctx.start, ctx.end):
        p, t = int(m.group("p")), int(m.group("t"))
        window = text[max(ctx.start, m.start() - 80) : min(ctx.end, m.end() + 40)]
        after_pn = re.search(
            r"\bp?N[0-3][a-c]?\s*\(\s*$", text[max(ctx.start, m.start() - 12) : m.start()]
        )
        if not re.search(_NODE, window, re.I) and ctx.topic != "nodes" and not after_pn:
            continue
        if (
            re.search(r"\d\s*/\s*9\b|score|gleason|nottingham", window, re.I)
            and t <= 10
            and not re.search(_NODE, window, re.I)
        ):
            continue
        ocr_split = re.match(r" (\d)(?!\d)", text[m.end() : m.end() + 3])
        if p > t and ocr_split and p <= int(f"{t}{ocr_split.group(1)}"):
            t = int(f"{t}{ocr_split.group(1)}")  # OCR: "(8/2 1)" is 8/21
        if re.match(r"\s\d{3,}", text[m.end() : m.end() + 6]):
            continue  # "1/3 11311": OCR noise
        around = text[max(ctx.start, m.start() - 80) : m.start()]
        if p == t and _NEG_STATUS.search(around) and not _POS_STATUS.search(around):
            p = 0  # "no histopathologic abnormality (10/10)": ten of ten nodes negative
        if p > t and not re.search(
            _NODE, text[max(ctx.start, m.start() - 25) : min(ctx.end, m.end() + 25)], re.I
        ):
            continue  # "7/3" in OCR noise: more positive than examined, with no node word by it
        if t > 0:
            record(m.start(), m.end(), p, t)
    topic_nodes = ctx.label is not None and re.search(_NODE, ctx.label_text, re.I)
    for m in _POSITIVE_OF.finditer(text, ctx.start, ctx.end) if topic_nodes else ():
        p, t = _count(m.group("p")), _count(m.group("t"))  # "Lymph nodes: 15 positive of 23"
        if p is not None and t is not None:
            record(m.start(), m.end(), p, t)
    for m in _OF.finditer(text, ctx.start, ctx.end):
        p, t = _count(m.group("p")), _count(m.group("t"))
        if p is None or t is None:
            continue
        before = text[max(ctx.start, m.start() - 60) : m.start()]
        after = text[m.end() : min(ctx.end, m.end() + 60)]
        if _NEG_STATUS.search(before + after) and not _POS_STATUS.search(before + after):
            # "negative for tumor in 0 of 12" reads 0 positive; "2 of 12 negative" is a remainder
            if p not in (0, t):
                continue
            p = 0 if p == 0 or p == t else p
        record(m.start(), m.end(), p, t)
    for m in _COUNT_STATUS.finditer(text, ctx.start, ctx.end):
        t = _count(m.group("t"))
        rest = m.group("rest")
        if t is None or t == 0 or t > 120 or m.group("t").lower() in ("a", "no", "none"):
            continue
        if re.match(r"\s+of\s+(?:the|these|those)\b", text[m.end("t") : m.end()], re.I):
            continue  # "one of the sentinel nodes is benign": some of the nodes, not all
        status_neg = _NEG_STATUS.search(rest)
        status_pos = _POS_STATUS.search(rest)
        if status_neg and not status_pos and status_neg.start() < 50:
            pol = ctx.polarity(m.start(), m.end())
            if pol != PRESENT:
                continue
            record(m.start(), m.end(), 0, t)
        elif status_pos is None:
            record(m.start(), m.end(), None, t, note="count")
    # status without counts: "Lymph nodes: negative for carcinoma", "no nodal metastasis"
    for m in re.finditer(rf"(?<![A-Za-z]){_NODE}(?![A-Za-z])", text[ctx.start : ctx.end], re.I):
        pos = ctx.start + m.start()
        if any(a <= pos < b for a, b in seen):
            continue
        c = ctx.clause(pos)
        tail = text[pos : c.end] if not ctx.in_label(pos) else text[ctx.value_start : ctx.end]
        head = text[c.start : pos]
        if re.search(r"\d", tail[:40]):
            continue
        neg = _NEG_STATUS.match(
            re.sub(
                r"^\s*(?:,[^,.;:]{1,30},)?[\W\s]*(?:\w+\s+){0,2}?(?:are|is|were|was|:)?\s*",
                "",
                tail[len(m.group()) :] if not ctx.in_label(pos) else tail,
            )
        ) or re.search(r"\b(?:no|without|negative\s+for)\s+(?:\w+\s+){0,2}$", head, re.I)
        pos_s = re.search(
            r"metastatic\s+(?:\w+\s+){0,2}(?:(?:is|are|was|were)\s+(?:also\s+)?(?:found|seen|"
            r"identified|present|noted)\s+)?(?:in|to|involving)\s+(?:\w+\s+){0,3}$",
            head,
            re.I,
        )
        if neg and not pos_s:
            if re.search(r"remaining|other|additional|rest", head + tail[:30], re.I):
                continue
            if re.search(
                rf"\b(?:{_N}|some|several)\s+of\s+(?:the|these|those)\s+(?:\w+\s+){{0,2}}$",
                head,
                re.I,
            ):
                continue  # "one of the sentinel nodes is benign": some nodes, not all
            station, _ = _station(ctx, pos)
            ctx.add(
                "node_status",
                "",
                "negative",
                pos,
                pos + len(m.group()),
                target=Target("nodes", ctx.part, station),
                certain=ctx.region != "gross",
                note="status",
            )
        elif pos_s and ctx.polarity(c.start + pos_s.start(), pos) == PRESENT:
            station, _ = _station(ctx, pos)
            ctx.add(
                "node_status",
                "",
                "positive",
                pos,
                pos + len(m.group()),
                target=Target("nodes", ctx.part, station),
                certain=ctx.region != "gross",
                note="status",
            )
            seen.append((pos, pos + len(m.group())))
    _nodal_metastasis(ctx, seen)


#: "lymph node metastases (3., 6.)", "nodal metastasis: absent", "no lymph node metastasis".
_NODAL_METASTASIS = re.compile(
    r"(?<![A-Za-z])(?:lymph[\s\-]*nod(?:es?|al)|nodal)[\s\-]+metasta(?:sis|ses|tic\s+disease)\b",
    re.I,
)


_COUNT_AFTER = re.compile(
    rf"\s*[:=]?\s*\(?\s*(?:\d+|{_N})\s*(?:/|of\b|out\b|positive|lymph|nodes?\b|\)|$)", re.I
)
#: "extracapsular extension of lymph node metastasis": a property of the metastasis.
_PROPERTY_OF = re.compile(
    r"\b(?:spread|extension|size|diameter|dimension|focus|foci|number|count|site|extent)\s+of\s+"
    r"(?:the\s+)?(?:\w+\s+)?$",
    re.I,
)


#: "classified as … or regional lymph node metastasis (T3c)": a category's definition.
_CATEGORY_TEXT = re.compile(r"\bor\s+(?:\w+\s+){0,2}$|\bclassified\s+as\b", re.I)


def _nodal_metastasis(ctx: Context, seen: list[tuple[int, int]]) -> None:
    """Node status named as "lymph node metastasis", affirmed or denied (not a count, not the
    label of a count: "Number of lymph node metastases: 3" is read as a count)."""
    text = ctx.text
    for m in _NODAL_METASTASIS.finditer(text, ctx.start, ctx.end):
        if any(a <= m.start() < b for a, b in seen):
            continue
        c = ctx.clause(m.start())
        labelled = ctx.in_label(m.start())
        tail = text[ctx.value_start : ctx.end] if labelled else text[m.end() : c.end]
        if labelled and len(re.findall(r"[A-Za-z]+", ctx.label_text)) > len(m.group().split()) + 1:
            continue  # "Extracapsular spread of N1 lymph node metastases:": another property
        before = text[max(c.start, m.start() - 60) : m.start()]
        if _COUNT_AFTER.match(tail) or _PROPERTY_OF.search(before) or _CATEGORY_TEXT.search(before):
            continue
        if re.search(
            r"\b(?:risk|number|count|rate|status|assess\w*|evaluat\w*)\b",
            text[max(c.start, m.start() - 25) : m.end() + 25],
            re.I,
        ):
            continue
        pol = ctx.polarity(m.start(), m.end())
        if pol not in (PRESENT, ABSENT):
            continue
        station, _ = _station(ctx, m.start())
        ctx.add(
            "node_status",
            "",
            "positive" if pol == PRESENT else "negative",
            m.start(),
            m.end(),
            target=Target("nodes", ctx.part, station),
            certain=ctx.region != "gross",
            note="status",
        )


# --- myometrial depth -------------------------------------------------------------------------

_HALF = re.compile(
    r"(?P<io>inner|outer|superficial|deep)\s+(?:one[\s\-]?)?half|"
    r"(?P<lt>less\s+than|under|below|<)\s*(?:one[\s\-]?half|half|50\s*%|1/2)|"
    r"(?P<gt>more\s+than|greater\s+than|over|above|at\s+least|>=?|≥)\s*(?:one[\s\-]?half|half|"
    r"50\s*%|1/2)|(?P<ge>half\s+or\s+more)|(?P<full>full[\s\-]+thickness|transmural)",
    re.I,
)
_PERCENT = re.compile(r"(?<![\d.])(?P<p>\d{1,3}(?:\.\d)?)\s*%")
_DEPTH_OF = re.compile(
    r"(?P<d>\d+(?:\.\d+)?)\s*(?P<du>mm|cm)\b[^.;]{0,60}?\b(?:of|in|/)\s*(?:a\s+)?(?:the\s+)?"
    r"(?:total\s+)?(?P<t>\d+(?:\.\d+)?)\s*(?P<tu>mm|cm)\b",
    re.I,
)
#: "to a maximal depth of 0.5 cm (2.0 cm total myometrial thickness)".
_DEPTH_PAREN = re.compile(
    r"depth\s+of\s+(?P<d>\d+(?:\.\d+)?)\s*(?P<du>mm|cm)\s*\(\s*(?:of\s+)?(?:a\s+)?(?P<t>\d+(?:\.\d+)?)"
    r"\s*(?P<tu>mm|cm)\s+(?:total\s+)?(?:myometrial|wall)\s+thickness",
    re.I,
)
_DEPTH_WALL = re.compile(
    r"depth[^:\d]{0,30}[:\s]\s*(?P<d>\d+(?:\.\d+)?)\s*(?P<du>mm|cm)\b[^.;\d]{0,40}?"
    r"(?:wall|myometri\w*)\s+thickness[^:\d]{0,10}[:\s]\s*(?P<t>\d+(?:\.\d+)?)\s*(?P<tu>mm|cm)\b",
    re.I,
)
_DEPTH_MM = re.compile(
    r"invad\w*\s+(?:to\s+a\s+depth\s+of\s+)?(?P<d>\d+(?:\.\d+)?)\s*(?P<du>mm|cm)\s+(?:into|of)\s+(?:the\s+)?"
    r"(?:\d+(?:\.\d+)?\s*(?:mm|cm)\s+(?:thick\s+)?)?myometri|"
    r"depth\s+of\s+(?:myometrial\s+)?invasion\s*(?:is|of|measures|:|=)?\s*(?:approximately\s+)?"
    r"(?P<d2>\d+(?:\.\d+)?)\s*(?P<du2>mm|cm)\b",
    re.I,
)
_NO_MYO = re.compile(
    r"(?:no|without|absence\s+of)\s+(?:\w+\s+){0,2}?myometrial\s+invasion|"
    r"(?:confined|limited)\s+to\s+(?:the\s+)?endometri|myometrial\s+invasion\s*:\s*"
    r"(?:none|absent|not\s+identified|no\b)",
    re.I,
)


_DEFINITION_BEFORE = re.compile(
    r"\b(?:would|need(?:s|ed)?|requir\w*|defined\s+as|means?|if|when)\b[^.;()]{0,40}$", re.I
)


def _mm(value: str, unit: str) -> float:
    return float(value) * (10.0 if unit.lower() == "cm" else 1.0)


def read_depth(ctx: Context) -> None:
    """How deep an endometrial carcinoma invades the myometrium, as a fraction of the wall:
    "outer half", "less than 50%", "Percent: 94%" under a depth line, "4 mm of 12 mm",
    "Depth: 1.5 cm Wall thickness: 1.6 cm", "no myometrial invasion" (0)."""
    text = ctx.text
    body = text[ctx.start : ctx.end]
    lab = ctx.label_text
    about = bool(re.search(r"myometri", body, re.I)) or (
        ctx.topic == "depth" and re.search(r"percent|depth|%|invasion|thickness", lab + body, re.I)
    )
    if not about:
        return
    target = Target("tumour", ctx.part)

    def add(value: float, start: int, end: int, note: str = "") -> None:
        c = ctx.clause(start)
        if re.search(
            r"\b(?:initially|originally|previously|at\s+first)\b",
            text[max(ctx.start, start - 40) : start],
            re.I,
        ):
            return  # "the focus initially measured at 50% invasion": a measure later revised
        if _DEFINITION_BEFORE.search(text, max(c.start, start - 50), start):
            return  # "IB would need invasion of one-half or more": a category's definition
        if ctx.gross(start) or re.search(
            r"lympho-?vascular|vascular|lvsi|lymphatic", text[c.start : start], re.I
        ):
            return  # a gross estimate, or how deep vessels are invaded: not the tumour's depth
        if ctx.polarity(start, end) == PRESENT or note == "none":
            ctx.add("depth", "myometrium", round(value, 3), start, end, target=target, note=note)

    m = _NO_MYO.search(text, ctx.start, ctx.end)
    if m:
        add(0.0, m.start(), m.end(), note="none")
        return
    mm = _DEPTH_MM.search(text, ctx.start, ctx.end)
    if mm and ctx.polarity(mm.start(), mm.end()) == PRESENT:
        # "invades 1.2 cm into the myometrium", "maximum depth of myometrial invasion is 4.5 cm"
        value = _mm(mm.group("d") or mm.group("d2"), mm.group("du") or mm.group("du2"))
        ctx.add("depth", "myometrium_mm", value, mm.start(), mm.end(), target=target)
    m = (
        _DEPTH_WALL.search(text, ctx.start, ctx.end)
        or _DEPTH_PAREN.search(text, ctx.start, ctx.end)
        or _DEPTH_OF.search(text, ctx.start, ctx.end)
    )
    if m:
        d, t = _mm(m.group("d"), m.group("du")), _mm(m.group("t"), m.group("tu"))
        if 0 < d <= t * 1.05:
            add(min(1.0, d / t), m.start(), m.end())
            return
    for m in _PERCENT.finditer(text, ctx.start, ctx.end):
        before = text[max(ctx.start, m.start() - 40) : m.start()].lower()
        after = text[m.end() : min(ctx.end, m.end() + 40)].lower()
        if re.search(r"[<>≥≤]|less|more|greater|than", before):
            continue  # "less than 50%": read as a half below
        if re.search(r"endomyometri|surface", before[-50:] + after[:20] + lab):
            continue  # "Anterior endomyometrium: 100%": the surface involved, not a depth
        near = re.search(r"myometri|depth|invasion", before + " " + after)
        if near or ("percent" in lab and ctx.topic == "depth"):
            pct = float(m.group("p"))
            if 0 <= pct <= 100:
                add(pct / 100.0, m.start(), m.end())
                return
    m = _HALF.search(text, ctx.start, ctx.end)
    if m and re.search(r"invasi|invad|extend|infiltrat|depth", lab + body, re.I):
        deep = bool(m.group("gt") or m.group("ge") or m.group("full")) or (
            (m.group("io") or "").lower() in ("outer", "deep")
        )
        add(0.75 if deep else 0.25, m.start(), m.end(), note="half")
