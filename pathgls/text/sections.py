"""Report sections and sentences: :func:`parse_report`.

A report is cleaned (:func:`pathgls.text.clean.clean_report`), cut into sections at its
headings, and each section body into sentences and list items. All offsets refer to the cleaned
text: ``report.text[s.start:s.end] == s.text`` for every sentence.

Headings come in three shapes:

* Markdown — ``## Heading``, ``**Heading:**`` / ``**Heading**:`` (optionally bulleted or
  numbered, optionally followed by the body on the same line), a bold line alone;
* plain — ``DIAGNOSIS:`` or ``Final Diagnosis: ...`` at the start of a line, or mid-paragraph
  right after a sentence end, or a known heading alone on a line in capitals;
* the PathGLS six-field format — ``STAIN_TYPE: ...``, ``TISSUE_ARCHITECTURE: ...`` and so on
  (any case, spaces or underscores, bolded or numbered), which is the plain shape with known
  labels.

Heading text is mapped to a kind of :data:`~pathgls.text.base.SECTION_KINDS` by
:func:`heading_kind`, which reads three tables (:data:`HEADING_KINDS` for whole phrases,
:data:`HEAD_WORDS` / :data:`MODIFIER_WORDS` for the last word of other phrases). Plain
``Label:`` text opens a section only when the label is known, so "Margins: clear" or
"Examination reveals:" stay sentences. Explicit Markdown headings always open a section; an
unknown one ("**Architecture:**" under "Microscopic Description") is a sub-heading and takes the
kind of the section it is in. A Markdown label with its value on the same line
(``- **Skin biopsy:** Reactive dermatitis``) opens a section only when the label is known;
otherwise the whole line is body text of the current section.

``STAIN_TYPE`` is filed under "microscopic", not "ihc": it names how the slide was stained
(usually H&E), which is part of describing what was seen, while "ihc" sections hold
immunohistochemistry *results* (markers and their status).

Sentences (:func:`split_sentences`) come from a rule splitter that is linear in the text and
gives exact offsets. A section body is first cut into blocks: a blank line, a bullet or numbered
item, a table row, or a new line that does not continue the previous one (it starts with a
capital, bracket or digit and the previous line does not end in a comma or a function word) all
start a new block; so each list item is its own sentence, and a line without final punctuation
ends its sentence. A block is then cut after ``.``, ``!``, ``?`` followed by a space (and after
``。！？`` anywhere) unless

* the period ends an abbreviation (:data:`ABBREVIATIONS`, or :data:`NUMBER_ABBREVIATIONS`
  before a number) or an initial after a title or initial ("Dr. J. Smith");
* the next word starts in lower case ("approx. two", "2 cm. in size") or with ``,;:)]``;
* the punctuation is inside matched parentheses or brackets (of at most
  :data:`MAX_PROTECTED_CHARS`).

Decimal numbers ("2.5 cm") and codes ("pT1c.N0") have no space after the period and are never
cut; a unit or code that ends a sentence ("... 2.5 cm. The ...", "pT1c. Margins ...") ends it.
Semicolons and colons never end sentences. Sentences are trimmed of whitespace, of bullet
markers at the start of a block, of ``#``/``>``/``|`` decoration and of ``**``/``__`` at either
end; bold markers inside a sentence stay (offsets must be exact). Sentences without a letter or
digit (``---``) are dropped; placeholders such as "[Redacted]" are kept: they are text the model
wrote, and extraction finds nothing in them.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from pathgls.text.base import ParsedReport, Section, Sentence
from pathgls.text.clean import clean_report

logger = logging.getLogger(__name__)


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


#: Whole heading phrases (normalised: lower case, words of letters/digits/&) → section kind.
HEADING_KINDS: dict[str, str] = {
    # diagnosis
    **dict.fromkeys(
        [
            "diagnosis", "diagnoses", "final diagnosis", "final diagnoses", "dx",
            "pathologic diagnosis", "pathological diagnosis", "pathology diagnosis",
            "histopathologic diagnosis", "histopathological diagnosis", "histopathology diagnosis",
            "histologic diagnosis", "histological diagnosis", "microscopic diagnosis",
            "diagnosis morphologic", "morphologic diagnosis", "morphological diagnosis",
            "impression", "conclusion", "conclusions", "interpretation", "summary", "opinion",
            "final pathologic diagnosis", "final report", "diagnostic summary",
        ],
        "diagnosis",
    ),
    # microscopic
    **dict.fromkeys(
        [
            "microscopic", "microscopic description", "microscopic findings", "microscopy",
            "microscopic examination", "histology", "histological findings", "histologic findings",
            "histopathology", "histopathological findings", "histopathologic findings",
            "histological description", "histologic description", "morphology", "findings",
            "description", "tissue architecture", "architecture", "cell types", "cell type",
            "nuclear features", "cytoplasmic features", "stain type", "stain", "stains",
            "staining", "cytology",
        ],
        "microscopic",
    ),
    # gross
    **dict.fromkeys(
        [
            "gross", "gross description", "gross examination", "gross findings", "macroscopic",
            "macroscopic description", "macroscopic examination", "macroscopy", "specimen",
            "specimens", "specimen type", "specimen site", "specimen source", "source of specimen",
            "specimen received", "specimen description", "site", "received",
        ],
        "gross",
    ),
    # ihc
    **dict.fromkeys(
        [
            "ihc", "immunohistochemistry", "immunohistochemical stains",
            "immunohistochemical staining", "immunohistochemical findings",
            "immunohistochemical analysis", "immunohistochemical results", "immunostains",
            "immunostaining", "immunoprofile", "immunophenotype", "special stains", "special stain",
            "ancillary studies", "ancillary tests", "biomarkers", "biomarker studies",
            "receptor status", "molecular studies", "molecular testing",
        ],
        "ihc",
    ),
    # comment
    **dict.fromkeys(
        [
            "comment", "comments", "additional comments", "note", "notes", "recommendation",
            "recommendations", "clinical correlation", "follow up", "followup", "suggestion",
            "suggestions", "addendum", "differential diagnosis", "differential diagnoses",
        ],
        "comment",
    ),
    # other: identification, clinical context, sign-out
    **dict.fromkeys(
        [
            "patient", "patient id", "patient name", "patient information", "name", "age", "sex",
            "gender", "dob", "date of birth", "mrn", "accession number", "case number", "case id",
            "sample id", "slide number", "slide id", "date", "date of examination",
            "date of report", "date of biopsy", "date signed", "date received", "pathologist",
            "signature", "signed", "signed by", "signatory", "electronically signed by",
            "referring physician", "physician", "clinician", "institution", "hospital",
            "clinical history", "clinical information", "clinical data", "clinical details",
            "clinical notes", "history", "indication", "indications", "reason for examination",
            "clinical diagnosis", "preoperative diagnosis", "postoperative diagnosis",
            "pre op diagnosis", "post op diagnosis", "pre op and post op diagnosis",
            "pre and post op diagnosis", "pre operative diagnosis", "post operative diagnosis",
            "histopathology report", "pathology report", "surgical pathology report", "report",
            "end of report",
        ],
        "other",
    ),
}  # fmt: skip

#: Last words that decide the kind of a phrase not in :data:`HEADING_KINDS`.
HEAD_WORDS: dict[str, str] = {
    **dict.fromkeys(
        ["diagnosis", "diagnoses", "impression", "impressions", "conclusion", "conclusions",
         "interpretation", "summary"],
        "diagnosis",
    ),
    **dict.fromkeys(["microscopy", "histology", "histopathology", "morphology"], "microscopic"),
    **dict.fromkeys(["macroscopy", "specimen", "specimens"], "gross"),
    **dict.fromkeys(
        ["immunohistochemistry", "ihc", "immunostains", "immunoprofile", "immunophenotype"], "ihc"
    ),
    **dict.fromkeys(
        ["comment", "comments", "note", "notes", "recommendation", "recommendations", "addendum"],
        "comment",
    ),
    **dict.fromkeys(
        ["history", "id", "date", "name", "signature", "pathologist", "physician", "report"],
        "other",
    ),
}  # fmt: skip

#: Generic last words: their kind comes from a modifier before them, else this default.
GENERIC_HEAD_WORDS: dict[str, str] = {
    **dict.fromkeys(
        ["findings", "description", "examination", "features", "evaluation", "analysis",
         "stain", "stains", "staining", "results", "studies"],
        "microscopic",
    ),
}  # fmt: skip

#: Words that give a generic head its kind ("immunohistochemical findings" → ihc).
MODIFIER_WORDS: dict[str, str] = {
    **dict.fromkeys(
        ["microscopic", "histological", "histologic", "histopathological", "histopathologic",
         "morphologic", "morphological", "cytologic", "cytological"],
        "microscopic",
    ),
    **dict.fromkeys(["gross", "macroscopic"], "gross"),
    **dict.fromkeys(
        ["immunohistochemical", "immunohistochemistry", "ihc", "special", "immunostain",
         "molecular", "ancillary"],
        "ihc",
    ),
    **dict.fromkeys(["clinical", "laboratory", "radiologic", "radiological", "imaging"], "other"),
}  # fmt: skip

#: Words that make a plain ``Label:`` a phrase of prose rather than a heading.
PROSE_WORDS = _wordset(
    "a an the this that these those is are was were be been it its which who we no not "
    "include includes including reveal reveals revealed show shows showed shown following"
)
#: Longest text that can name a section (longer bold lines are body text).
MAX_HEADING_CHARS = 120
#: Longest plain (non-Markdown) label, in words.
MAX_PLAIN_LABEL_WORDS = 6

#: Words whose final period never ends a sentence (lower case, inner periods kept: "e.g").
ABBREVIATIONS = _wordset(
    "approx appr cf dr drs e.g eg et al fig figs i.e ie incl mr mrs ms prof resp st viz vs"
)
#: Words whose final period does not end a sentence when a number follows ("No. 3", "ca. 2 cm").
NUMBER_ABBREVIATIONS = _wordset("ca no nr nos num ref vol p pp sec wt")
#: Titles after which a single capital letter and period is an initial ("Dr. J. Smith").
TITLES = _wordset("dr drs mr mrs ms prof")
#: A line ending in one of these words continues on the next line.
CONTINUING_WORDS = _wordset("a an and as at by for from in into of on or the to with")
#: Parentheses longer than this do not protect their content from sentence ends.
MAX_PROTECTED_CHARS = 300

_BULLET = r"(?:[-*+•▪◦‣]|\d{1,3}[.)]|\(?[A-Za-z0-9]{1,3}\)|[IVXivx]{1,5}\.)"
_LABEL_CHARS = r"[A-Za-z][A-Za-z0-9 _/&()'\-]{0,60}"
_ATX = re.compile(r"[ \t]{0,3}#{1,6}[ \t]+(?P<label>.*?)[ \t#]*")
_BOLD_LABEL = re.compile(
    rf"[ \t]*(?:{_BULLET}[ \t]+)?(?:\*\*|__)(?P<label>[^*\n:]+?)[ \t]*"
    r"(?::[ \t]*(?:\*\*|__)|(?:\*\*|__)[ \t]*:)[ \t]*(?P<rest>\S.*?)?[ \t]*"
)
_BOLD_ALONE = re.compile(r"[ \t]*(?:\*\*|__)(?P<label>[^*\n]+?)(?:\*\*|__)[ \t]*:?[ \t]*")
_PLAIN_LABEL = re.compile(
    rf"[ \t]*(?:{_BULLET}[ \t]+)?(?P<label>{_LABEL_CHARS}?)[ \t]*:(?:[ \t]+(?P<rest>\S.*?))?[ \t]*"
)
_PLAIN_ALONE = re.compile(r"[ \t]*(?P<label>[A-Za-z][A-Za-z0-9 _/&()'\-]{0,60}?)[ \t]*")
_MID_LABEL = re.compile(
    r"(?<=[.!?])[\"')\]]*[ \t]+(?P<label>[A-Z][A-Za-z0-9 _/&()'\-]{0,60}?)[ \t]*:(?:[ \t]+|$)"
)
_PARENTHETICAL = re.compile(r"\([^)]*\)")
_NON_WORD = re.compile(r"[^a-z0-9&]+")
_BULLET_START = re.compile(rf"[ \t]*(?:{_BULLET}[ \t]|\|)")
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’]*|[。！？]+")
_WORD_BEFORE = re.compile(r"[A-Za-z][A-Za-z.]*\Z")
_LAST_WORD = re.compile(r"([A-Za-z]+)\W*\Z")
_BRACKET = re.compile(r"[()\[\]]")
_LEAD = re.compile(rf"(?:\s+|#{{1,6}}(?=\s)|>|\*\*|__|\||{_BULLET}(?=\s))+")
_LEAD_INNER = re.compile(r"(?:\s+|\*\*|__)+")
_ALNUM = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class _Heading:
    title: str  # as written, without Markdown markers and colon
    kind: str | None  # None: unknown, takes the kind of the section it is in
    start: int  # where the heading begins (the previous section ends here)
    body: int  # where its body begins


def parse_report(raw: str | bytes, *, max_chars: int = 200_000) -> ParsedReport:
    """Clean a report and split it into sections and sentences.

    Args:
        raw: The report as text or bytes.
        max_chars: Passed to :func:`~pathgls.text.clean.clean_report`.

    Returns:
        The parsed report; offsets refer to ``report.text``, the cleaned text, and
        ``report.warnings`` are the cleaning warnings. Text before the first heading, or a report
        without headings, is a section of kind "other" with title "".
    """
    text, warnings = clean_report(raw, max_chars=max_chars)
    sections = find_sections(text)
    sentences = [
        Sentence(text[a:b], a, b, sec.kind)
        for sec in sections
        for a, b in split_sentences(text, start=sec.start, end=sec.end)
    ]
    return ParsedReport(text=text, sections=sections, sentences=sentences, warnings=warnings)


def find_sections(text: str) -> list[Section]:
    """Sections of cleaned ``text``: bodies between headings, with canonical kinds.

    Section bodies are stripped of surrounding whitespace; a heading with nothing under it gives
    an empty section (``start == end``).
    """
    headings = _find_headings(text)
    sections: list[Section] = []
    first = headings[0].start if headings else len(text)
    a, b = _strip_span(text, 0, first)
    if a < b:
        sections.append(Section("other", "", a, b))
    kind = "other"
    for i, h in enumerate(headings):
        end = headings[i + 1].start if i + 1 < len(headings) else len(text)
        kind = h.kind or kind
        a, b = _strip_span(text, h.body, end)
        sections.append(Section(kind, h.title, a, b))
    return sections


def heading_kind(title: str) -> str | None:
    """The section kind a heading names, or None when it names none of them.

    The title is normalised (parenthesised parts dropped, lower case, ``_`` and punctuation to
    spaces), looked up in :data:`HEADING_KINDS`, else decided by its head: the part before " of "
    if any, and its last word in :data:`HEAD_WORDS`, or a generic last word
    (:data:`GENERIC_HEAD_WORDS`) given its kind by the nearest modifier before it.
    """
    if len(title) > MAX_HEADING_CHARS:
        return None
    key = normalize_heading(title)
    if not key:
        return None
    if key in HEADING_KINDS:
        return HEADING_KINDS[key]
    head = key.split(" of ")[0] if " of " in key else key
    words = head.split()
    last = words[-1]
    if last in HEAD_WORDS:
        return HEAD_WORDS[last]
    if last in GENERIC_HEAD_WORDS:
        for word in reversed(words[:-1]):
            if word in MODIFIER_WORDS:
                return MODIFIER_WORDS[word]
        return GENERIC_HEAD_WORDS[last]
    return None


def normalize_heading(title: str) -> str:
    """Heading text as a table key: "Final_Diagnosis (revised):" → "final diagnosis"."""
    key = _PARENTHETICAL.sub(" ", title).replace("_", " ").lower()
    return _NON_WORD.sub(" ", key).strip()


def _find_headings(text: str) -> list[_Heading]:
    """All headings in order: line-level shapes first, then mid-paragraph labels."""
    headings: list[_Heading] = []
    for ls, le in _lines(text, 0, len(text)):
        if ls == le:
            continue
        heading = _line_heading(text, ls, le)
        body = ls
        if heading is not None:
            headings.append(heading)
            body = heading.body
        for m in _MID_LABEL.finditer(text, body, le):
            label = m.group("label")
            kind = _plain_kind(label)
            if kind is not None:
                headings.append(_Heading(label.strip(), kind, m.start("label"), m.end()))
    return headings


def _line_heading(text: str, ls: int, le: int) -> _Heading | None:
    """The heading that line ``text[ls:le]`` is or starts with, if any."""
    m = _ATX.fullmatch(text, ls, le)
    if m:
        label = m.group("label").strip("*_ \t")
        name, colon, rest = label.partition(":")
        kind = heading_kind(name)
        if colon and rest.strip() and kind is not None:
            body = text.index(rest.strip(), m.start("label"), le)
            return _Heading(name.strip("*_ \t"), kind, ls, body)
        label = label.rstrip(":").strip("*_ \t")
        return _Heading(label, heading_kind(label), ls, le) if label else None
    m = _BOLD_LABEL.fullmatch(text, ls, le)
    if m:
        label, kind = m.group("label").strip(), heading_kind(m.group("label"))
        if m.group("rest") is None:
            return _Heading(label, kind, ls, le)
        return _Heading(label, kind, ls, m.start("rest")) if kind is not None else None
    m = _BOLD_ALONE.fullmatch(text, ls, le)
    if m:
        label, kind = m.group("label").strip(), heading_kind(m.group("label"))
        return _Heading(label, kind, ls, le) if kind is not None else None
    m = _PLAIN_LABEL.fullmatch(text, ls, le)
    if m:
        kind = _plain_kind(m.group("label"))
        if kind is None:
            return None
        body = m.start("rest") if m.group("rest") is not None else le
        return _Heading(m.group("label").strip(), kind, ls, body)
    m = _PLAIN_ALONE.fullmatch(text, ls, le)
    if m:
        label = m.group("label").strip()
        # capitals alone ("FINAL DIAGNOSIS") read like a heading; other case only when exact
        kind = _plain_kind(label) if label.isupper() else _exact_kind(label)
        return _Heading(label, kind, ls, le) if kind is not None else None
    return None


def _exact_kind(label: str) -> str | None:
    """Kind of a label that is a whole phrase of :data:`HEADING_KINDS`, else None."""
    return HEADING_KINDS.get(normalize_heading(label))


def _plain_kind(label: str) -> str | None:
    """Kind of a plain (unmarked) label, or None when it reads as prose or names no kind."""
    words = normalize_heading(label).split()
    if not words or len(words) > MAX_PLAIN_LABEL_WORDS or PROSE_WORDS.intersection(words):
        return None
    return heading_kind(label)


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` moved inward past whitespace (an empty span collapses at ``start``)."""
    a, b = start, end
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return (a, b) if a < b else (start, start)


def split_sentences(text: str, *, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence and list-item spans in ``text[start:end]`` (rules in the module docstring).

    Returns:
        ``(start, end)`` offsets into ``text``, in order, trimmed of whitespace and decoration.
    """
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    for bs, be in _blocks(text, start, end):
        for i, (a, b) in enumerate(_split_block(text, bs, be)):
            a, b = _trim(text, a, b, block_start=i == 0)
            if a < b and _ALNUM.search(text, a, b):
                spans.append((a, b))
    return spans


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each line in ``text[start:end]``, newline excluded."""
    spans = []
    pos = start
    while True:
        nl = text.find("\n", pos, end)
        if nl < 0:
            spans.append((pos, end))
            return spans
        spans.append((pos, nl))
        pos = nl + 1


def _blocks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Runs of lines that belong together (a paragraph line-wrapped, a list item)."""
    blocks: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    previous = ""
    for ls, le in _lines(text, start, end):
        line = text[ls:le].strip()
        if not line:
            if current:
                blocks.append(current)
            current = None
            continue
        if current and not _BULLET_START.match(text, ls, le) and _continues(previous, line):
            current = (current[0], le)
        else:
            if current:
                blocks.append(current)
            current = (ls, le)
        previous = line
    if current:
        blocks.append(current)
    return blocks


def _continues(previous: str, line: str) -> bool:
    """Whether ``line`` carries on the sentence of the line before it."""
    if line[0].islower() or previous[-1] in ",;-/&(":
        return True
    last = _LAST_WORD.search(previous[-40:])
    return last is not None and previous[-1].isalpha() and last.group(1).lower() in CONTINUING_WORDS


def _split_block(text: str, bs: int, be: int) -> list[tuple[int, int]]:
    """Cut one block at its sentence ends."""
    protected = _protected_spans(text, bs, be)
    cuts = [bs]
    for m in _SENTENCE_END.finditer(text, bs, be):
        if _is_sentence_end(text, m, be) and not _inside(protected, m.start()):
            cuts.append(m.end())
    cuts.append(be)
    return [(a, b) for a, b in itertools.pairwise(cuts) if a < b]


def _is_sentence_end(text: str, m: re.Match[str], be: int) -> bool:
    """Whether punctuation match ``m`` ends a sentence (see the module docstring)."""
    punct = m.group()
    if punct[0] in "。！？":
        return m.end() < be
    after = m.end()
    if after < be and m.group() == "." and not text[after].isspace():
        # OCR drops the space: "in tumor cell processes .Tumor cells are positive"
        tail = re.search(r"([A-Za-z0-9]+)\s*$", text[max(0, m.start() - 24) : m.start()])
        word = tail.group(1) if tail else ""
        return bool(
            re.match(r"[A-Z](?:[a-z]{2,}|[A-Z]{0,4}\d+[A-Za-z]?)\b", text[after : after + 12])
            and not re.match(r"[TNM](?:[0-4Xx]|is)", text[after : after + 3])  # "pT1c.N0"
            and len(word) >= 3
            and (word.islower() or any(ch.isdigit() for ch in word))
            and word.lower() not in ABBREVIATIONS
        )
    if after >= be or not text[after].isspace():
        return False
    nxt = after
    while nxt < be and text[nxt].isspace():
        nxt += 1
    if nxt >= be:
        return False
    c = text[nxt]
    if c.islower() or c in ",;:)]":
        return False
    if punct.rstrip("\"'”’") != ".":
        return True
    word_m = _WORD_BEFORE.search(text, max(0, m.start() - 24), m.start())
    word = word_m.group().lower() if word_m else ""
    if word in ABBREVIATIONS:
        return False
    if word in NUMBER_ABBREVIATIONS and (c.isdigit() or c == "#"):
        return False
    if word_m and len(word) == 1 and word.upper() == word_m.group():
        k = word_m.start()
        if text[k - 2 : k] == ". ":  # "Dr. J." or "J. R.": the word before also ends in "."
            prior = _WORD_BEFORE.search(text, max(0, k - 26), k - 2)
            name = prior.group() if prior else ""
            if name.lower() in TITLES or (len(name) == 1 and name.isupper()):
                return False  # an initial
    return True


def _protected_spans(text: str, bs: int, be: int) -> list[tuple[int, int]]:
    """Outermost matched ``(...)``/``[...]`` spans of at most MAX_PROTECTED_CHARS, in order."""
    stack: list[tuple[str, int]] = []
    pairs: list[tuple[int, int]] = []
    for m in _BRACKET.finditer(text, bs, be):
        ch = m.group()
        if ch in "([":
            stack.append((ch, m.start()))
            continue
        want = "(" if ch == ")" else "["
        for k in range(len(stack) - 1, max(-1, len(stack) - 33), -1):  # bounded look-back
            if stack[k][0] == want:
                if m.end() - stack[k][1] <= MAX_PROTECTED_CHARS:
                    pairs.append((stack[k][1], m.end()))
                del stack[k:]
                break
    pairs.sort()
    merged: list[tuple[int, int]] = []
    for a, b in pairs:
        if merged and a < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    i = bisect.bisect_right(spans, (pos, float("inf"))) - 1
    return i >= 0 and spans[i][0] < pos < spans[i][1]


def _trim(text: str, a: int, b: int, *, block_start: bool) -> tuple[int, int]:
    """Move ``(a, b)`` inward past whitespace, bullet markers (block start only), decoration."""
    lead = (_LEAD if block_start else _LEAD_INNER).match(text, a, b)
    if lead:
        a = lead.end()
    while b > a:  # backwards by hand: a regex search for a decorated tail is quadratic
        if text[b - 1].isspace() or text[b - 1] == "|":
            b -= 1
        elif b - 2 >= a and text[b - 2 : b] in ("**", "__"):
            b -= 2
        else:
            break
    return a, b


def section_lookup(text: str) -> Callable[[int], str]:
    """Offset → section kind for ``text``, from :func:`~pathgls.text.sections.parse_report`.

    When ``text`` is not already clean (cleaning changes it) the sections' offsets would not
    fit, so every offset gets "other" and a warning is logged.
    """
    parsed = parse_report(text)
    if parsed.text != text:
        logger.warning(
            "report text changes under cleaning; entities get section 'other' "
            "(pass parse_report(raw).text to the extractor)"
        )
        return lambda _offset: "other"
    return parsed.section_at
