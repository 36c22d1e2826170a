"""Readers of margins and IHC markers.

Margins: each named margin ("bronchial", "deep", "" for all margins, "closest") gets a status
(involved / free, keyed by what involves it: "" any, "invasive", "in situ") and a distance when
one is given. Markers: a result (positive / negative / equivocal) per canonical marker (the
lexicon's synonyms: c-Kit = CD117, ER = estrogen receptor) and per population (the tumour
cells, or lymphocytes, background, a control …), with the method for HER2 (IHC score, ISH).
"""

from __future__ import annotations

import re

from pathgls.text.case.context import Context
from pathgls.text.case.model import Target
from pathgls.text.case.polarity import ABSENT, PRESENT, UNCERTAIN
from pathgls.text.case.subjects import Subject, clean_name, subjects_in
from pathgls.text.case.vocab import vocabulary

_MARGIN_WORD = re.compile(
    r"(?<![A-Za-z])(?:margins?|resection\s+lines?|inked\s+surfaces?|ink)(?![A-Za-z])", re.I
)
_INVOLVED = re.compile(
    r"(?<![A-Za-z])(?:positive|involved|(?:tumou?r|carcinoma)\s+(?:is\s+)?(?:present\s+)?at|"
    r"extends?\s+to|extending\s+to|reaches|abuts|transected|present\s+at|at\s+(?:the\s+)?ink|"
    r"on\s+ink|touches|into\s+(?:the\s+)?(?:inked\s+)?margin)(?![A-Za-z])",
    re.I,
)
_FREE = re.compile(
    r"(?<![A-Za-z])(?:negative|free|clear|uninvolved|not\s+involved|no\s+(?:tumou?r|"
    r"carcinoma|malignancy|neoplasm)|widely\s+free|close)(?![A-Za-z])",
    re.I,
)
_QUALIFIER = re.compile(
    r"(?P<insitu>in\s+situ|(?<![A-Za-z])(?:CIS|DCIS|LCIS|AIS|PIN|HGPIN|dysplasia|atypia|"
    r"intraepithelial))|(?P<inv>invasive|infiltrating)",
    re.I,
)
_DISTANCE = re.compile(
    r"(?P<v>\d{1,2}(?:\.\d{1,2})?|<\s*\d(?:\.\d)?)\s*(?P<u>cm|mm)\b(?:\s*\([^)]{0,20}\))?\s*"
    r"(?:from|to|away\s+from|of|clear\s+of)\s+(?:the\s+)?(?:nearest\s+|closest\s+)?"
    r"(?:[\w\-/]+\s+){0,3}?(?:margin|resection\s+line|inked\s+surface|ink)",
    re.I,
)
_CLOSEST_IS = re.compile(
    r"(?:closest|nearest)\s+(?:[\w\-]+\s+){0,2}?margin\s+(?:is|was|measures|of|at)\s+"
    r"(?:approximately\s+|about\s+)?(?P<v>\d{1,2}(?:\.\d{1,2})?)\s*(?P<u>cm|mm)\b",
    re.I,
)
_DISTANCE_FIELD = re.compile(r"distance|clearance|closest|nearest", re.I)


def _qualifier(text: str, a: int, b: int) -> str:
    m = _QUALIFIER.search(text, a, b)
    if m is None:
        return ""
    return "in situ" if m.group("insitu") else "invasive"


def read_margins(ctx: Context) -> None:
    """Margin status and distance ("margin" and "margin_distance" facts)."""
    text = ctx.text
    if ctx.topic == "margin" and ctx.label is not None and not _MARGIN_WORD.search(ctx.label_text):
        value = text[ctx.value_start : ctx.end]
        inv, free = _INVOLVED.match(value.strip()), _FREE.match(value.strip())
        name = clean_name(ctx.label_text)
        if name and (inv or free) and not _hedged(value):
            ctx.add(
                "margin",
                _qualifier(text, ctx.value_start, ctx.end),
                "involved" if inv else "free",
                ctx.label[0],
                ctx.label[1],
                target=Target("margin", ctx.part, name),
            )
        return
    mentions = [sm for sm in subjects_in(text, ctx.start, ctx.end) if sm.kind == "margin"]
    for i, sm in enumerate(mentions):
        if sm.partial or (ctx.in_label(sm.start) and _names_other_margins(ctx, mentions)):
            continue
        c = ctx.clause(sm.start)
        nxt = next((o.start for o in mentions[i + 1 :] if o.start >= sm.end), c.end)
        prev = max((o.end for o in mentions[:i] if o.end <= sm.start), default=c.start)
        if ctx.in_label(sm.start):
            after = text[ctx.value_start : ctx.end]
        else:
            after = text[sm.end : min(c.end, nxt)]
        before = text[max(c.start, prev) : sm.start]
        if _DISTANCE_FIELD.search(ctx.label_text) or re.search(
            r"\b(?:from|to\s+within|within)\s+(?:the\s+)?$", before[-20:], re.I
        ):
            continue  # a distance to the margin, read below; no status
        status = _status_after(after) or _status_before(before)
        if status is None:
            continue
        if (
            ctx.polarity(sm.start, sm.end) == UNCERTAIN
            or _hedged(after[:60])
            or _hedged(before[-40:])
        ):
            certain = False
        else:
            certain = not ctx.gross(sm.start)
        qual = _qualifier(text, c.start, c.end)
        close = "close" in (after[:40] + before[-20:]).lower()
        target = Target("margin", ctx.part, sm.name)
        ctx.add(
            "margin",
            qual,
            status,
            sm.start,
            sm.end,
            target=target,
            certain=certain,
            note="close" if close else "",
        )
    for m in re.finditer(
        r"(?<![A-Za-z])(?:at|on|to)\s+(?:the\s+)?ink(?:ed\s+surface)?\b",
        text[ctx.start : ctx.end],
        re.I,
    ):
        pos = ctx.start + m.start()
        if any(sm.start <= pos < sm.end + 5 for sm in mentions):
            continue
        pol = ctx.polarity(pos, pos + len(m.group()))
        if pol == UNCERTAIN:
            continue
        ctx.add(
            "margin",
            "",
            "involved" if pol == PRESENT else "free",
            pos,
            pos + len(m.group()),
            target=Target("margin", ctx.part, ""),
            certain=ctx.region != "gross",
        )
    for m in _DISTANCE.finditer(text, ctx.start, ctx.end):
        v = m.group("v").replace("<", "").strip()
        value = float(v) / (10 if m.group("u").lower() == "mm" else 1)
        inside = [o for o in subjects_in(text, m.start(), m.end()) if o.kind == "margin"]
        name = inside[-1].name if inside else ""
        if not name and re.search(r"closest|nearest", m.group(), re.I):
            name = "closest"
        ctx.add(
            "margin_distance",
            "",
            round(value, 3),
            m.start(),
            m.end(),
            target=Target("margin", ctx.part, name),
        )
    for m in _CLOSEST_IS.finditer(text, ctx.start, ctx.end):
        value = float(m.group("v")) / (10 if m.group("u").lower() == "mm" else 1)
        ctx.add("margin_distance", "", round(value, 3), m.start(), m.end(),
                target=Target("margin", ctx.part, "closest"))
    if (
        ctx.label is not None
        and _DISTANCE_FIELD.search(ctx.label_text)
        and "margin" in ctx.label_text
    ):
        vm = re.match(
            r"\s*(?P<v>\d{1,2}(?:\.\d{1,2})?)\s*(?P<u>cm|mm)\b",
            text[ctx.value_start : ctx.end],
            re.I,
        )
        if vm:
            value = float(vm.group("v")) / (10 if vm.group("u").lower() == "mm" else 1)
            names = [s for s in subjects_in(text, ctx.label[0], ctx.label[1]) if s.kind == "margin"]
            name = names[-1].name if names else "closest"
            ctx.add(
                "margin_distance",
                "",
                round(value, 3),
                ctx.value_start,
                ctx.end,
                target=Target("margin", ctx.part, name),
            )


_AFTER_INVOLVED = re.compile(
    r"\s*(?:\([^)]{0,40}\)\s*)?(?:of\s+(?:resection|excision)\s+|\(?\w+\)?\s+(?=are\b|is\b))?"
    r"(?::|-|,)?\s*(?:is\s+|are\s+|was\s+|were\s+)?(?:focally\s+|"
    r"extensively\s+|microscopically\s+)?(?P<w>positive|involved|present|with\s+(?:tumou?r|"
    r"carcinoma)|tumou?r\s+present|not\s+involved|uninvolved|negative|free|clear|close|widely\s+"
    r"free|no\s+(?:tumou?r|carcinoma|malignancy|neoplasm|dysplasia)|without\s+(?:tumou?r|"
    r"carcinoma)|(?:is|are)\s+not\s+involved)",
    re.I,
)
_BEFORE_INVOLVED = re.compile(
    r"(?P<neg>\b(?:no|not|without|never|nor)\b[^.;]{0,40})?(?:present|seen|identified|found|"
    r"tumou?r|carcinoma|cis|dcis|involv\w*|extend\w*|extension|reach\w*|abut\w*|transect\w*|"
    r"touch\w*|positive)\s+(?:\w+\s+){0,2}?(?:at|to|into|on|involving|for|of)?\s*(?:the\s+)?"
    r"(?:inked\s+)?$",
    re.I,
)
_BEFORE_FREE = re.compile(
    r"(?:free|clear|away|distant|negative|uninvolved|not\s+involv\w*|close)\s+(?:of|from|to)?\s*"
    r"(?:the\s+)?(?:inked\s+)?$",
    re.I,
)


def _status_after(after: str) -> str | None:
    m = _AFTER_INVOLVED.match(after)
    if not m:
        return None
    w = m.group("w").lower()
    if w.startswith(("positive", "involved", "present", "with", "tumo")):
        return "involved"
    return "free"


def _status_before(before: str) -> str | None:
    b = before[-90:]
    if _BEFORE_FREE.search(b):
        return "free"
    m = _BEFORE_INVOLVED.search(b)
    if m:
        return "free" if m.group("neg") else "involved"
    return None


def _names_other_margins(ctx: Context, mentions: list[Subject]) -> bool:
    """A label "Surgical margins:" whose value names margins itself carries no status."""
    return any(o.start >= ctx.value_start for o in mentions)


def _hedged(s: str) -> bool:
    return bool(
        re.search(
            r"\b(?:cannot\s+be\s+(?:assessed|evaluated|determined)|indeterminate|"
            r"equivocal|possibl[ey]|suspicious|questionable)\b",
            s,
            re.I,
        )
    )


# --- markers ----------------------------------------------------------------------------------

_RESULT_AFTER = re.compile(
    r"\s*(?:\([^)]{0,30}\)\s*)?(?:antibody\s+|protein\s+|immunostain\s+|stain(?:s|ing)?\s+|"
    r"expression\s+|immunoreactivity\s+|status\s+|receptors?\s+|score\s+)?"
    r"(?:(?:is|are|was|were|shows?|showed|demonstrates?)\s+)?(?:[:=\-]\s*)?"
    r"(?:(?:strongly|diffusely|focally|weakly|patchy|strong|diffuse|focal|weak)\s+(?:and\s+\w+\s+)?)?"
    r"(?P<r>positive|negative|reactive|non-?reactive|unreactive|"
    r"(?:is\s+|are\s+)?not\s+(?:expressed|detected|identified|present|reactive)|expressed|"
    r"retained|intact|preserved|normal(?:\s+expression)?|lost|loss|absent|present|equivocal|"
    r"indeterminate|(?:score\s*)?[0-3]\s*\+|(?:score\s*)?0\b|\+(?![\d])|\(\s*\+\s*\)|"
    r"-(?=\s|,|;|\)|$)|\(\s*-\s*\)|amplified|not\s+amplified|non-?amplified|overexpressed|"
    r"(?P<pct><?\s*\d{1,3}(?:\.\d)?\s*%))",
    re.I,
)
_RESULT_BEFORE = re.compile(
    r"(?P<r>(?P<neg>negative|non-?reactive|unreactive|loss\s+of|lost|absence\s+of|absent|"
    r"lack(?:s|ing)?(?:\s+of)?|no|do(?:es)?\s+not\s+(?:express|stain\s+(?:for|with))|"
    r"(?:is|are)\s+not\s+(?:immuno)?reactive)|positive|immunoreactive|reactive|"
    r"stain(?:s|ed)?(?:\s+(?:strongly|diffusely|focally|weakly))?|express(?:es|ing)|"
    r"(?:(?:strong|weak|diffuse|focal|patchy|nuclear|cytoplasmic|membranous)\s+)*(?:positivity|"
    r"reactivity|immunoreactivity|staining|expression|labell?ing))"
    r"(?:\s+(?:nuclear|cytoplasmic|membranous))?(?:\s+(?:staining|expression|immunoreactivity))?"
    r"\s*(?:for|of|with|by)?\s*(?:the\s+)?(?:[\w\-/()]+(?:,\s*|\s+(?:and|or|as\s+well\s+as)\s+|"
    r"\s+)){0,6}$",
    re.I,
)
_PERFORMED = re.compile(
    r"\b(?:(?:are|were|was|is|be|been)\s+(?:performed|ordered|obtained|done|requested|pending|"
    r"attempted|examined|evaluated|reviewed)|will\s+be\s+(?:performed|reported)|to\s+be\s+performed|"
    r"stained\s+sections)\b",
    re.I,
)
_VARIANT = re.compile(
    r"[\s\-]*(?:v(?:iii|3)\b|wt\b|wild[\s\-]type|mutant|mutation|exon|del\b)", re.I
)
#: Part of the tumour, not all of it: results of a component are not the tumour's.
_SUBPOPULATION = re.compile(
    r"\b(?:areas?|components?|foci|focus|regions?|nodules?|subset|subpopulation|some|many\s+of|"
    r"occasional|scattered|rare|few|most|majority|minority|portions?|spindle|epithelioid|larger|"
    r"smaller|distinct|other|mostly|partly|partially)\b",
    re.I,
)
#: Lexicon concepts that group several different stains (PAS, trichrome, …): never compared.
_GROUPS = frozenset({"special stains"})
_POS = {
    "positive",
    "reactive",
    "immunoreactive",
    "expressed",
    "retained",
    "intact",
    "preserved",
    "normal",
    "normal expression",
    "positivity",
    "reactivity",
    "immunoreactivity",
    "staining",
    "labeling",
    "labelling",
    "present",
    "overexpressed",
    "amplified",
    "+",
    "(+)",
    "stains",
    "stain",
    "stained",
    "express",
    "expresses",
    "expressing",
    "expression",
}
_NEG = {
    "negative",
    "non-reactive",
    "nonreactive",
    "unreactive",
    "lost",
    "loss",
    "absent",
    "absence of",
    "lack of",
    "not amplified",
    "non-amplified",
    "nonamplified",
    "-",
    "(-)",
    "loss of",
    "lack",
    "lacks",
    "lacking",
}
_EQUIVOCAL = {"equivocal", "indeterminate"}


def _result(word: str, marker: str) -> tuple[str | None, str]:
    """(positive/negative/equivocal, method) of a result word for ``marker``."""
    w = " ".join(word.lower().split())
    if re.fullmatch(r"(?:score\s*)?[0-3]\s*\+|(?:score\s*)?0", w):
        score = int(re.search(r"[0-3]", w).group())
        if marker == "her2":
            return ({0: "negative", 1: "negative", 2: "equivocal", 3: "positive"}[score], "ihc")
        return ("positive" if score > 0 else "negative", "")
    if w.endswith("%"):
        v = float(re.sub(r"[^\d.]", "", w) or 0)
        if "<" in w and v <= 1:
            return "negative", "pct"
        return ("positive" if v >= 1 else "negative", "pct")
    if w.startswith("not ") and not w.startswith("not amplified"):
        return "negative", ""
    if (
        w.startswith(("no ", "does not", "do not", "loss", "absence", "lack"))
        or w == "no"
        or w.endswith(("not immunoreactive", "not reactive"))
    ):
        return "negative", ""
    w = w.split()[-1] if w.split()[-1] in _POS else w
    if "amplified" in w:
        return ("negative" if ("not" in w or "non" in w) else "positive"), "ish"
    if w in _POS:
        return "positive", ""
    if w in _NEG:
        return "negative", ""
    if w in _EQUIVOCAL:
        return "equivocal", ""
    return None, ""


def read_markers(ctx: Context, population: Subject | None = None) -> Subject | None:
    """IHC results per marker and population; returns the population a later statement of the
    same paragraph inherits (an explicit non-tumour population, else None)."""
    vocab = vocabulary()
    text = ctx.text
    carried = population
    explicit: Subject | None = None
    if _PERFORMED.search(text, ctx.start, ctx.end):
        return carried  # "Immunostains for ER and PR are performed": a test, not a result
    for m in vocab.markers.finditer(text, ctx.start, ctx.end):
        term = vocab.marker(m.group())
        if term is None or term.concept in _GROUPS:
            continue
        marker = term.concept
        if _VARIANT.match(text, m.end(), min(ctx.end, m.end() + 20)):
            continue  # "EGFR vIII", "EGFR wt": a variant, not the marker as a whole
        c = ctx.clause(m.start())
        after = (
            text[m.end() : c.end]
            if not ctx.in_label(m.start())
            else text[ctx.value_start : ctx.end]
        )
        r = _RESULT_AFTER.match(after)
        word = None
        if r:
            word = r.group("r")
        else:
            before = text[c.start : m.start()]
            b = _RESULT_BEFORE.search(before[-140:])
            if b:
                word = b.group("r")
                if b.group("neg") is None and re.search(
                    r"\b(?:no|not|without)\s+(?:\w+\s+)?$", before[-140:][: b.start()]
                ):
                    word = "no " + word
        if word is None:
            continue
        result, method = _result(word, marker)
        if result is None:
            continue
        if re.search(
            r"\b(?:fish|ish|in\s+situ\s+hybridi[sz]ation|sish|cish)\b", text[c.start : c.end], re.I
        ):
            method = method or "ish"
        subject = ctx.subject(m.start())
        if subject is not None and subject.kind in ("population", "background", "tissue", "lesion"):
            explicit = subject
        elif subject is None and carried is not None:
            subject = carried
        hedge = re.search(
            r"\b(?:equivocal|weak(?:ly)?|focal(?:ly)?|patchy|rare|scattered|"
            r"occasional|variable|heterogeneous)\b",
            text[c.start : c.end],
            re.I,
        )
        pol = ctx.polarity(m.start(), m.end()) if result == "positive" else PRESENT
        certain = pol != UNCERTAIN and ctx.region != "gross"
        if (
            result == "positive"
            and pol == ABSENT
            and word.lower()
            in ("stains", "stain", "stained", "express", "expresses", "expressing", "expression")
        ):
            result = "negative"
        target = ctx.target(subject, "tumour")
        if target.kind == "tissue" and subject is not None and subject.kind == "tissue":
            target = Target("population", ctx.part, subject.name)
        partial = _SUBPOPULATION.search(text, c.start, c.end)
        note = " ".join(
            x
            for x in (
                f"method={method}" if method else "",
                "weak" if hedge else "",
                "partial" if partial else "",
            )
            if x
        )
        ctx.add(
            "marker", marker, result, m.start(), m.end(), target=target, certain=certain, note=note
        )
    if explicit is not None and explicit.kind in ("population", "background"):
        return explicit
    if explicit is not None:
        return None
    return carried
