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
``fragment``              the rest of a sentence a page header cut off from its start
========================  ==============================================================

The parser never fails on odd text: OCR noise, run-together words, all capitals and flattened
tables give statements (maybe of kind ``form``), never an exception.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from pathgls.text.clean import clean_report
from pathgls.text.regions import REGIONS, heading_lines, region_of
from pathgls.text.sections import split_sentences
from pathgls.text.statement_kinds import (
    GROSS_SENTENCE,
    LEGEND,
    STATEMENT_KINDS,
    microscopy_in_block_list,
    statement_kind,
)

__all__ = [
    "REGIONS",
    "STATEMENT_KINDS",
    "Document",
    "Part",
    "Statement",
    "parse_document",
    "read_structure",
    "region_of",
]

#: A specimen part label at the start of a line ("A.", "(B)", "{C)", "2)", "Part 3:",
#: "SPECIMEN D -").
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
    r"(?P<label>[A-Za-z\*#][A-Za-z0-9 ,/&()'%\-\*#\.]{1,70}?)[ \t]*(?:[:;=]|\.{3,}|\s-\s|\s\.,)"
    r"[ \t]*(?P<value>\S.*)?$"
)
_LABEL_ALONE = re.compile(r"[ \t]*(?P<label>[A-Za-z][A-Za-z0-9 ,/&()'\-]{1,70}?)[ \t]*:[ \t]*$")
_BULLET = re.compile(
    r"[ \t]*(?:(?:[-*+•▪◦‣]|\d{1,2}[.)]|[ivx]{1,4}[.)])[ \t]+|-(?=[A-Z])|"
    r"\d{1,2}\.(?=[A-Z][A-Za-z]))"
)
_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|had|shows?|showed|shown|reveals?|revealed|demonstrates?|"
    r"identified|seen|noted|present|consists?|measures?|measuring|received|involves?|invades?)\b",
    re.I,
)
_TERMINAL = ".:;?!"


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
    before_admin: tuple[str, str | None] | None = None  # where an administrative block began
    prev_line = ""
    for i, (ls, le, kind, body) in enumerate(heading_lines(text)):
        if kind == "admin" and body is not None:
            # "UUID: …", "Page 2", "Date: …": one administrative line (a page header, say), not
            # a section: the section it interrupts goes on after it
            items.append((ls, le, "admin", None, False))
            continue
        if region == "admin" and before_admin is not None and _PAGE_HEADER.match(text, ls, le):
            region, part = before_admin  # a new page ends the QC form of the page before
            before_admin = None
        if kind == "admin" and region != "admin":
            before_admin = (region, part)
        elif kind is not None:
            before_admin = None
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
        if region == "admin" and _CLINICAL_FIELD.match(line):
            # "TUMOR SITE: PANCREAS TAIL." after "TISSUE COLD ISCHEMIA TIME:": the checklist
            # has begun, whatever administrative field came before it
            region = "synoptic"
            part = before_admin[1] if before_admin is not None else part
            before_admin = None
        label, title_start = _part_label(line, region)
        if (
            label is None
            and (
                (region == "diagnosis" and _unlabelled_title(line))
                or (region in ("diagnosis", "comment", "other") and _SPECIMEN_LABELLED.match(line))
            )
            and (part is None or part.startswith("#"))
            and not _wraps(prev_line)
        ):
            # "OMENTUM, EXCISION" / "- NO CARCINOMA IDENTIFIED": a specimen listed without a
            # letter is a part all the same (named "#1", "#2", … in its order)
            label = f"#{sum(1 for k in doc.parts if k.startswith('#')) + 1}"
            title_start = len(line) - len(line.lstrip())
        if label is not None:
            part, anchor = label, i
            ls += title_start
            ta, tb = _title_span(text[ls:le])
            title = " ".join(text[ls + ta : ls + tb].split())
            if label not in doc.parts:
                doc.parts[label] = Part(label, title)
            if title:
                doc.titles.append((label, ls + ta, ls + tb, region))
        items.append((ls, le, region, part, False))
        prev_line = line.strip()
    for start, end, reg, prt in _join(text, items):
        for a, b, lab, vs in _statements(text, start, end):
            if reg not in ("gross", "history", "admin", "specimen") and GROSS_SENTENCE.match(
                text, a, b
            ):
                reg = "gross"  # a gross description outside a gross heading
            if reg == "specimen" and lab is None and microscopy_in_block_list(text, a, b):
                reg = "microscopic"
            kind, reason = statement_kind(text, a, b, reg, lab, vs)
            if (
                kind == "assertion"
                and text[a : a + 1].islower()
                and _AFTER_PAGE_BREAK.search(text, max(0, a - 400), a)
            ):
                kind, reason = "fragment", "the rest of a sentence a page break cut"
            doc.statements.append(
                Statement(len(doc.statements), a, b, reg, prt, kind, lab, vs, reason)
            )
    _inside_forms(doc)
    return doc


def _inside_forms(doc: Document) -> None:
    """A short line with no verb between two form statements ("Gleason 5+5" between the
    questions of a QC form) is the form's answer, not the report's finding."""
    st = doc.statements
    for i in range(1, len(st) - 1):
        s = st[i]
        if (
            s.kind == "assertion"
            and s.label is None
            and st[i - 1].kind == "form"
            and st[i + 1].kind == "form"
            and s.end - s.start <= 40
            and not _VERB.search(doc.text, s.start, s.end)
        ):
            st[i] = dataclasses.replace(s, kind="form", reason="an answer inside a form")


#: Page-header lines just before a statement that starts mid-sentence.
_AFTER_PAGE_BREAK = re.compile(
    r"(?:page\s*\d+|printed\b|continued|continues|case\s*#|acct|patient\s+name|"
    r"pathology\s+report|redacted|uuid)[^\n]*\n(?:[^\n]{0,80}\n){0,2}[ \t]*$",
    re.I,
)

#: The first line of a new page of a TCGA report ("UUID:…", "TCGA-XX-XXXX-01A-PR Redacted").
_PAGE_HEADER = re.compile(r"\s*(?:UUID\s*:|TCGA-\w\w-\w{4})", re.I)

#: A heading within this many lines of a part label (or of such a heading) is the part's own
#: ("A. Kidney:" / "Frozen section diagnosis:" / … / "Final diagnosis:"); later ones end the part.
_PART_SUBHEADING_LINES = 3
_PART_REGIONS_INNER = frozenset({"preliminary", "diagnosis", "gross", "microscopic"})

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
    cassette = _CASSETTE.match(line) and not _OCR_PART.match(line)
    if (region not in _PART_REGIONS or cassette) and not _PART_WORD.match(line):
        return None, 0
    ref = _SPECIMENS_INVOLVED.match(line)
    if ref and region in _PART_REGIONS | {"synoptic"}:
        return ref.group("l").upper(), ref.end()  # a checklist's "Specimens: A: PROSTATE"
    if re.match(r"[ \t\-*•]*(?:parts?|specimens?)\s?\(s\)", line, re.I):
        return None, 0  # "Specimen(s) received": a plural, not part S
    m = _OCR_PART.match(line)
    if m and _ocr_title(line[m.end() :]):
        return m.group("l").upper(), m.end()
    if m:
        return None, 0  # "B.TUMOR MEASURES 5 CM": an item of a lettered list, not a part
    m = _PART.match(line)
    if not m:
        return None, 0
    label = m.group("b") or m.group("l") or m.group("w")
    if label is None or (m.group("w") and not m.group("word")):
        return None, 0
    if (
        m.group("word")
        and label.isalpha()
        and line[m.start("l" if m.group("l") else "w") - 1 :][:1].isalpha()
    ):
        return None, 0  # "Specimens:": a plural, not part S
    label = label.upper()
    rest = line[m.end() :]
    q = _RECEIVED_AS.match(rest)
    if q and not m.group("word") and region in ("gross", "other", "specimen"):
        return label, m.end() + q.start("t") - 1  # '3). The specimen is received … labeled "…"'
    if not m.group("word") and ((label.isdigit() and int(label) > 20) or not _names_specimen(rest)):
        # a lettered or numbered item is a part only when it names a specimen
        return None, 0
    elif not m.group("word") and label in "IVX" and len(label) == 1 and rest[:1].islower():
        return None, 0
    return label, m.end()


#: A gross item that names its part only in quotes: 'B. Received fresh, labeled "left lung", is …'.
_RECEIVED_AS = re.compile(
    r"[\s.]*(?:the\s+)?(?:specimen\s+(?:is\s+|was\s+)?)?(?:received|submitted)\b[^\"“\n]{0,80}?"
    r"\b(?:labell?ed|designated|marked|identified|titled)\b[^\"“\n]{0,40}?[\"“](?P<t>[^\"”\n]{2,80})[\"”]",
    re.I,
)
#: A checklist field about the tumour (the end of an administrative block).
_CLINICAL_FIELD = re.compile(
    r"[ \t\-*•]*(?:\d{1,2}[.)]\s*)?(?:tumou?r\s+(?:site|size|type|focality|extent|location)|"
    r"histologic(?:al)?\s+(?:type|grade)|(?:lymph[\s\-]*)?vascular\s+invasion|perineural\s+invasion|"
    r"(?:surgical\s+)?margins?|lymph\s+nodes?|pathologic(?:al)?\s+stag\w*|extent\s+of\s+invasion|"
    r"primary\s+tumou?r|regional\s+lymph\s+nodes|gleason|laterality)[^:\n]{0,30}:",
    re.I,
)
_SPECIMENS_INVOLVED = re.compile(
    r"[ \t]*specimens?(?:\s+involved)?\s*:\s*(?P<l>[A-Z]|\d{1,2})\s*[:.)]\s*(?=\S)", re.I
)
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
    if (
        value
        and parts[1] == ":"
        and "," not in head
        and not _PROCEDURE.search(head)
        and not re.search(r"\b(?:left|right)\b", head, re.I)  # "1. Left insular tumor: …"
    ):
        return False  # "7. Lymph nodes: 6/27" is a checklist field, not a specimen part
    return bool(_SPECIMEN_WORDS.search(head)) or head.strip().startswith(('"', "'", "“"))


def _ocr_title(rest: str) -> bool:
    """Whether what follows a run-together label ("A.PANCREATIC DUCT MARGIN: NEGATIVE") starts
    with a specimen's name, not a finding ("B.TUMOR MEASURES 5 CM")."""
    head = re.split(r"[,:;]|\.\s", rest, maxsplit=1)[0][:100]
    if _VERB.search(head) or _FINDING_WORDS.search(head):
        return False
    return bool(_SPECIMEN_WORDS.search(head)) or _names_specimen(rest)


def _wraps(previous: str) -> bool:
    """Whether a line runs on into the next (a long line cut mid-sentence)."""
    return (len(previous) >= 40 and previous[-1:].isalnum()) or previous[-1:] in (
        ",",
        ";",
        "-",
        "&",
    )


#: 'SPECIMEN LABELED "OMENTAL TUMOR" (including FSA):': a specimen named by its label only.
_SPECIMEN_LABELLED = re.compile(
    r"\s*specimens?\s+(?:label(?:l)?ed|designated|received\s+as)\s+[\"“][^\"”\n]{2,80}[\"”]"
    r"[^:\n]{0,40}:\s*$",
    re.I,
)


def _unlabelled_title(line: str) -> bool:
    """A line that names a specimen and how it was taken, and says nothing of it."""
    s = line.strip()
    words = s.split()
    if not (2 <= len(words) <= 12) or len(s) > 100 or not re.search(r"[,\-]", s):
        return False
    if _VERB.search(s) or _FINDING_WORDS.search(s) or s[:1] in "-•*(":
        return False
    return bool(_SPECIMEN_WORDS.search(s) and _PROCEDURE.search(s))


def _title_span(line: str) -> tuple[int, int]:
    """Where the title of a part line starts and ends (a quoted title ends at its quote)."""
    a = len(line) - len(line.lstrip())
    if line[a : a + 1] in ('"', "“"):
        q = re.search(r"[\"”]", line[a + 1 :])
        if q:
            return a + 1, a + 1 + q.start()
    m = re.search(r":|\s-\s|—|\.\s", line[a:])
    b = a + (m.start() if m else len(line[a:].rstrip()))
    return a, min(b, a + 120)


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


#: A barcode as OCR reads it: a line of I, l, 1, | and a few stray letters.
_BARCODE = re.compile(r"(?=(?:[^Il1|]*[Il1|]){20})[\sIl1|!iUHLTJ/\\.,'\-]{24,}")
_LABEL_LINE = re.compile(r"[ \t]*[A-Za-z][A-Za-z0-9 ,/&()'%\-]{1,60}?\s*[:;]")


def _continues(previous: str, line: str) -> bool:
    """Whether ``line`` carries on the item of the line before it."""
    if not previous or not line:
        return False
    if _BARCODE.fullmatch(previous) or _BARCODE.fullmatch(line):
        return False  # a page's barcode (OCR'd as rows of I, l and 1) joins no sentence
    if _BULLET.match(line) or LEGEND.match(line):
        return False
    if previous.endswith(":") and _LABEL_ALONE.fullmatch(previous) and not _LABEL_LINE.match(line):
        return True  # "Histologic Type:" / "Ductal adenocarcinoma"
    if previous[-1] in ".;?!:" or _LABEL_LINE.match(line):
        return line[0].islower() and previous[-1] not in ".?!"
    if line[0].islower() or previous[-1] in ",-/&(":
        return True
    if previous[-1].isalnum() and len(previous) >= 45 and not _FIELD.match(previous[:72]):
        return True  # a wrapped line of a paragraph or an all-caps diagnosis
    field = _FIELD.match(previous[:72])
    if (
        field
        and previous[-1].isalnum()
        and len(previous) >= 55
        and len(previous) - field.start("value") >= 15
    ):
        return True  # "1. LUNG, …: INFILTRATING SQUAMOUS" / "CELL CARCINOMA, …": a long value wraps
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
