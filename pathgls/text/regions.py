"""Report regions: which section a heading opens (diagnosis, synoptic checklist, gross,
microscopic, comment, clinical history, intraoperative consultation, specimen list, forms,
methods), with OCR-damaged headings forgiven (see :mod:`pathgls.text.document`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from pathgls.text.sections import heading_kind, normalize_heading
from pathgls.text.statement_kinds import FORM

REGIONS = (
    "diagnosis",
    "synoptic",
    "microscopic",
    "gross",
    "ihc",
    "comment",
    "history",
    "preliminary",
    "specimen",
    "admin",
    "method",
    "other",
)


#: Regions whose statements are not assertions about the case, with the kind they give.
def _phrases(kind: str, words: str) -> dict[str, str]:
    return dict.fromkeys((w.strip() for w in words.split("|") if w.strip()), kind)


#: Headings (normalised: lower case, letters/digits) → region, beyond the sections table.
REGION_HEADINGS: dict[str, str] = {
    **_phrases(
        "history",
        "clinical history|history|clinical information|clinical info|clinical data|clinical notes|"
        "clinical details|clinical diagnosis|clinical diagnosis history|clinical diagnosis & "
        "history|"
        "clinical diagnosis and history|patient history|brief clinical history|indication|"
        "indications|preoperative diagnosis|pre operative diagnosis|pre op diagnosis|"
        "postoperative diagnosis|post operative diagnosis|post op diagnosis|operative diagnosis|"
        "operative diagnoses|pre op and post op diagnosis|pre and post op diagnosis|"
        "pre operative and post operative diagnosis|operative findings|other related clinical data|"
        "symptoms radiologic findings|clinical impression|reason for referral|clinical indication|"
        "pre operative diagnoses|postoperative diagnoses|preoperative diagnoses|clinical history "
        "and "
        "diagnosis|history and diagnosis|pertinent history|previous history",
    ),
    **_phrases(
        "preliminary",
        "intraoperative consultation|intra operative consultation|intraoperative consult|"
        "intraoperative consult diagnosis|intra operative consult|frozen section|frozen section "
        "diagnosis|frozen section diagnoses|frozen diagnosis|frozen section report|operative "
        "consult|"
        "operative consult frozen|operative call|intraoperative diagnosis|intra operative "
        "diagnosis|"
        "touch prep|touch preparation|intraoperative frozen section|frozen sections|"
        "intraoperative frozen section diagnosis|rapid diagnosis|gross consultation|fs diagnosis",
    ),
    **_phrases(
        "specimen",
        "specimen|specimens|specimen s|specimen submitted|specimens submitted|specimen s submitted|"
        "specimen received|specimens received|specimen s received|source of specimen|"
        "source of specimen s|source of specimens|specimen source|specimen type|procedure|"
        "procedures|tissue submitted|tissue|part|parts|specimen description|specimen labeled|"
        "block summary|summary of sections|section code|section codes|sections|cassettes|"
        "cassette summary|block key|representative sections|submitted as follows|"
        "representative sections are submitted as follows|slides|blocks|ink code",
    ),
    **_phrases(
        "admin",
        "patient|patient name|name|dob|age|sex|gender|mrn|date|date of procedure|date of report|"
        "date of receipt|date received|date reported|date ordered|receive date|report date|"
        "procedure date|physician|physicians|physician s|pathologist|electronic signature|signed|"
        "printed by|performed by|copy to|additional copy to|ordering md|billing type|billing|"
        "billing fee code|billing fee codes|billing fee code s|icd 9 s|icd 9|icd 10|cpt codes|"
        "cpt code|snomed codes|snomed|case number|accession "
        "number|location|taken|received|reported|"
        "collected|end of report|criteria|case is circle|qc|quality control|reviewer initials|"
        "patient address|phone number|uuid|status|client|account|page",
    ),
    **_phrases(
        "other",
        "surgical pathology report|surgical pathology|pathology report|report|final report|"
        "final surgical pathology report|histopathology report|consultation report|"
        "surgical pathology consultation report|anatomic pathology report",
    ),
    **_phrases(
        "method",
        "test description|methodology|method|methods|fda comment|disclaimer|references|reference|"
        "test information|background|limitations|assay information|procedure description",
    ),
    **_phrases(
        "synoptic",
        "synoptic|synoptic report|synoptic data|case synopsis|tumor characteristics|"
        "cancer case summary|checklist|summary of findings|pathologic staging|staging|tumor "
        "summary|"
        "pathologic findings|tumor|microscopic tumor characteristics|cap protocol|"
        "additional pathologic findings",
    ),
    **_phrases("comment", "comment|comments|note|notes|addendum|addendum comment|discussion"),
    **_phrases("gross", "gross diagnosis|gross findings|gross description|macroscopic description"),
}
#: Words that, as the last word of a heading not in the tables, name its region.
_REGION_HEAD_WORDS = {
    "history": "history",
    "consultation": "preliminary",
    "checklist": "synoptic",
    "synopsis": "synoptic",
    "codes": "admin",
    "code": "admin",
}
_SECTION_REGION = {"diagnosis": "diagnosis", "microscopic": "microscopic", "gross": "gross"}
_SECTION_REGION |= {"ihc": "ihc", "comment": "comment", "other": "other"}


# ---------------------------------------------------------------------------------


def region_of(title: str) -> str | None:
    """The region a heading names, or None when the text names none.

    OCR damage is forgiven for long headings: spaces inside words ("DIAGN OSIS") and one wrong,
    missing or extra letter ("Dagnosis", "Diagnosls") still name the region.
    """
    key = normalize_heading(title)
    if not key or len(key) > 70:
        return None
    if key in REGION_HEADINGS:
        return REGION_HEADINGS[key]
    fuzzy = _fuzzy_heading(key)
    if fuzzy is not None:
        return fuzzy
    kind = heading_kind(title)
    if kind is not None and kind != "other":
        return _SECTION_REGION[kind]
    last = key.split()[-1]
    return _REGION_HEAD_WORDS.get(last)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by at most one inserted, deleted or replaced letter."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + (len(a) == len(b)) :] == b[i + 1 :]


@functools.cache
def _squeezed_headings() -> dict[str, str]:
    """Known headings of 7+ letters without spaces → region (for OCR-damaged headings)."""
    table = {k.replace(" ", ""): v for k, v in REGION_HEADINGS.items() if len(k) >= 7}
    for k in (
        "diagnosis",
        "final diagnosis",
        "pathologic diagnosis",
        "microscopic description",
        "gross description",
        "microscopic",
        "pathological diagnosis",
        "final diagnoses",
    ):
        table[k.replace(" ", "")] = _SECTION_REGION[heading_kind(k) or "other"]
    return table


def _fuzzy_heading(key: str) -> str | None:
    squeezed = key.replace(" ", "")
    if len(squeezed) < 7:
        return None
    table = _squeezed_headings()
    if squeezed in table:
        return table[squeezed]
    for k, v in table.items():
        if abs(len(k) - len(squeezed)) <= 1 and _one_edit(k, squeezed):
            return v
    return None


_HEADING_LINE = re.compile(
    r"[ \t]*(?:#{1,6}[ \t]+|\*\*|__)?(?P<title>[A-Za-z][A-Za-z0-9 /&()'\-\.]{1,70}?)"
    r"(?:\*\*|__)?[ \t]*(?:[:;]|\s-\s|$)(?:\*\*|__)?[ \t]*(?P<rest>\S.*)?$"
)


def heading_lines(text: str) -> Iterator[tuple[int, int, str | None, int | None]]:
    """Each line with the region it opens (None: none) and where its body starts (None: none)."""
    pos = 0
    n = len(text)
    while pos <= n:
        nl = text.find("\n", pos)
        le = n if nl < 0 else nl
        line = text[pos:le]
        kind, body = None, None
        m = _HEADING_LINE.match(line)
        if m and len(line) <= 200:
            title = m.group("title").strip(" .")
            rest = m.group("rest")
            alone = rest is None
            colon = bool(re.search(r"[:;]\s*(?:\*\*|__)?\s*$", line[: m.end("title") + 4]))
            region = _synoptic_title(title) or region_of(title)
            if alone and not colon and not _plain_heading(title):
                region = None
            if FORM.search(title):
                region = None  # "Prior Malignancy History": a QC form line, not a section
            if region is not None and (alone or _headed_value(title, rest or "")):
                kind = region
                body = None if alone else pos + m.start("rest")
        yield pos, le, kind, body
        if nl < 0:
            return
        pos = nl + 1


#: One-word region names that are headings only with a colon ("TISSUE (extending …)" is text).
_COLON_ONLY = frozenset(
    [
        "tissue",
        "part",
        "parts",
        "specimen",
        "specimens",
        "procedure",
        "procedures",
        "sections",
        "slides",
        "blocks",
        "received",
        "taken",
        "location",
        "status",
        "report",
        "reported",
        "patient",
        "name",
        "age",
        "sex",
        "date",
        "tumor",
        "note",
        "notes",
        "page",
        "history",
        "summary",
    ]
)


def _plain_heading(title: str) -> bool:
    """Whether a line without a colon can be a heading: short, no parentheses or digits, all
    capitals or title case, and not a one-word name that needs a colon."""
    if len(title) > 60 or re.search(r"[()\d]", title):
        return False
    words = normalize_heading(title).split()
    if not words:
        return False
    if len(words) == 1 and words[0] in _COLON_ONLY:
        # "SUMMARY" alone in capitals opens the summary; "Tissue" or "TUMOR" alone may be text
        return title.isupper() and words[0] in ("summary", "history", "note", "notes")
    return title.isupper() or all(w[:1].isupper() for w in title.split() if len(w) > 3)


def _synoptic_title(title: str) -> str | None:
    """ "SYNOPTIC DATA-PRIMARY COLON AND RECTAL TUMORS", "Lung tissue checklist": a checklist."""
    key = normalize_heading(title)
    if re.search(r"\b(?:synoptic|checklist|cancer\s+case\s+summary|synopsis)\b", key):
        return "synoptic"
    return None


#: Regions a heading may open with its text on the same line ("DIAGNOSIS: Adenocarcinoma");
#: "Specimen type: Sigmoidectomy" or "Patient: …" are checklist or form lines instead.
_INLINE_REGIONS = frozenset(
    {"diagnosis", "microscopic", "gross", "comment", "history", "preliminary", "method"}
)


def _headed_value(title: str, rest: str) -> bool:
    """Whether ``Title: rest`` opens a region (a known heading in capitals or a long label)."""
    words = normalize_heading(title).split()
    if not words:
        return False
    region = _synoptic_title(title) or region_of(title)
    if region not in _INLINE_REGIONS:
        return False
    return title.isupper() or len(words) >= 2 or words[0] in {"diagnosis", "comment", "note"}
