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
from pathgls.text.case.polarity import PRESENT, UNCERTAIN
from pathgls.text.case.subjects import ClauseSubject, clean_name, subjects_in

_MARGIN_WORD = re.compile(
    r"(?<![A-Za-z])(?:margins?|resection\s+lines?|inked\s+surfaces?|ink)(?![A-Za-z])", re.I
)
_INVOLVED = re.compile(
    r"(?<![A-Za-z])(?:positive|involved|(?:tumou?r|carcinoma)\s+(?:is\s+)?(?:present\s+)?at|"
    r"extends?\s+to|extending\s+to|reaches|abuts|transected|present\s+at|at\s+(?:the\s+)?ink|"
    r"on\s+ink|touches|into\s+(?:the\s+)?(?:(?:[a-z]+-)?inked\s+)?margin)(?![A-Za-z])",
    re.I,
)
_FREE = re.compile(
    r"(?<![A-Za-z])(?:negative|(?:tumou?r\s*-\s*)?free|clear|uninvolved|not\s+involved|no\s+(?:tumou?r|"
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
    if (
        ctx.topic == "margin"
        and ctx.label is not None
        and not _MARGIN_WORD.search(ctx.label_text)
        and not _WHOLE_ORGAN_LABEL.search(ctx.label_text)
    ):
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
    statuses = _coordinated_statuses(ctx, mentions)
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
        status = _status_after(after) or _status_before(before) or statuses.get(i)
        if status is None:
            continue
        if (
            not _status_after(after)
            and ctx.label is not None
            and sm.start >= ctx.value_start
            and not re.search(r"margin|resection|surgical", ctx.label_text)
            and not text[sm.end : ctx.end].strip(" .,;:-\n\t")
        ):
            continue  # "Visceral Pleura Invasion: Not identified MARGINS": a heading run on
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
        listed = _SHARED_NOUN.search(text, max(c.start, sm.start - 80), sm.start)
        for w in re.findall(r"[A-Za-z\-]+", listed.group("list")) if listed and sm.name else []:
            assert listed is not None  # the loop runs only when it matched
            if w.lower() not in ("and", "or") and clean_name(w):
                # "the bronchial, vascular and pleural margins are free": each is free
                ctx.add(
                    "margin",
                    qual,
                    status,
                    listed.start("list"),
                    sm.end,
                    target=Target("margin", ctx.part, clean_name(w)),
                    certain=certain,
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
        distance_cm = float(v) / (10 if m.group("u").lower() == "mm" else 1)
        inside = [o for o in subjects_in(text, m.start(), m.end()) if o.kind == "margin"]
        name = inside[-1].name if inside else ""
        if not name and re.search(r"closest|nearest", m.group(), re.I):
            name = "closest"
        ctx.add(
            "margin_distance",
            "",
            round(distance_cm, 3),
            m.start(),
            m.end(),
            target=Target("margin", ctx.part, name),
        )
    for m in _CLOSEST_IS.finditer(text, ctx.start, ctx.end):
        distance_cm = float(m.group("v")) / (10 if m.group("u").lower() == "mm" else 1)
        ctx.add(
            "margin_distance",
            "",
            round(distance_cm, 3),
            m.start(),
            m.end(),
            target=Target("margin", ctx.part, "closest"),
        )
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
            distance_cm = float(vm.group("v")) / (10 if vm.group("u").lower() == "mm" else 1)
            names = [s for s in subjects_in(text, ctx.label[0], ctx.label[1]) if s.kind == "margin"]
            name = names[-1].name if names else "closest"
            ctx.add(
                "margin_distance",
                "",
                round(distance_cm, 3),
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
    # "carcinoma in situ found in the right and left distal ureter and apical urethral margin"
    r"(?:present|seen|identified|found|noted)\s+(?:in|at)\s+(?:[\w\-/]+[\s,]+){1,8}?(?:and|or)\s+"
    r"(?:the\s+)?$|"
    r"(?P<neg>\b(?:no|not|without|never|nor)\b[^.;]{0,40})?(?:present|seen|identified|found|"
    r"tumou?r|carcinoma|cis|dcis|involv\w*|extend\w*|extension|reach\w*|abut\w*|transect\w*|"
    r"touch\w*|positive)\s+(?:\w+\s+){0,2}?(?:at|to|into|on|involving|for|of)?\s*(?:the\s+)?"
    r"(?:(?:[a-z]+-)?inked\s+)?$",
    re.I,
)
_BEFORE_FREE = re.compile(
    r"(?:free|clear|away|distant|negative|uninvolved|not\s+involv\w*|close)\s+(?:of|from|to)?\s*"
    r"(?:the\s+)?(?:(?:[a-z]+-)?inked\s+)?$",
    re.I,
)


_SHARED_NOUN = re.compile(
    r"(?<![A-Za-z\-])(?P<list>(?:[A-Za-z\-]{3,}\s*,\s*){0,4}[A-Za-z\-]{3,}\s*,?\s+(?:and|or)\s+)$",
    re.I,
)
_COORDINATOR = re.compile(
    r"[\s,]*(?:(?:and|or|as\s+well\s+as|including|incl\.?|together\s+with)\b)?[\s,]*(?:the\s+)?"
    r"(?:[\w\-/]+\s+){0,3}?$",
    re.I,
)


def _coordinated_statuses(ctx: Context, mentions: list[ClauseSubject]) -> dict[int, str]:
    """Statuses margins share with their neighbours in a list: "involves the prostatic margins
    and the distal urethral margin", "all margins, including the apical margin, are free"."""
    text = ctx.text
    own: dict[int, str] = {}
    for i, sm in enumerate(mentions):
        c = ctx.clause(sm.start)
        nxt = next((o.start for o in mentions[i + 1 :] if o.start >= sm.end), c.end)
        prev = max((o.end for o in mentions[:i] if o.end <= sm.start), default=c.start)
        s = _status_after(text[sm.end : min(c.end, nxt)]) or _status_before(
            text[max(c.start, prev) : sm.start]
        )
        if s is not None:
            own[i] = s
    out: dict[int, str] = {}
    for i in range(len(mentions)):
        if i in own:
            continue
        for j in (i - 1, i + 1):  # the neighbour the list joins it to
            if j not in own or not 0 <= j < len(mentions):
                continue
            a, b = sorted((mentions[i], mentions[j]), key=lambda s: s.start)
            gap = text[a.end : b.start]
            if len(gap) <= 40 and "." not in gap and ";" not in gap and _COORDINATOR.fullmatch(gap):
                out[i] = own[j]
                break
    return out


def _status_after(after: str) -> str | None:
    m = _AFTER_INVOLVED.match(after)
    if not m:
        return None
    w = m.group("w").lower()
    if w.startswith(("positive", "involved", "present", "with", "tumo")):
        return "involved"
    return "free"


#: Labels naming an organ or tissue sampled whole, not a margin, even in a list of margins
#: ("SPECIMEN MARGINS: NOT INVOLVED" / "OVARIES, RIGHT AND LEFT: POSITIVE FOR CARCINOMA").
_WHOLE_ORGAN_LABEL = re.compile(
    r"\b(?:ovar\w*|fallopian|tubes?|omentum|lymph|nodes?|uterus|endometri\w*|myometri\w*|"
    r"adnexa\w*|appendix|gallbladder|spleen)\b",
    re.I,
)


def _status_before(before: str) -> str | None:
    b = before[-90:]
    field = re.search(r"([^:\n]{2,40}):\s*(?:not\s+)?[\w\s]{0,25}$", b)
    if field and not re.search(r"margin|resection|surgical", field.group(1), re.I):
        return None  # "Visceral pleura invasion: Not identified MARGINS": another field's value
    if _BEFORE_FREE.search(b):
        return "free"
    m = _BEFORE_INVOLVED.search(b)
    if m:
        if re.match(
            r"(?:present|seen|identified|found|noted)\b", m.group().lstrip(), re.I
        ) and not (_WHAT_IS_THERE.search(b)):
            return None  # "a staple line is present at the proximal margin": not the tumour
        return "free" if m.group("neg") else "involved"
    return None


_WHAT_IS_THERE = re.compile(
    r"\b(?:tumou?rs?|carcinoma|cis|dcis|malignan\w*|neoplas\w*|cancer|metasta\w*|cells|"
    r"lesion|disease|sarcoma|melanoma|lymphoma|adenocarcinoma|it|which)\b",
    re.I,
)


def _names_other_margins(ctx: Context, mentions: list[ClauseSubject]) -> bool:
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
