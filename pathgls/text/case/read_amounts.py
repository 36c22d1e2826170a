"""Readers of amounts given as percentages: the proliferation index (Ki-67 / MIB-1) and the share
of the specimen the tumour involves ("amount" facts).

A value is kept as an interval ``(low, high)`` in percent: "MIB-1 labeling index of 6%" is
(6, 6), "ranges up to 18.8%" (0, 18.8), "5 - 25%" (5, 25). The note says how it was given
(``max`` for "up to", ``range`` for two ends) and whether the statement speaks of some areas
(``areas``: "in the most proliferative areas", "focally") or of the whole (``overall``).
"""

from __future__ import annotations

import re

from pathgls.text.case.context import Context
from pathgls.text.case.model import Target
from pathgls.text.case.polarity import PRESENT

_PCT = r"(?P<a>\d{1,3}(?:\.\d{1,2})?)\s*%?\s*(?:(?:-|–|to)\s*(?P<b>\d{1,3}(?:\.\d{1,2})?)\s*)?%"
_UP_TO = re.compile(r"\b(?:up\s+to|as\s+high\s+as|maximum\s+(?:of\s+)?|max\.?|at\s+most)\s*$", re.I)
_LESS = re.compile(r"(?:<|less\s+than|under|below|fewer\s+than)\s*$", re.I)
_MORE = re.compile(r"(?:>|greater\s+than|more\s+than|over|above|at\s+least)\s*$", re.I)

#: "Ki-67 (MIB-1) labeling index: 13.8%", "MIB-1 proliferation index of 6%".
_PROLIFERATION = re.compile(
    r"\b(?:ki\s*-?\s*67|mib\s*-?\s*1)\b(?:\s*\([^)]{0,12}\))?[^.;\n]{0,60}?"
    r"(?:index|labell?ing|proliferat\w*|positiv\w*|staining|rate|nuclei|cells)?[^.;\n%]{0,40}?"
    r"(?<![\d.])" + _PCT,
    re.I,
)
_PROLIFERATION_AFTER = re.compile(
    r"(?<![\d.])" + _PCT + r"\s*(?:of\s+(?:the\s+)?(?:tumou?r\s+)?(?:cells|nuclei)\s+)?"
    r"(?:are\s+|is\s+)?(?:positive|stain\w*|label\w*|reactive)\s+(?:for|with)\s+"
    r"(?:ki\s*-?\s*67|mib\s*-?\s*1)\b",
    re.I,
)
#: "PERCENT OF SPECIMEN INVOLVED BY TUMOR: 5 - 25%", "involving approximately 60% of the gland".
_INVOLVED_LABEL = re.compile(
    r"(?:percent(?:age)?|%|proportion|amount|extent)\s+(?:of\s+)?(?:the\s+)?"
    r"(?:specimen|gland|prostate|tissue|prostatic\s+tissue)\s+(?:involved|occupied|replaced)|"
    r"tumou?r\s+(?:volume|quantitation|quantity)|(?:specimen|gland)\s+involved",
    re.I,
)
_INVOLVED_PROSE = re.compile(
    r"\b(?:involv\w*|occupy\w*|occupies|replac\w*|compris\w*|represent\w*)\s+(?:approximately\s+|"
    r"about\s+|an\s+estimated\s+|roughly\s+|~\s*)?" + _PCT + r"\s+of\s+(?:the\s+)?(?:entire\s+|"
    r"total\s+|submitted\s+|examined\s+)?(?:prostate\s+|prostatic\s+)?(?:gland|prostate|specimen|"
    r"tissue)\b|"
    r"(?<![\d.])(?P<a2>\d{1,3})\s*%\s+of\s+(?:the\s+)?(?:gland|prostate|specimen)\s+(?:is\s+|was\s+)?"
    r"(?:involved|occupied|replaced)",
    re.I,
)
_VALUE_PCT = re.compile(r"\s*(?:approximately\s+|about\s+)?" + _PCT, re.I)
_AREAS = re.compile(
    r"\b(?:most\s+(?:proliferative|active|cellular)|hot\s*-?\s*spots?|focal(?:ly)?|areas?|"
    r"regions?|up\s+to|maximum|highest|peak)\b",
    re.I,
)
_OVERALL = re.compile(r"\b(?:overall|average|mean|background|global(?:ly)?|diffuse(?:ly)?)\b", re.I)


def read_amounts(ctx: Context) -> None:
    """Proliferation indices and the share of the specimen involved ("amount" facts)."""
    if ctx.region == "gross":
        return
    text = ctx.text
    said = text[ctx.start : ctx.end]
    for m in [
        *_PROLIFERATION.finditer(text, ctx.start, ctx.end),
        *_PROLIFERATION_AFTER.finditer(text, ctx.start, ctx.end),
    ]:
        _add(ctx, "proliferation", m, said)
    if ctx.label is not None and ctx.value_start >= 0 and _INVOLVED_LABEL.search(ctx.label_text):
        pct = _VALUE_PCT.match(text, ctx.value_start, ctx.end)
        if pct is not None:
            _add(ctx, "involvement", pct, said)
    for m in _INVOLVED_PROSE.finditer(text, ctx.start, ctx.end):
        if ctx.in_label(m.start()):
            continue
        _add(ctx, "involvement", m, said)


def _add(ctx: Context, key: str, m: re.Match[str], said: str) -> None:
    """One amount fact from a match of one of the patterns above (group ``a``, or ``a2``, the
    value; ``b`` the upper end of a range), unless it is denied or out of [0, 100]."""
    a = m.group("a") if "a" in m.re.groupindex and m.group("a") else None
    if a is None and "a2" in m.re.groupindex:
        a = m.group("a2")
    if a is None:
        return
    b = m.group("b") if "b" in m.re.groupindex else None
    lo, hi = float(a), float(b) if b else float(a)
    if hi < lo or hi > 100:
        return
    pos = m.start("a") if m.group("a") else m.start("a2")
    before = ctx.text[max(ctx.start, pos - 20) : pos]
    notes = []
    if _UP_TO.search(before) or _LESS.search(before):
        lo, notes = 0.0, ["max"]
    elif _MORE.search(before):
        hi, notes = 100.0, ["min"]
    elif b:
        notes = ["range"]
    if _AREAS.search(said):
        notes.append("areas")
    if _OVERALL.search(said):
        notes.append("overall")
    if ctx.polarity(m.start(), m.end()) != PRESENT:
        return
    ctx.add(
        "amount",
        key,
        (lo, hi),
        m.start(),
        m.end(),
        target=Target("tumour", ctx.part),
        note=" ".join(notes),
    )
