"""Readers of where the tumour is: laterality ("side") and sub-site ("site") facts.

Each specimen part is named several times (specimen list, gross, diagnosis); every title gives
its part's side and sub-site, so "D. Lung, left upper lobe" in the gross and "D. Lung, left lower
lobe" in the diagnosis are two facts about part D that cannot both be true. The tumour's own
side and site come from checklist fields ("Laterality:", "Tumor site:") and location phrases
("located in the right breast", "the left breast tissue shows … carcinoma").
"""

from __future__ import annotations

import re

from pathgls.text.case.context import Context
from pathgls.text.case.model import Fact, Target
from pathgls.text.document import Document
from pathgls.text.vocab_files import load_table

_SIDE = re.compile(r"(?<![A-Za-z])(?P<v>left|right|lt|rt|bilateral|both)(?![A-Za-z])", re.I)
_SIDES = {"lt": "left", "rt": "right", "left": "left", "right": "right"}

#: Sub-site groups: key → (pattern, {surface → canonical}). Canonical values of one group
#: conflict unless listed as adjacent in ADJACENT.
SITES: dict[str, re.Pattern[str]] = {
    "lobe": re.compile(
        r"(?<![A-Za-z])(?P<v>upper|middle|lower)\s+lobe|(?<![A-Za-z])(?P<abbr>RUL|RML|RLL|LUL|LLL)"
        r"(?![A-Za-z])|(?<![A-Za-z])(?P<ling>lingula)",
        re.I,
    ),
    "brain": re.compile(
        r"(?<![A-Za-z])(?P<v>frontal|temporal|parietal|occipital|insula(?:r)?|cerebell(?:um|ar)|"
        r"thalam(?:us|ic)|brain\s*stem|corpus\s+callosum)(?![A-Za-z])",
        re.I,
    ),
    "colon": re.compile(
        r"(?<![A-Za-z])(?P<v>cecum|cecal|caecum|ascending(?=\s+(?:[\w\-]+\s+){0,3}colon)|hepatic\s+flexure|transverse"
        r"(?=\s+(?:[\w\-]+\s+){0,3}colon)|splenic\s+flexure|descending(?=\s+(?:[\w\-]+\s+){0,3}colon)|sigmoid|rectosigmoid|rectum|rectal)"
        r"(?![A-Za-z])",
        re.I,
    ),
    "pancreas": re.compile(
        r"(?<![A-Za-z])(?:(?:pancreatic\s+)(?P<v>head|neck|body|tail|uncinate)|(?P<v2>head|neck|body|"
        r"tail|uncinate(?:\s+process)?)\s+of\s+(?:the\s+)?pancreas)(?![A-Za-z])",
        re.I,
    ),
}
_CANON = load_table("site_spellings").mapping("form", "site")
#: Joins the sub-sites a part spans ("rectum+sigmoid").
SITE_SEP = "+"


def sites_compatible(a: str, b: str) -> bool:
    """Whether two site values (each one sub-site or a span) may describe one tumour."""
    return any(
        x == y or frozenset((x, y)) in ADJACENT
        for x in a.split(SITE_SEP)
        for y in b.split(SITE_SEP)
    )


#: Neighbouring sub-sites a tumour or a specimen may span ("rectosigmoid", "body/tail").
ADJACENT = frozenset(frozenset(p) for p in load_table("adjacent_sites").pairs("site", "neighbour"))
_FIELD = re.compile(
    r"laterality|\bside\b|(?:tumou?r\s+)?(?:site|location)|specimen|procedure", re.I
)
_LOCATED = re.compile(
    r"\b(?:located|situated|centered|centred|arising|arises|lies|found|present|seen)\s+(?:\w+\s+)?"
    r"(?:in|within|at|on)\s+(?:the\s+)?$|\b(?:in|within|of)\s+(?:the\s+)?$",
    re.I,
)
_SHOWS = re.compile(
    r"(?P<side>left|right)\s+(?:(?:upper|middle|lower)\s+lobe|(?P<organ>breast|kidney|lung|ovary|"
    r"adrenal|testis|ureter))\b"
    r"(?:\s+(?:tissue|parenchyma|specimen))?\s+(?:shows?|showing|contains?|containing|with|harbou?rs?|"
    r"demonstrates?|has)\b",
    re.I,
)
#: "Specimen A, from the right frontal lobe, is …", "The current lobectomy specimen is the right
#: upper lobe": where a specimen was taken.
_SPECIMEN_FROM = re.compile(
    r"\b(?:(?:specimen|part)\s+#?(?P<l>[A-Z]|\d{1,2})\b|(?:the\s+)?(?:current\s+|present\s+)?"
    r"(?:\w+\s+)?specimen)\s*[,(]?\s*(?:(?:is|was)\s+)?(?:(?:taken|obtained|received|removed)\s+)?"
    r"(?:from|of|is|was)\s+(?:the\s+)?(?P<side>left|right)\b(?!\s+(?:and|&|or)\b)",
    re.I,
)
_PART_FROM = re.compile(
    r"[\s,(]*(?:(?:taken|obtained|received|removed)\s+)?from\s+(?:the\s+)?(?P<side>left|right)\b"
    r"(?!\s+(?:and|&|or)\b)",
    re.I,
)
_PAIRED = (
    r"breast|kidney|lung|ovary|ovaries|adrenal|testis|ureter|tube|adnexa|hemisphere|lobe|insula|"
    r"frontal|temporal|parietal|occipital|cerebral|cerebellar|lateral\s+(?:\w+\s+)?wall|axilla|pleura|trigone|ureteral\s+orifice"
)


def site_value(group: str, m: re.Match[str]) -> str:
    """The canonical sub-site a match of group ``group`` names."""
    if group == "lobe":
        if m.group("abbr"):
            return {"U": "upper", "M": "middle", "L": "lower"}[m.group("abbr")[1].upper()]
        if m.group("ling"):
            return "lingula"
    v = (m.groupdict().get("v") or m.groupdict().get("v2") or "").lower()
    v = " ".join(v.split())
    return _CANON.get(v, v)


def sides_in(text: str) -> set[str]:
    """The sides a phrase names ("bilateral"/"both" count as both)."""
    out: set[str] = set()
    for m in _SIDE.finditer(text):
        v = m.group("v").lower()
        out |= {"left", "right"} if v in ("bilateral", "both") else {_SIDES[v]}
    return out


def _title_words(title: str) -> set[str]:
    """The words of a part title that say what the part is (not its side)."""
    words = set(re.findall(r"[a-z]{3,}", title.lower().replace("-", "")))
    return words - {"left", "right", "and", "the", "with", "from", "received"}


def read_titles(doc: Document) -> list[Fact]:
    """Side and sub-site facts of every part title (target: the part)."""
    facts: list[Fact] = []
    names: dict[tuple[str, str], list[set[str]]] = {}
    for label, start, end, region in doc.titles:
        names.setdefault((label, region), []).append(_title_words(doc.text[start:end]))
    # a label naming two different things in one section is reused (reports joined into one
    # file, an OCR-misread letter): its titles say nothing about one part
    reused = {
        label
        for (label, _), words in names.items()
        if any(len(a & b) < 0.5 * len(a | b) for a in words for b in words)
    }
    for label, start, end, region in doc.titles:
        if region in ("history", "admin", "preliminary", "comment") or label in reused:
            continue
        st = doc.statement_at(start)
        if st is None:
            continue
        title = doc.text[start:end]
        sides = sides_in(title)
        if len(sides) == 1:
            # "Left obturator lymph node" names a side of the part only; "left lung" is also
            # the side of the tumour the part holds
            paired = bool(re.search(_PAIRED, title, re.I))
            note = "title" if paired else "title of part"
            facts.append(
                Fact(
                    "side", "", sides.pop(), Target("part", label), st.index, start, end, note=note
                )
            )
        for group, rx in SITES.items():
            found = {site_value(group, m) for m in rx.finditer(title)}
            if 1 <= len(found) <= 3:  # "Rectum and sigmoid, resection": the part spans both
                value = SITE_SEP.join(sorted(found))
                facts.append(
                    Fact(
                        "site",
                        group,
                        value,
                        Target("part", label),
                        st.index,
                        start,
                        end,
                        note="title",
                    )
                )
    return facts


_IN_SITE = re.compile(
    r"\b(?:carcinoma|adenocarcinoma|tumou?r|neoplasm|mass|glioma|astrocytoma|glioblastoma|"
    r"oligodendroglioma|ependymoma|meningioma|sarcoma|lymphoma|melanoma)\s+(?:[\w\-]+\s+){0,3}?"
    r"(?:of|in|within|arising\s+(?:in|from)|located\s+in|situated\s+in|cent(?:er|re)d\s+(?:in|on))"
    r"\s+(?:the\s+)?(?:(?:left|right)\s+)?$",
    re.I,
)


def _read_site_phrases(ctx: Context, target: Target) -> None:
    """The tumour's sub-site from where a sentence puts it ("adenocarcinoma of the cecum")."""
    text = ctx.text
    for group, rx in SITES.items():
        for m in rx.finditer(text, ctx.start, ctx.end):
            before = text[max(ctx.start, m.start() - 80) : m.start()]
            if not _IN_SITE.search(before) or re.search(r"metasta|implant|deposit", before, re.I):
                continue
            subject = ctx.subject(m.start())
            if subject is not None and (subject.other or subject.kind in ("lesion", "nodes")):
                continue
            if ctx.polarity(m.start(), m.end()) != "present":
                continue
            ctx.add("site", group, site_value(group, m), m.start(), m.end(), target=target)


def read_side(ctx: Context) -> None:
    """The tumour's side and sub-site from fields and location phrases."""
    text, lab = ctx.text, ctx.label_text
    target = Target("tumour", ctx.part)
    if re.search(r"metasta|implant|extension|spread|involve", lab, re.I):
        return  # "Sites of metastases: right tube": not where the tumour itself is
    if ctx.label is not None and ctx.value_start >= 0 and _FIELD.search(lab):
        value = text[ctx.value_start : ctx.end]
        only = bool(re.search(r"\bonly\b|unilateral|confined|limited", value, re.I))
        sides = sides_in(value)
        if len(sides) == 1 and (
            re.search(_PAIRED, value + " " + lab, re.I)
            or re.search(r"laterality|side|site|location", lab)
        ):
            ctx.add(
                "side",
                "",
                sides.pop(),
                ctx.value_start,
                ctx.end,
                target=target,
                note="field only" if only else "field",
            )
        for group, rx in SITES.items():
            found = {site_value(group, m) for m in rx.finditer(value)}
            site_field = "site" in lab or "location" in lab
            # "Procedure: partial pancreatectomy, pancreatic tail": the tumour is in the tail
            if len(found) == 1 and (site_field or re.search(r"procedure|specimen", lab)):
                ctx.add(
                    "site",
                    group,
                    found.pop(),
                    ctx.value_start,
                    ctx.end,
                    target=target,
                    note="field" if site_field else "procedure",
                )
        return
    _read_site_phrases(ctx, target)
    for m in _SPECIMEN_FROM.finditer(text, ctx.start, ctx.end):
        label = m.group("l")
        where = Target("part", label.upper()) if label else Target("tumour", ctx.part)
        ctx.add("side", "", m.group("side").lower(), m.start(), m.end(), target=where)
    lead = _PART_FROM.match(text, ctx.start, ctx.end)
    if lead and ctx.part is not None:  # "Specimen A, from the right frontal lobe, …" (label read)
        ctx.add(
            "side",
            "",
            lead.group("side").lower(),
            lead.start("side"),
            lead.end(),
            target=Target("part", ctx.part),
        )
    for m in _SHOWS.finditer(text, ctx.start, ctx.end):
        if re.search(
            r"carcinoma|tumou?r|neoplasm|sarcoma|melanoma|lymphoma|adenoma|malignan",
            text[m.end() : min(ctx.end, m.end() + 80)],
            re.I,
        ):
            ctx.add("side", "", m.group("side").lower(), m.start(), m.end(), target=target)
    for m in re.finditer(
        rf"(?<![A-Za-z])(?P<side>left|right)\s+(?:[\w\-]+\s+){{0,2}}?(?:{_PAIRED})s?\b",
        text[ctx.start : ctx.end],
        re.I,
    ):
        pos = ctx.start + m.start()
        subject = ctx.subject(pos)
        if subject is None or subject.kind not in ("tumour", "lesion") or subject.other:
            continue
        if not _LOCATED.search(text, max(ctx.start, pos - 40), pos):
            continue
        only = bool(
            re.search(
                r"\bonly\b",
                text[ctx.start + m.end() : min(ctx.end, ctx.start + m.end() + 12)],
                re.I,
            )
        )
        ctx.add(
            "side",
            "",
            m.group("side").lower(),
            pos,
            ctx.start + m.end(),
            target=target,
            note="only" if only else "",
        )
        for group, rx in SITES.items():
            sm = rx.search(text, pos, ctx.start + m.end())
            if sm:
                ctx.add(
                    "site", group, site_value(group, sm), pos, ctx.start + m.end(), target=target
                )
