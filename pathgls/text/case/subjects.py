"""What a clause is about: the tumour, a margin, a node group, a tissue, a lesion, a population.

The subject of a finding is the nearest subject phrase before it in its clause that is not the
object of a preposition ("carcinoma *in the right kidney* invades …" is about the carcinoma), else
the label of its checklist line ("Bronchial margin: uninvolved"), else unknown (the slot's
default applies). Margins keep their name ("bronchial", "deep", "" for all margins), node groups
their station ("left pelvic", "" for the regional nodes as a whole).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pathgls.text.case.vocab import (
    BACKGROUND_WORDS,
    NUMBER_WORDS,
    OTHER_LESION,
    OTHER_POPULATIONS,
    vocabulary,
)
from pathgls.text.vocab_files import load_table

_PREPOSITION = re.compile(
    r"(?:\b(?:in|of|from|within|at|into|through|to|by|with|for|on|near|along|involving|invading|"
    r"infiltrating|including|beyond|under|over|around|adjacent\s+to|between|than|per)\s+"
    r"(?:the\s+|a\s+|an\s+|both\s+|all\s+|its\s+|their\s+)?(?:[\w\-]+\s+){0,2})$",
    re.I,
)
_MARGIN = re.compile(
    r"(?<![A-Za-z])(?:(?:surgical|resection|inked)\s+)?(?:margins?|resection\s+lines?|"
    r"inked\s+surfaces?|surgical\s+edges?)(?![A-Za-z])",
    re.I,
)
_NODES = re.compile(
    r"(?<![A-Za-z])(?:lymph[\s\-]*nodes?|lymph\s+node\s+(?:dissection|packet|tissue)|nodes?|"
    r"LNs?)(?![A-Za-z])",
    re.I,
)
#: Words that end a margin name or node station when reading backwards from the keyword.
_NAME_STOP = frozenset(
    [
        "no",
        "not",
        "in",
        "of",
        "at",
        "on",
        "to",
        "into",
        "by",
        "with",
        "without",
        "involves",
        "involving",
        "involved",
        "extends",
        "extending",
        "invades",
        "invading",
        "reaches",
        "abuts",
        "infiltrates",
        "shows",
        "from",
        "for",
        "and",
        "the",
        "a",
        "an",
        "is",
        "are",
        "was",
        "were",
        "all",
        "any",
        "both",
        "each",
        "some",
        "several",
        "multiple",
        "numerous",
        "other",
        "remaining",
        "additional",
        "single",
        *NUMBER_WORDS,
        "negative",
        "positive",
        "free",
        "involved",
        "uninvolved",
        "carcinoma",
        "tumor",
        "tumour",
        "metastatic",
        "metastasis",
        "malignancy",
        "examined",
        "identified",
        "seen",
        "present",
        "shows",
        "showing",
        "containing",
        "contains",
        "which",
        "that",
    ]
)
_WORD_BACK = re.compile(r"([A-Za-z0-9'/\-#]+)[ \t,]*$")


def _name_before(text: str, start: int, floor: int, keep: int = 4) -> tuple[str, int, bool]:
    """Up to ``keep`` words before ``start`` naming a margin or station, where they begin, and
    whether a partial quantifier ("remaining", "other") stood before them."""
    words: list[str] = []
    pos = start
    partial = False
    while len(words) < keep and pos > floor:
        stripped = text[max(floor, pos - 60) : pos].rstrip()
        if stripped.endswith(")") and "(" in stripped:  # "renal vein (hilar vascular) margin"
            pos = max(floor, pos - 60) + stripped.rindex("(")
            continue
        m = _WORD_BACK.search(text, max(floor, pos - 40), pos)
        if not m or "\n" in text[m.end(1) : pos]:
            break
        w = m.group(1).lower()
        numbered = w.isdigit() and re.search(
            r"\b(?:level|station|group|zone|area)\s*$",
            text[max(floor, m.start(1) - 12) : m.start(1)],
            re.I,
        )  # "level 11 lymph nodes": the number names the station
        if w in _NAME_STOP or (w.isdigit() and not numbered) or w.split("-")[0] in _NAME_STOP:
            # "all other examined margins": the quantifier may stand before a stop word
            partial = w in ("remaining", "other", "additional") or bool(
                re.search(
                    r"\b(?:remaining|other|additional)\s+$",
                    text[max(floor, m.start(1) - 20) : m.start(1)],
                    re.I,
                )
            )
            break
        words.insert(0, w)
        pos = m.start(1)
    return " ".join(words), pos, partial


_TUMOUR = re.compile(
    rf"(?<![A-Za-z])(?P<pre>[A-Za-z\-]+\s+)?(?:the\s+|this\s+|a\s+)?(?:{OTHER_LESION}\s+)?"
    rf"(?:(?:primary|main|dominant|index|largest)\s+)?"
    rf"(?P<w>tumou?rs?|neoplasms?|carcinomas?|masse?s?|lesions?|cancers?|"
    rf"nodules?|neoplastic\s+cells|tumou?r\s+cells|malignant\s+cells)"
    rf"(?!\s+(?:focus|foci|nodules?|deposits?)\b)(?![A-Za-z])",
    re.I,
)
#: Words before "tumour" that keep it the tumour ("the primary tumor", "invasive carcinoma").
_TUMOUR_PRE = frozenset(
    {
        "the",
        "this",
        "a",
        "an",
        "primary",
        "main",
        "dominant",
        "index",
        "largest",
        "residual",
        "invasive",
        "infiltrating",
        "malignant",
        "viable",
        "entire",
        "whole",
        "of",
        "in",
        "with",
        "and",
        "by",
        "no",
        "without",
        "for",
        "that",
        "which",
        "is",
        "are",
        "was",
        "were",
        "shows",
        "show",
        "showing",
        "contains",
        "identified",
    }
)
#: Diagnosis names that name no particular type: "the carcinoma" is the tumour.
GENERIC_CONCEPTS = frozenset(
    {"tumor", "mass", "malignancy", "carcinoma", "invasive carcinoma", "benign neoplasm"}
)
_PART_REF = re.compile(
    r"(?<![A-Za-z])(?i:part|specimen)\s+#?\s*(?P<p>[A-Z]|\d{1,2})(?![A-Za-z0-9])"
)
_OTHER = re.compile(rf"(?<![A-Za-z])(?:{OTHER_LESION})\s+(?:[\w.\-]+\s+){{0,4}}$", re.I)
_BACKGROUND = re.compile(
    rf"(?<![A-Za-z])(?:{BACKGROUND_WORDS})(?:\s+[\w\-]+){{0,3}}?\s+(?:tissue|parenchyma|"
    r"mucosa|epithelium|glands?|ducts?|kidney|lung|liver|breast|prostate|brain|pancreas|"
    r"endometrium|myometrium|bladder|urothelium|colon|bowel|ovary|cortex|stroma|"
    r"fat|lobules?|acini|cells|areas?)(?![A-Za-z])",
    re.I,
)
_POPULATION = re.compile(rf"(?<![A-Za-z])(?:{OTHER_POPULATIONS})(?![A-Za-z])", re.I)
_TISSUE = re.compile(
    r"(?<![A-Za-z])(?:(?:left|right)\s+)?(?P<w>adrenal(?:\s+glands?)?|ureter(?:al)?s?(?:\s+stumps?)?|"
    r"seminal\s+vesicles?|vas(?:a)?\s+deferen(?:s|tia)|fallopian\s+tubes?|ovar(?:y|ies)|omentum|"
    r"appendix|gallbladder|spleen|skin|nipple|fibro-?\s?adipose\s+tissue|adipose\s+tissue|"
    r"skeletal\s+muscle|soft\s+tissues?|bone|cartilage|nerves?|vessels?|veins?|arter(?:y|ies)|"
    r"urethra|bladder\s+neck|cervix|endometrium|myometrium|serosa|uterus|pleura|bronch(?:us|i)|"
    r"thymus|diaphragm|chest\s+wall|stomach|duodenum|ampulla|bile\s+ducts?|liver|pancreas|"
    r"colon|small\s+(?:bowel|intestine)|rectum|esophagus|kidneys?|lungs?|lobes?|brain|dura|"
    r"prostate(?:\s+gland)?|(?:urinary\s+)?bladder|vagina|testis|spermatic\s+cord|thyroid|"
    r"parathyroid|salivary\s+gland|tonsil|larynx|tongue|scar|polyp|cyst|"
    r"(?:tissue|fragments?|specimen)s?)(?![A-Za-z])",
    re.I,
)
_ADJECTIVE_VERB = re.compile(r"(?:infiltrating|invading|involving)\b", re.I)
_CONTAINER = re.compile(
    r"(?:portions?|segments?|pieces?|fragments?|sections?|strips?|sample)\s+of\s+(?:the\s+)?$", re.I
)
_NAME_DROP = re.compile(
    r"\b(?:the|all|a|an|of|and|or|both|final|closest|nearest|specimen|surgical|resection|"
    r"resected|inked|black|blue|green|red|yellow|orange|violet|purple|examined|remaining|other|multiple|several|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve|\d+|lymph|nodes?|margins?|are|is|were|was|with|no|status|"
    r"involvement|by|invasive|carcinoma|tumou?r|histologic|assessment|distance|from|to|regional|"
    r"number|total|en|face|sections?|additional|new|separate|received|labeled|including|"
    r"identified|submitted|bilateral|possible|dissection|packet|tissue|fat|adipose|negative|"
    r"positive|uninvolved|involved)\b",
    re.I,
)
_PROCEDURE = re.compile(
    r"\b(?:lymphadenectomy|excision|excisional|biopsy|biopsies|removal|bloc|sampling|dissected|"
    r"harvested)\b"
)
_PARTIAL = re.compile(r"\b(?:remaining|other|additional|rest|remainder|residual)\b", re.I)
_CLOSEST = re.compile(r"\b(?:closest|nearest)\b", re.I)


@dataclass(frozen=True)
class ClauseSubject:
    """The subject phrase of a clause (a subject *model* is :class:`pathgls.subjects.Subject`)."""

    kind: str  # tumour, lesion, margin, nodes, tissue, background, population
    name: str = ""  # lesion concept, margin name, station, tissue word
    start: int = -1
    end: int = -1
    partial: bool = False  # "the remaining nodes", "other margins"
    other: bool = False  # "a second tumour", "another nodule"


def clean_name(words: str, *, station: bool = False) -> str:
    """A margin name or node station as a key: "Left Pelvic" → "left pelvic". A station also
    drops the procedure and a part title's letter ("Left pelvic lymphadenectomy (K)" → "left
    pelvic"), so that a part title and the text name one station alike."""
    out = _NAME_DROP.sub(" ", words.lower().replace("-", " ").replace("/", " "))
    if station:
        out = _PROCEDURE.sub(" ", out)
    out = re.sub(r"[^a-z0-9 ]+", " ", out)
    kept = out.split()
    if station and len(kept) > 1 and len(kept[-1]) == 1:
        kept = kept[:-1]
    name = " ".join(kept)
    return name if station else _MARGIN_SYNONYMS.get(name, name)


#: "the neoplastic astrocytes", "tumour gemistocytes": the tumour's own cells.
NEOPLASTIC_BEFORE = re.compile(
    r"\b(?:neoplastic|tumou?r(?:al)?|malignant|lesional|atypical)\s+$", re.I
)
#: Margin names that name one margin: a nephrectomy's renal vein margin is its vascular one.
_MARGIN_SYNONYMS = load_table("margin_synonyms").mapping("name", "margin")
_PARTIAL_LEAD = re.compile(r"\b(?:remaining|other|additional|rest\s+of\s+the)\s*$", re.I)


def _partial_lead(text: str, start: int, pos: int) -> bool:
    """ "The remaining\nmargins": a quantifier on the line before the name still makes it a
    part of the margins (or nodes), not all of them."""
    return bool(_PARTIAL_LEAD.search(text, max(start, pos - 25), pos))


def _subjects(text: str, start: int, end: int) -> list[ClauseSubject]:
    vocab = vocabulary()
    found: list[ClauseSubject] = []
    for m in _MARGIN.finditer(text, start, end):
        name, a, partial = _name_before(text, m.start(), start)
        key = "closest" if _CLOSEST.search(name) else clean_name(name)
        partial = partial or bool(_PARTIAL.search(name)) or _partial_lead(text, start, a)
        found.append(ClauseSubject("margin", key, a, m.end(), partial))
    for m in _NODES.finditer(text, start, end):
        name, a, partial = _name_before(text, m.start(), start)
        partial = partial or _partial_lead(text, start, a)
        found.append(ClauseSubject("nodes", clean_name(name, station=True), a, m.end(), partial))
    for m in vocab.diagnoses.finditer(text, start, end):
        term = vocab.diagnosis(m.group())
        if term is None:
            continue
        other = bool(_OTHER.search(text, max(start, m.start() - 40), m.start()))
        kind = "tumour" if term.concept in GENERIC_CONCEPTS else "lesion"
        found.append(ClauseSubject(kind, term.concept, m.start(), m.end(), other=other))
    for m in _PART_REF.finditer(text, start, end):
        found.append(ClauseSubject("part", m.group("p").upper(), m.start(), m.end()))
    for m in _TUMOUR.finditer(text, start, end):
        w = m.group("w").lower()
        other = bool(
            re.search(
                rf"\b(?:{OTHER_LESION})\s+(?:[\w.\-]+\s+){{0,4}}$",
                text[max(start, m.start("w") - 40) : m.start("w")],
                re.I,
            )
        )
        pre = (m.group("pre") or "").strip().lower()
        if pre and pre not in _TUMOUR_PRE and not re.fullmatch(r"the|this|a|an", pre):
            other = True  # "interstitial cell tumor", "granular cell tumor": another lesion
        kind = "tumour"
        found.append(ClauseSubject(kind, w, m.start("w"), m.end(), other=other))
    for m in _BACKGROUND.finditer(text, start, end):
        found.append(ClauseSubject("background", m.group().lower(), m.start(), m.end()))
    for m in _POPULATION.finditer(text, start, end):
        if "lymph" not in m.group().lower() and NEOPLASTIC_BEFORE.search(
            text, max(start, m.start() - 20), m.start()
        ):
            # "neoplastic astrocytes"
            found.append(ClauseSubject("tumour", "cells", m.start(), m.end()))
            continue
        found.append(ClauseSubject("population", m.group().lower(), m.start(), m.end()))
    for m in _TISSUE.finditer(text, start, end):
        found.append(ClauseSubject("tissue", m.group("w").lower(), m.start(), m.end()))
    return found


_PREDICATE_NEXT = re.compile(
    r"\s*(?:\([^)]{0,40}\)\s*)?(?:is|are|was|were|:|,?\s*(?:negative|positive|free|involved|"
    r"uninvolved|clear|not\s+involved))\b",
    re.I,
)


def subject_before(
    text: str,
    start: int,
    pos: int,
    *,
    label: tuple[int, int] | None = None,
    skip: frozenset[str] = frozenset(),
) -> ClauseSubject | None:
    """The subject of a finding at ``pos`` in a clause starting at ``start`` (see module doc).

    ``label``: the span of the statement's checklist label, used when the clause names none;
    ``skip``: subject kinds to look past (a denied tumour word is no subject of itself).
    A phrase after a preposition is a subject still when a predicate follows it ("through the
    capsule; inked radial margins are free").
    """
    best: ClauseSubject | None = None
    for s in _subjects(text, start, pos):
        if s.end > pos or s.kind in skip:
            continue
        prep = _PREPOSITION.search(text, max(start, s.start - 60), s.start)
        if prep is not None and _ADJECTIVE_VERB.match(text, prep.start()):
            lead = text[start : prep.start()]
            if not lead.strip() or re.search(r"(?:\b(?:an?|the)|[,;:(])\s*$", lead, re.I):
                prep = None  # "Infiltrating squamous cell carcinoma": an adjective
        if (
            prep is not None
            and not _CONTAINER.search(text, max(start, s.start - 40), s.start)
            and not _PREDICATE_NEXT.match(text, s.end, min(len(text), s.end + 60))
        ):
            continue
        if best is None or s.start > best.start or (s.start == best.start and s.end > best.end):
            best = _prefer(best, s)
    if best is None and label is not None:
        cands = [s for s in _subjects(text, label[0], label[1]) if s.kind not in skip]
        if cands:
            best = max(cands, key=lambda s: (s.end, -_RANK.get(s.kind, 9)))
    return best


_RANK = {
    "margin": 0,
    "nodes": 1,
    "part": 2,
    "population": 3,
    "background": 4,
    "lesion": 5,
    "tumour": 6,
}


def _prefer(old: ClauseSubject | None, new: ClauseSubject) -> ClauseSubject:
    """Of two overlapping subjects, the more specific ("tumor cells" over "cells")."""
    if old is None or new.start >= old.end:
        return new
    return new if _RANK.get(new.kind, 9) < _RANK.get(old.kind, 9) else old


_LOCATIVE = re.compile(
    r"\s*(?:is\s+|are\s+|was\s+|were\s+)?(?:identified|seen|present|noted|found|detected)?\s*"
    r"(?:in|at|within|involving|of)\s+(?:the\s+|any\s+|all\s+)?",
    re.I,
)


def location_after(text: str, pos: int, end: int) -> ClauseSubject | None:
    """The place a denial names after the finding ("no carcinoma *in eight lymph nodes*")."""
    m = _LOCATIVE.match(text, pos, end)
    if not m:
        return None
    cands = [s for s in _subjects(text, m.end(), min(end, m.end() + 60)) if s.start - m.end() < 30]
    if not cands:
        return None
    first = min(cands, key=lambda s: (s.start, _RANK.get(s.kind, 9)))
    return first if first.kind not in ("tumour",) else None


def subjects_in(text: str, start: int, end: int) -> list[ClauseSubject]:
    """Every subject phrase in ``text[start:end]`` (for lesion and population cues)."""
    return _subjects(text, start, end)
