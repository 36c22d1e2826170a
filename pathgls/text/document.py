"""Document structure of a pathology report: regions, specimen parts and statement kinds.

The first layer of the case model (:mod:`pathgls.text.case`). A report is read as a real
signed-out report is written: headed regions (final diagnosis, synoptic checklist, gross,
microscopic, comment, clinical history, intraoperative consultation, administrative fields),
specimen parts (``A.``, ``(B)``, ``2)``, ``Part 3:``, ``SPECIMEN C -``, OCR variants such as
``{B)`` or ``A.PANCREATIC``), list items and checklist lines (``Label: value``). Every statement
gets a *kind*; only **assertions** may enter the consistency checks:

========================  ==============================================================
kind                      what it is
========================  ==============================================================
``assertion``             the report states it of the case
``legend``                a staging legend or template option list ("pN0: No regional …")
``form``                  an administrative or QC field, a label without a value
``not_specified``         a field whose value is "not specified", "cannot be assessed", …
``history``               clinical history, prior disease, pre-/post-operative diagnosis
``preliminary``           frozen section / intraoperative consultation (superseded)
``general``               a general comment about a disease or a test method
``recommendation``        "consider …", "correlation is recommended"
``differential``          "rule out …", "the differential includes …"
``hypothetical``          "if …", "would be …"
``uncertain``             a statement hedged as a whole ("suspicious for …")
========================  ==============================================================

The parser never fails on odd text: OCR noise, run-together words, all capitals and flattened
tables give statements (maybe of kind ``form``), never an exception.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from pathgls.text.clean import clean_report
from pathgls.text.sections import heading_kind, normalize_heading, split_sentences

#: Statement kinds (module docstring); only ``assertion`` enters the checks.
STATEMENT_KINDS = (
    "assertion",
    "legend",
    "form",
    "not_specified",
    "history",
    "preliminary",
    "general",
    "recommendation",
    "differential",
    "hypothetical",
    "uncertain",
)
#: Region kinds: the report section a statement stands in.
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
REGION_KINDS = {
    "history": "history",
    "preliminary": "preliminary",
    "specimen": "form",
    "admin": "form",
    "method": "general",
}


def _phrases(kind: str, words: str) -> dict[str, str]:
    return dict.fromkeys((w.strip() for w in words.split("|") if w.strip()), kind)


#: Headings (normalised: lower case, letters/digits) → region, beyond the sections table.
REGION_HEADINGS: dict[str, str] = {
    **_phrases(
        "history",
        "clinical history|history|clinical information|clinical info|clinical data|clinical notes|"
        "clinical details|clinical diagnosis|clinical diagnosis history|clinical diagnosis & history|"
        "clinical diagnosis and history|patient history|brief clinical history|indication|"
        "indications|preoperative diagnosis|pre operative diagnosis|pre op diagnosis|"
        "postoperative diagnosis|post operative diagnosis|post op diagnosis|operative diagnosis|"
        "operative diagnoses|pre op and post op diagnosis|pre and post op diagnosis|"
        "pre operative and post operative diagnosis|operative findings|other related clinical data|"
        "symptoms radiologic findings|clinical impression|reason for referral|clinical indication|"
        "pre operative diagnoses|postoperative diagnoses|preoperative diagnoses|clinical history and "
        "diagnosis|history and diagnosis|pertinent history|previous history",
    ),
    **_phrases(
        "preliminary",
        "intraoperative consultation|intra operative consultation|intraoperative consult|"
        "intraoperative consult diagnosis|intra operative consult|frozen section|frozen section "
        "diagnosis|frozen section diagnoses|frozen diagnosis|frozen section report|operative consult|"
        "operative consult frozen|operative call|intraoperative diagnosis|intra operative diagnosis|"
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
        "cpt code|snomed codes|snomed|case number|accession number|location|taken|received|reported|"
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
        "cancer case summary|checklist|summary of findings|pathologic staging|staging|tumor summary|"
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

#: A specimen part label at the start of a line ("A.", "(B)", "{C)", "2)", "Part 3:", "SPECIMEN D -").
_PART = re.compile(
    r"[ \t\-*•]*(?:(?P<word>part|specimen|spec)\s*#?\s*)?"
    r"(?:[\(\{\[]\s*(?P<b>[A-Za-z]|\d{1,2})\s*[\)\}\]]|(?P<l>[A-Z]|\d{1,2})(?:\s?[\.\):]|\s+-)"
    r"|(?<=[ \t#])(?P<w>[A-Za-z]|\d{1,2})(?=\s*[\.:\-,]|\s*$))"
    r"[ \t]*(?=\S)",
    re.I,
)
_OCR_PART = re.compile(r"[ \t\-*•]*(?P<l>[A-H])\.(?=[A-Z]{3})")  # "A.PANCREATIC DUCT MARGIN"
_CASSETTE = re.compile(r"[ \t]*[A-Z]\s?\d{1,2}\b")  # "A1. Tumor ..." is a block code
_FIELD = re.compile(
    r"(?P<label>[A-Za-z\*#][A-Za-z0-9 ,/&()'%\-\*#\.]{1,70}?)[ \t]*(?:[:;=]|\.{3,}|\s-\s)"
    r"[ \t]*(?P<value>\S.*)?$"
)
_LABEL_ALONE = re.compile(r"[ \t]*(?P<label>[A-Za-z][A-Za-z0-9 ,/&()'\-]{1,70}?)[ \t]*:[ \t]*$")
_BULLET = re.compile(
    r"[ \t]*(?:(?:[-*+•▪◦‣]|\d{1,2}[.)]|[ivx]{1,4}[.)])[ \t]+|-(?=[A-Z])|\d{1,2}\.(?=[A-Z][a-z]))"
)
_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|had|shows?|showed|shown|reveals?|revealed|demonstrates?|"
    r"identified|seen|noted|present|consists?|measures?|measuring|received|involves?|invades?)\b",
    re.I,
)
_TERMINAL = ".:;?!"

# --- statement kinds --------------------------------------------------------------------------

_NOT_SPECIFIED = re.compile(
    r"^\W*(?:not\s+(?:specified|applicable|stated|given|reported|provided|assessed|evaluated|"
    r"assessable|evaluable|determined|submitted|sampled|indicated|available|known|"
    r"entirely\s+submitted)|n/?a|unknown|indeterminate|cannot\s+be\s+(?:assessed|determined|"
    r"evaluated|established)|can\s*not\s+be\s+(?:assessed|determined|evaluated)|"
    r"pending|see\s+(?:comment|note|below|above|text|addendum|report)|none\s+submitted|"
    r"no\s+(?:lymph\s+nodes?|nodes?|regional\s+lymph\s+nodes?)\s+(?:submitted|received|present|"
    r"found|identified|sampled)|pn?x\b|tx\b|mx\b|nx\b)",
    re.I,
)
_CATEGORY = r"(?:\(?[ypr]{0,2}p?(?:T(?:is|[0-4]|X)[a-d]?|N[0-3X][a-c]?|M[01X][a-c]?)\)?|FIGO\s+[IV]{1,3}[A-C]?\d?)"
_LEGEND = re.compile(
    rf"^[ \t_\[\]\(\)xX✓\-]*{_CATEGORY}\s*(?:\([^)]{{0,40}}\))?\s*[:=\-–]\s*"
    r"(?:no\b|tumou?r|regional|distant|metastas|invasion|invades|carcinoma|primary|"
    r"cannot|not|more\s+than|less\s+than|greater|limited|confined|extends|involvement|organ|"
    r"extra\w+|seminal|extension|bilateral|unilateral|involves|invasion|"
    r"[<>≤≥]|\d)",
    re.I,
)
_LEGEND_INLINE = re.compile(
    rf"(?:^|[\s(:])p?{_CATEGORY}\s*(?::|\s(?=tumou?r\s*(?:invades|extends|limited|confined|"
    r"greater|more|less|involves|with|of|>|<|≤|≥)))\s*(?:single|multiple|no\b|tumou?r|regional|distant|"
    r"metastas|invasion|invades|carcinoma|primary|cannot|more\s+than|less\s+than|greater|"
    r"limited|confined|extends|involvement)",
    re.I,
)
_LEGEND_LIST = re.compile(rf"{_CATEGORY}\b.{{3,80}}?\b{_CATEGORY}\b.{{3,80}}?\b{_CATEGORY}\b", re.I)
_TEMPLATE = re.compile(r"(?:_{2,}|\[\s\]|\(\s\))\s*\w+.{0,40}?(?:_{2,}|\[\s\]|\(\s\))\s*\w+")
_FORM = re.compile(
    r"\b(?:discrepancy|disqualified|qualified|reviewer|initials|hipaa|date\s+reviewed|"
    r"(?:prior|prim\w*)\s+mali\w*\s+history|mali\w*ncy\s+history|dual/synchronous|synchronous\s+primary\s+noted|"
    r"case\s+is\s*\(circle\)|electronically\s+signed|signed\s+out|page\s+\d+\s+of\s+\d+|"
    r"continued\s+on\s+next\s+page|confidential|unauthorized|accession|uuid|tcga-[a-z0-9]{2}-|"
    r"redacted|printed|print\s+date|run\s+date|icd-?\s?\d|cpt|snomed|billing|fee\s+code|"
    r"blocks?\s+submitted|sections?\s+submitted|cassettes?|representative\s+sections|"
    r"submitted\s+(?:in|as)|block\s+key|summary\s+of\s+sections)\b",
    re.I,
)
_HISTORY = re.compile(
    r"\b(?:history\s+of|hx\s+of|h/o|status\s+post|s/p|previously\s+(?:diagnosed|treated|resected|"
    r"excised)|prior\s+(?:diagnosis|history|resection|biopsy|excision|surgery|mastectomy|"
    r"lumpectomy|nephrectomy|treatment|chemotherapy|radiation)|previous\s+(?:diagnosis|biopsy|"
    r"resection|excision|surgery)|pre-?op(?:erative)?\s+diagnosis|clinical\s+(?:diagnosis|"
    r"impression|history)|referred\s+for|presented\s+with|presents\s+with|(?:known|recurrent)\s+"
    r"history|in\s+(?:19|20)\d\d\b|the\s+patient\s+(?:had|has|was|underwent|is))",
    re.I,
)
_GENERAL = re.compile(
    r"\b(?:patients\s+with|in\s+patients|studies\s+(?:have|show|suggest|indicate)|"
    r"has\s+been\s+(?:shown|reported|associated|described)|have\s+been\s+(?:shown|reported|"
    r"associated|described)|(?:is|are)\s+(?:associated|correlated)\s+with|(?:is|are)\s+"
    r"(?:predictive|prognostic)|predicts?\b|prognosis|this\s+(?:test|assay|method|stain)|the\s+"
    r"(?:test|assay)\s+(?:was|is|has)|has\s+not\s+been\s+cleared|fda|according\s+to|is\s+defined"
    r"\s+as|are\s+defined\s+as|literature|in\s+general|typically|usually|often|is\s+known\s+to|"
    r"are\s+known\s+to|reference\s+range|performance\s+characteristics|clia|interpreted\s+only|"
    r"sensitivity\s+of|specificity\s+of|guidelines?|sometimes|in\s+most|most\s+(?:tumou?rs|cases)|"
    r"generally|can\s+(?:retract|mimic|cause|"
    r"lead|result|be\s+seen|occur)|occasionally|protocol\s+for\s+(?:the\s+)?examination|"
    r"based\s+on\s+ajcc|ajcc/uicc|tnm,?\s+\d+(?:th|st|nd|rd)\s+edition|classification\s+should)\b",
    re.I,
)
_RECOMMENDATION = re.compile(
    r"\b(?:recommend(?:ed|s|ation)?|suggest(?:ed|s)?|consider(?:ed|ation)?|advised?|advisable|"
    r"correlat(?:e|ion)\s+with|clinical\s+correlation|follow-?\s?up|further\s+(?:evaluation|"
    r"studies|testing|work-?up|sampling)|(?:would|should|could)\s+be\s+(?:performed|considered|"
    r"obtained|helpful|useful)|to\s+be\s+followed|repeat\s+(?:biopsy|testing)|will\s+be\s+"
    r"(?:reported|issued|performed|sent))\b",
    re.I,
)
_DIFFERENTIAL = re.compile(
    r"\b(?:rule\s+out|r/o|differential(?:\s+diagnosis)?|versus|vs\.?|cannot\s+(?:be\s+)?"
    r"(?:entirely\s+|completely\s+)?(?:excluded?|ruled\s+out|rule\s+out)|can\s*not\s+(?:be\s+)?"
    r"(?:entirely\s+|completely\s+)?(?:excluded?|ruled\s+out|rule\s+out)|is\s+not\s+excluded|"
    r"not\s+(?:entirely\s+)?excluded|or\s+possibly|either\b.{1,60}\bor\b|raises?\s+the\s+"
    r"(?:possibility|question)|rais(?:ed|ing)\s+the\s+(?:possibility|question)|to\s+exclude|exclude\s+the\s+possibility|include[sd]?\s+.{1,40}\s+"
    r"and\s+.{1,40}\s+among)\b",
    re.I,
)
_HYPOTHETICAL = re.compile(
    r"(?:^|[\s,;(])(?:insufficient\s+to|not\s+sufficient|to\s+qualify|criteria\s+for|if|unless|in\s+the\s+event|whether|should\s+(?:the|there|this|it)|would\s+"
    r"(?:be|have|favor|favour|suggest|support|indicate|qualify)|could\s+(?:be|represent)|may\s+"
    r"(?:be|represent|indicate|reflect)|might)\b",
    re.I,
)
_PRELIMINARY = re.compile(
    r"\b(?:frozen\s+section|intra-?\s?operative(?:ly)?|touch\s+prep\w*|on\s+frozen|"
    r"at\s+the\s+time\s+of\s+(?:frozen|surgery))\b",
    re.I,
)
_GROSS_SENTENCE = re.compile(
    r"\W*(?:(?:on\s+)?(?:serial\s+)?section(?:ing|ed)\b|sectioning|cut\s+(?:surface|section)|"
    r"the\s+specimen\s+(?:is|was|consists)|received\s+(?:fresh|in\s+formalin)|(?:it|specimen)\s+"
    r"consists\s+of|the\s+(?:kidney|lung|specimen|prostate|uterus|colon)\s+(?:is|was)\s+"
    r"(?:received|opened|bivalved|serially|sectioned|inked)|representative\s+sections|"
    r"on\s+opening|opening\s+the)",
    re.I,
)
_FAVOUR = re.compile(
    r"\b(?:we|i)\s+(?:favou?r|believe|suspect|think)|\bfavou?red\b|\bis\s+favou?red", re.I
)
_UNCERTAIN_START = re.compile(
    r"^\W*(?:[A-Za-z ]{0,40}:\s*)?(?:suspicious|suspect|suspected|possibl[ey]|probabl[ey]|"
    r"likely|favou?r(?:ed|s)?|suggestive|questionable|presumed|presumptive|consistent\s+with\s+"
    r"either|cannot\s+exclude|compatible\s+with\s+either|indeterminate|equivocal\s+for)\b",
    re.I,
)


@dataclass(frozen=True)
class Part:
    """A specimen part: its label and the title the report gives it."""

    label: str  # "A", "2" (upper case)
    title: str  # "Kidney, left, radical nephrectomy" ("" when none)


@dataclass(frozen=True)
class Statement:
    """One statement: a sentence, list item or checklist line, with where it stands."""

    index: int
    start: int  # offsets into Document.text
    end: int
    region: str  # one of REGIONS
    part: str | None  # the specimen part it is under (None: the whole case)
    kind: str  # one of STATEMENT_KINDS
    label: str | None = None  # "Histologic Type" of a "Histologic Type: ductal" line
    value_start: int = -1  # where the value of a labelled line begins (-1: no label)
    reason: str = ""  # why it is not an assertion ("staging legend", "history section", …)

    @property
    def is_assertion(self) -> bool:
        """Whether the statement may enter the checks."""
        return self.kind == "assertion"


@dataclass
class Document:
    """A report as regions, parts and statements (offsets into ``text``)."""

    text: str
    parts: dict[str, Part] = field(default_factory=dict)
    statements: list[Statement] = field(default_factory=list)
    #: Every line that names a part: (label, start, end of its title, region); a part is named
    #: in the specimen list, the gross description and the diagnosis alike.
    titles: list[tuple[str, int, int, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def statement_at(self, offset: int) -> Statement | None:
        """The statement holding ``offset`` (None: none does)."""
        for st in self.statements:
            if st.start <= offset < st.end:
                return st
        return None

    def statement_text(self, s: Statement) -> str:
        """The text of statement ``s``."""
        return self.text[s.start : s.end]

    def assertions(self) -> list[Statement]:
        """The statements that may enter the checks."""
        return [s for s in self.statements if s.is_assertion]

    def kinds(self) -> dict[str, int]:
        """How many statements of each kind (for evidence and tests)."""
        out: dict[str, int] = {}
        for s in self.statements:
            out[s.kind] = out.get(s.kind, 0) + 1
        return out


def parse_document(raw: str | bytes, *, max_chars: int = 200_000) -> Document:
    """Clean ``raw`` and read its structure (see the module docstring)."""
    text, warnings = clean_report(raw, max_chars=max_chars)
    return read_structure(text, warnings=warnings)


def read_structure(text: str, *, warnings: list[str] | None = None) -> Document:
    """The structure of an already cleaned report text (offsets refer to ``text``)."""
    doc = Document(text=text, warnings=list(warnings or ()))
    region = "other"
    part: str | None = None
    items: list[tuple[int, int, str, str | None, bool]] = []  # start, end, region, part, field
    anchor = -99  # line of the last part label (or of a heading kept inside that part)
    for i, (ls, le, kind, body) in enumerate(_heading_lines(text)):
        if kind is not None:
            if (
                part is not None
                and i - anchor <= _PART_SUBHEADING_LINES
                and kind in _PART_REGIONS_INNER
            ):
                anchor = i  # "A. Kidney:" / "FINAL DIAGNOSIS:": a heading inside the part
            else:
                part = None
            region = kind
            if body is None:
                continue
            ls = body
        line = text[ls:le]
        if not line.strip():
            continue
        label, title_start = _part_label(line, region)
        if label is not None:
            part, anchor = label, i
            ls += title_start
            title = _title(text[ls:le])
            if label not in doc.parts:
                doc.parts[label] = Part(label, title)
            if title:
                doc.titles.append(
                    (
                        label,
                        ls,
                        ls + len(text[ls:le]) - len(text[ls:le].lstrip()) + len(title),
                        region,
                    )
                )
        items.append((ls, le, region, part, False))
    for start, end, reg, prt in _join(text, items):
        for a, b, lab, vs in _statements(text, start, end):
            if reg not in ("gross", "history", "admin", "specimen") and _GROSS_SENTENCE.match(
                text, a, b
            ):
                reg = "gross"  # a gross description outside a gross heading
            kind, reason = _kind(text, a, b, reg, lab, vs)
            doc.statements.append(
                Statement(len(doc.statements), a, b, reg, prt, kind, lab, vs, reason)
            )
    return doc


#: A heading within this many lines of a part label (or of such a heading) is the part's own
#: ("A. Kidney:" / "Frozen section diagnosis:" / … / "Final diagnosis:"); later ones end the part.
_PART_SUBHEADING_LINES = 3
_PART_REGIONS_INNER = frozenset({"preliminary", "diagnosis", "gross", "microscopic"})

# --- regions ----------------------------------------------------------------------------------


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


def _heading_lines(text: str) -> Iterator[tuple[int, int, str | None, int | None]]:
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
            if _FORM.search(title):
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
    if not words or (len(words) == 1 and words[0] in _COLON_ONLY):
        return False
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


# --- parts ------------------------------------------------------------------------------------

_PART_REGIONS = frozenset({"diagnosis", "gross", "microscopic", "specimen", "other", "comment"})


_SUFFIX_PART = re.compile(
    r"^[ \t\-*•]*(?P<title>[A-Za-z][^:()\n]{2,80}?)[ \t,]*[\(\{\[](?P<l>[A-Z]|\d{1,2})[\)\}\]]"
    r"[ \t]*[:;.\-]?[ \t]*(?=\S|$)"
)


def _part_label(line: str, region: str) -> tuple[str | None, int]:
    """The part label a line starts with and where its title begins (None, 0: no label).

    "Kidney, left (A):" carries its label at the end of its title: the title then starts the
    line (offset 0)."""
    m = _SUFFIX_PART.match(line)
    if m and region in _PART_REGIONS and _names_specimen(m.group("title")):
        return m.group("l").upper(), 0
    if region not in _PART_REGIONS or (_CASSETTE.match(line) and not _OCR_PART.match(line)):
        if not _PART_WORD.match(line):
            return None, 0
    m = _OCR_PART.match(line)
    if m:
        return m.group("l").upper(), m.end()
    m = _PART.match(line)
    if not m:
        return None, 0
    label = m.group("b") or m.group("l") or m.group("w")
    if label is None or (m.group("w") and not m.group("word")):
        return None, 0
    label = label.upper()
    rest = line[m.end() :]
    if not m.group("word") and ((label.isdigit() and int(label) > 20) or not _names_specimen(rest)):
        # a lettered or numbered item is a part only when it names a specimen
        return None, 0
    elif not m.group("word") and label in "IVX" and len(label) == 1 and rest[:1].islower():
        return None, 0
    return label, m.end()


_PART_WORD = re.compile(r"[ \t\-*•]*(?:part|specimen)\s*#?\s*[A-Za-z0-9]{1,2}\b", re.I)
_SPECIMEN_WORDS = re.compile(
    r"\b(?:kidney|renal|lung|lobe|bronch\w*|brain|frontal|temporal|parietal|occipital|cerebell\w*|"
    r"breast|prostate|bladder|uterus|uterine|endometri\w*|cervix|cervical|ovary|ovaries|ovarian|"
    r"tube|adnexa\w*|colon|rectum|rectal|sigmoid|cecum|ileum|bowel|pancrea\w*|whipple|duodenum|"
    r"stomach|gastric|esophag\w*|liver|hepatic|gallbladder|spleen|adrenal|ureter|urethra|"
    r"lymph|node|nodes|margin|tissue|skin|soft|fat|omentum|omental|peritone\w*|mass|tumou?r|"
    r"lesion|biopsy|resection|excision|specimen|vesicle|vas|pelvic|para-?aortic|"
    r"thyroid|larynx|tongue|mucosa|wall|vein|artery|nerve|bone|muscle|chest|pleura\w*|"
    r"diaphragm|appendix|appendectomy|hysterectomy|nephrectomy|prostatectomy|cystectomy|"
    r"lobectomy|colectomy|mastectomy|cystoprostatectomy|oophorectomy|salpingo\w*|washing|"
    r"fluid|cytology|left|right)\b",
    re.I,
)


_PROCEDURE = re.compile(
    r"\b(?:biops\w*|resection|excision|\w+ectomy|dissection|sampling|curettage|wash\w*|"
    r"aspirat\w*|core|needle|frozen|TURB\w*|transurethral|wedge|segment\w*)\b",
    re.I,
)
_FINDING_WORDS = re.compile(
    r"\b(?:carcinoma|adenocarcinoma|sarcoma|lymphoma|melanoma|invasion|invasive|invading|"
    r"differentiated|negative|positive|metasta\w+|malignan\w+|grade|stage|tumou?r\s+(?:size|"
    r"is|measures|extends)|no\b|not\b|without|free\s+of|present|identified|seen|noted|"
    r"involv\w+|uninvolved|consistent|suspicious|benign|atypi\w+|dysplasia|hyperplasia|"
    r"inflammation|fibrosis|necrosis|pT\d|pN\d|gleason)\b",
    re.I,
)


def _names_specimen(rest: str) -> bool:
    """Whether the text after a label reads like a specimen title ("Kidney, left, nephrectomy"),
    not like a finding of a lettered list ("B. No perineural invasion is seen.")."""
    parts = re.split(r"([:\n]|\s-\s|\s—\s|\.\s)", rest, maxsplit=1)
    head = parts[0][:100]
    if len(head.split()) > 14 or _VERB.search(head) or _FINDING_WORDS.search(head):
        return False
    value = parts[2].strip() if len(parts) > 2 else ""
    if value and parts[1] == ":" and "," not in head and not _PROCEDURE.search(head):
        return False  # "7. Lymph nodes: 6/27" is a checklist field, not a specimen part
    return bool(_SPECIMEN_WORDS.search(head)) or head.strip().startswith(('"', "'", "“"))


def _title(line: str) -> str:
    title = re.split(r":|\s-\s|—|\.\s", line, maxsplit=1)[0]
    return " ".join(title.split())[:120]


# --- items and statements ---------------------------------------------------------------------


def _join(
    text: str, items: list[tuple[int, int, str, str | None, bool]]
) -> Iterator[tuple[int, int, str, str | None]]:
    """Join wrapped lines into logical items (a list item, a checklist line, a paragraph)."""
    cur: list[int] | None = None
    cur_meta: tuple[str, str | None] = ("other", None)
    prev_line = ""
    prev_end = -1
    for ls, le, region, part, _ in items:
        line = text[ls:le].strip()
        if (
            cur is not None
            and (region, part) == cur_meta
            and text.count("\n", prev_end, ls) <= 1
            and _continues(prev_line, line)
        ):
            cur[1] = le
        else:
            if cur is not None:
                yield cur[0], cur[1], cur_meta[0], cur_meta[1]
            cur = [ls, le]
            cur_meta = (region, part)
        prev_line, prev_end = line, le
    if cur is not None:
        yield cur[0], cur[1], cur_meta[0], cur_meta[1]


_LABEL_LINE = re.compile(r"[ \t]*[A-Za-z][A-Za-z0-9 ,/&()'%\-]{1,60}?\s*[:;]")


def _continues(previous: str, line: str) -> bool:
    """Whether ``line`` carries on the item of the line before it."""
    if not previous or not line:
        return False
    if _BULLET.match(line) or _LEGEND.match(line):
        return False
    if previous.endswith(":") and _LABEL_ALONE.fullmatch(previous) and not _LABEL_LINE.match(line):
        return True  # "Histologic Type:" / "Ductal adenocarcinoma"
    if previous[-1] in ".;?!:" or _LABEL_LINE.match(line):
        return line[0].islower() and previous[-1] not in ".?!"
    if line[0].islower() or previous[-1] in ",-/&(":
        return True
    if previous[-1].isalnum() and len(previous) >= 45 and not _FIELD.match(previous[:72]):
        return True  # a wrapped line of a paragraph or an all-caps diagnosis
    last = previous.rsplit(None, 1)[-1].lower()
    return last in _CONTINUING or previous.count("(") > previous.count(")")


_CONTINUING = frozenset(
    [
        "a",
        "an",
        "and",
        "as",
        "at",
        "by",
        "for",
        "from",
        "in",
        "into",
        "of",
        "on",
        "or",
        "the",
        "to",
        "with",
        "without",
        "than",
        "per",
        "nor",
        "but",
    ]
)


def _statements(text: str, start: int, end: int) -> Iterator[tuple[int, int, str | None, int]]:
    """Statements of one logical item: a labelled line whole, prose cut into sentences."""
    flat = text[:end].replace("\n", " ")
    bm = _BULLET.match(flat, start, end)
    a = bm.end() if bm else start
    fm = _FIELD.match(flat, a, end)
    if fm and _is_label(fm.group("label")):
        label = " ".join(fm.group("label").strip(" *#").split())
        vs = fm.start("value") if fm.group("value") else end
        sentences = split_sentences(flat, start=vs, end=end) if vs < end else []
        if len(sentences) <= 1:
            yield a, _rstrip(text, a, end), label, vs
            return
        # "Final diagnosis: Adenocarcinoma, … . Margins are negative. …": the label goes with
        # its first sentence; the others are statements of their own
        yield a, sentences[0][1], label, vs
        a = sentences[1][0]
    for sa, sb in split_sentences(flat, start=a, end=end):
        fm = _FIELD.match(flat, sa, sb)
        if (
            fm
            and _is_label(fm.group("label"))
            and fm.group("value")
            and len(fm.group("label").split()) <= 5
        ):
            yield sa, sb, " ".join(fm.group("label").strip(" *#").split()), fm.start("value")
        else:
            yield sa, sb, None, -1


def _rstrip(text: str, a: int, b: int) -> int:
    while b > a and text[b - 1].isspace():
        b -= 1
    return b


def _is_label(label: str) -> bool:
    """Whether text before a colon is a field label, not the start of a sentence."""
    words = label.split()
    if not words or len(words) > 9 or _VERB.search(label):
        return False
    return not {"the", "a", "an", "this", "these", "which", "that"} & {w.lower() for w in words[:1]}


def _kind(text: str, a: int, b: int, region: str, label: str | None, vs: int) -> tuple[str, str]:
    """The kind of statement ``text[a:b]`` and, for a non-assertion, why."""
    s = text[a:b]
    if region in REGION_KINDS:
        return REGION_KINDS[region], f"{region} section"
    if _FORM.search(s):
        return "form", "form or QC field"
    if _LEGEND.match(s) or _LEGEND_LIST.search(s) or _LEGEND_INLINE.search(s):
        return "legend", "staging legend"
    if _TEMPLATE.search(s):
        return "legend", "template options"
    if _PRELIMINARY.search(s):
        return "preliminary", "frozen section or intraoperative"
    value = text[vs:b] if label is not None and vs >= 0 else ""
    if label is not None:
        if not value.strip():
            return "form", "label without a value"
        if _NOT_SPECIFIED.match(value):
            return "not_specified", "value not specified"
        if _HISTORY.search(label):
            return "history", "history field"
    elif _NOT_SPECIFIED.match(s):
        return "not_specified", "not specified"
    if _GENERAL.search(s):
        return "general", "general comment"
    if _RECOMMENDATION.search(s):
        return "recommendation", "recommendation"
    if _DIFFERENTIAL.search(s):
        return "differential", "differential diagnosis"
    if _HISTORY.search(s):
        return "history", "history"
    if _HYPOTHETICAL.search(s):
        return "hypothetical", "hypothetical"
    if _UNCERTAIN_START.match(value or s) or _FAVOUR.search(s):
        return "uncertain", "hedged"
    return "assertion", ""
