"""The case model's vocabulary: what a statement can be about and which slot a phrase fills.

Regular expressions over the words pathologists write (and their OCR and all-caps variants),
with the canonical key each one gives:

* **subjects** — the thing a clause is about: the tumour, a margin (by name), a lymph-node
  group (by station), background or another tissue, a second lesion;
* **invasion kinds** — lymphovascular, lymphatic (small vessel), venous (large vessel), vascular,
  perineural: each its own key, never merged;
* **structures** — what a tumour may involve (renal sinus, perinephric fat, seminal vesicle,
  muscularis propria, visceral pleura, myometrium, …), so "invades X", "X: involved" and "X: no
  tumour" fill the same ``extent:X`` slot;
* **findings** — necrosis, microvascular proliferation, …

The patterns and word lists are data in ``pathgls/resources/vocab/`` (``slot_synonyms.tsv``,
``subject_words.tsv``, ``organ_words.tsv``, ``confined_structures.tsv``), read by
:mod:`pathgls.text.vocab_files`. Diagnosis names and IHC markers come from the project's lexicon
(:mod:`pathgls.text.lexicon`); their compatibility families from ``histotypes.tsv``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from types import MappingProxyType

from pathgls.io.resources import resource
from pathgls.text.lexicon import Term, load_lexicon
from pathgls.text.vocab_files import load_table


def _alt(*forms: str) -> str:
    return "(?:" + "|".join(forms) + ")"


def _synonyms(slot: str) -> MappingProxyType[str, tuple[str, ...]]:
    """Key → its pattern alternatives, for one slot of ``slot_synonyms.tsv`` (file order)."""
    return load_table("slot_synonyms").groups("key", "pattern", slot=slot)


def _words(name: str) -> str:
    """The alternation of word list ``name`` of ``subject_words.tsv`` (rows in file order)."""
    return load_table("subject_words").alternation("word", list=name)


# --- invasion kinds ---------------------------------------------------------------------------

#: Invasion kind → pattern. Lymphovascular, lymphatic, venous, vascular and perineural invasion
#: are different properties (a report may state venous invasion present and lymphatic absent).
INVASION_PATTERNS: MappingProxyType[str, str] = MappingProxyType(
    {k: _alt(*forms) for k, forms in _synonyms("invasion").items()}
)

# --- structures a tumour can involve -----------------------------------------------------------

#: Structure → pattern (the key of the ``extent`` slot). Written as they are named in reports.
STRUCTURE_PATTERNS: MappingProxyType[str, str] = MappingProxyType(
    load_table("slot_synonyms").alternations("key", "pattern", slot="extent")
)

#: Organ → structures it is confined within ("organ-confined" denies involving these).
CONFINED: MappingProxyType[str, tuple[str, ...]] = load_table("confined_structures").groups(
    "organ", "structure"
)
_CONFINED_ORGAN = load_table("organ_words").alternations("organ", "pattern", list="confined")

# --- other findings ------------------------------------------------------------------------------

#: Finding → pattern: present/absent properties of a tumour besides invasion and extent.
FINDING_PATTERNS: MappingProxyType[str, str] = MappingProxyType(
    load_table("slot_synonyms").alternations("key", "pattern", slot="finding")
)

# --- subjects -----------------------------------------------------------------------------------

#: Words naming the tumour itself (not a particular type): "the tumor", "the mass".
TUMOUR_WORDS = _words("tumour")
#: A mention of a tumour: one of :data:`TUMOUR_WORDS`, a named "-oma" or a "primary" ("three
#: foci of adenocarcinoma", "a second primary").
TUMOUR_MENTION = re.compile(rf"\b(?:{TUMOUR_WORDS})\b|\b\w+omas?\b|\bprimar\w*", re.I)
#: Words that make a clause about non-tumour tissue ("background", "adjacent").
BACKGROUND_WORDS = _words("background")
#: Cell populations other than the tumour cells (for IHC results).
OTHER_POPULATIONS = _words("other_population")
#: Ordinal words that point to another lesion than "the" tumour.
_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = (
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
#: Number words a count is written in ("eighteen lymph nodes", "no tumour", "twenty");
#: "twenty-one" is a tens word and a unit (see ``read_staging._count``).
UNIT_WORDS: MappingProxyType[str, int] = MappingProxyType({w: i + 1 for i, w in enumerate(_UNITS)})
TENS_WORDS: MappingProxyType[str, int] = MappingProxyType(
    {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60}
)
NUMBER_WORDS: MappingProxyType[str, int] = MappingProxyType(
    {
        "zero": 0,
        "none": 0,
        **UNIT_WORDS,
        **{w: 10 + i for i, w in enumerate(_TEENS)},
        **TENS_WORDS,
    }
)

OTHER_LESION = _words("other_lesion")

#: Words that say a part (or report) holds several tumours ("two nodules", "a separate
#: focus of …", "tumor #2", "multifocal").
MULTIPLE_TUMOURS = re.compile(
    r"\b(?:(?:two|three|four|five|multiple|several|separate|second|synchronous|additional|"
    r"another|satellite|smaller|other|distinct|bilateral|independent|2|3)\s+(?:[\w\-]+\s+){0,4}"
    r"(?:tumou?rs?|nodules?|masses|mass|lesions?|foci|focus|carcinomas?|neoplasms?|primar(?:y|ies)|"
    r"tumou?r\s+nodules?)|(?:separate|second|synchronous|distinct)\s+(?:[\w\-]+,?\s+){0,5}?"
    r"(?:carcinoma|tumou?r|neoplasm|mass|nodule)|multifocal|multicentric|tumou?r\s*(?:#|no\.?|number)\s*\d|"
    r"(?:nodule|lesion|mass|focus)\s*#?\s*[2-9]|collision|incidental|(?:largest|larger|smaller)\s+"
    r"(?:\w+\s+){0,2}(?:nodules?|foci|focus|tumou?rs?|lesions?|masses))\b",
    re.I,
)

_LAB = re.compile


@dataclass(frozen=True)
class Vocabulary:
    """Compiled patterns of the case model (built once per process)."""

    invasion: tuple[tuple[str, re.Pattern[str]], ...]
    structures: tuple[tuple[str, re.Pattern[str]], ...]
    findings: tuple[tuple[str, re.Pattern[str]], ...]
    confined: tuple[tuple[str, re.Pattern[str]], ...]
    diagnoses: re.Pattern[str]
    diagnosis_terms: MappingProxyType[str, Term]
    markers: re.Pattern[str]
    marker_terms: MappingProxyType[str, Term]
    histotypes: MappingProxyType[str, str]

    def diagnosis(self, form: str) -> Term | None:
        """The diagnosis term a matched surface form names."""
        return self.diagnosis_terms.get(form) or self.diagnosis_terms.get(_key(form))

    def marker(self, form: str) -> Term | None:
        """The marker term a matched surface form names."""
        return self.marker_terms.get(form) or self.marker_terms.get(_key(form))

    def family(self, concept: str) -> str | None:
        """The histotype family path of a diagnosis concept ("carcinoma/adeno/endometrioid")."""
        return self.histotypes.get(concept)


def _key(form: str) -> str:
    return " ".join(form.lower().replace("-", " ").split())


def _compile(pairs: MappingProxyType[str, str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple(
        (k, re.compile(rf"(?<![A-Za-z])(?:{p})(?![A-Za-z])", re.I)) for k, p in pairs.items()
    )


def _terms_regex(terms: list[Term]) -> tuple[re.Pattern[str], dict[str, Term]]:
    """One alternation of every surface form (longest first), and form → term."""
    table: dict[str, Term] = {}
    exact: dict[str, Term] = {}
    for t in terms:
        for f in t.forms:
            table.setdefault(_key(f), t)
        for f in t.exact_forms:
            exact.setdefault(f, t)
    forms = sorted(table, key=len, reverse=True)
    parts = [r"\s*[\-\s]\s*".join(re.escape(w) for w in f.split()) for f in forms]
    ci = "|".join(parts)
    cs = "|".join(re.escape(f) for f in sorted(exact, key=len, reverse=True))
    pattern = (
        rf"(?<![A-Za-z0-9])(?:(?i:{ci})|{cs})(?![A-Za-z0-9])"
        if cs
        else (rf"(?<![A-Za-z0-9])(?i:{ci})(?![A-Za-z0-9])")
    )
    return re.compile(pattern), {**table, **exact}


def _histotypes() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in resource("histotypes.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        concept, family = line.split("\t")[:2]
        out[concept.strip()] = family.strip()
    return out


@functools.cache
def vocabulary() -> Vocabulary:
    """The compiled vocabulary (the lexicon is read once per process)."""
    lex = load_lexicon()
    dx = [t for t in lex.terms if t.type == "pathological_diagnosis"]
    mk = [t for t in lex.terms if t.type == "ihc_marker"]
    dx_re, dx_terms = _terms_regex(dx)
    mk_re, mk_terms = _terms_regex(mk)
    confined = tuple(
        (organ, re.compile(rf"(?<![A-Za-z])(?:{p})(?![A-Za-z])", re.I))
        for organ, p in _CONFINED_ORGAN.items()
    )
    return Vocabulary(
        invasion=_compile(INVASION_PATTERNS),
        structures=_compile(STRUCTURE_PATTERNS),
        findings=_compile(FINDING_PATTERNS),
        confined=confined,
        diagnoses=dx_re,
        diagnosis_terms=MappingProxyType(dx_terms),
        markers=mk_re,
        marker_terms=MappingProxyType(mk_terms),
        histotypes=MappingProxyType(_histotypes()),
    )
