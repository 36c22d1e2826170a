"""The project-owned pathology lexicon: loading, validation and the attribute vocabulary.

The lexicon is data (``pathgls/resources/lexicon/``), written for pathgls from pathology
knowledge, in tab-separated files readable with the standard library:

- term files (``sites.tsv``, ``diagnoses.tsv``, ``findings.tsv``, ``markers.tsv``), header
  ``concept  type  synonyms  attributes``: one concept per row, its ``|``-separated surface forms
  (the concept name itself is always one) and ``key=value;key=value`` attributes;
- ``patterns.tsv``, header ``concept  type  regex  attributes``: regular-expression rules (a
  regex pass of pathgls, not TargetMatcher token patterns) for numeric and pattern forms:
  Gleason scores, grade numbers, TNM, stage groups, R status, sizes, node counts, mitotic
  counts, IHC signs and scores. ``derive=NAME`` names the function of
  :mod:`pathgls.text.lexicon_derive` that turns the match's named groups into attributes
  (grade from a number, ...);
- ``spellings.tsv``, header ``american  british``: spelling fragments ("tumor" → "tumour").

The matching rules for ConText live beside them in ``context_rules.json`` (medspaCy's format,
read by :mod:`pathgls.text.lexicon_extractor`).

Lines starting with ``#`` and blank lines are ignored. A surface form starting with ``=`` matches
its exact case only (``=ER`` never matches the word "er"); all others match case-insensitively.
The loader adds spelling variants: hyphen ↔ space ("high-grade" / "high grade", two-word forms
only for space → hyphen) and the British spellings of ``spellings.tsv``. A variant that collides
with a written form of another concept is dropped; two written forms that collide are an error;
rows repeating a concept (same type and attributes) are merged.

Grades from numbers (``grade_number``): three-tier systems read 1 low, 2 intermediate, 3 high;
four-tier ones (Fuhrman, WHO/ISUP, "x/4") 1-2 low, 3-4 high; a range ("3-4/4") takes its upper
end. Gleason sums: ≤ 6 low, 7 intermediate, ≥ 8 high (grade group from the pattern); ISUP grade
groups: 1 low, 2-3 intermediate, 4-5 high.

The attribute keys and values are a closed vocabulary (constants below) shared with the
offline clinical contradiction rules; any other key or value is an error naming file and line.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from pathgls.errors import LexiconError
from pathgls.io.resources import resource
from pathgls.text.base import ENTITY_TYPES

#: Folder of the lexicon shipped with pathgls.
DEFAULT_LEXICON_DIR = resource("lexicon")

#: ``behavior`` of a diagnosis (also on metastasis and a few descriptors).
BEHAVIORS = (
    "malignant",
    "in_situ",
    "premalignant",
    "benign_neoplasm",
    "benign_process",
    "borderline",
)
#: ``grade`` values (numeric grades, Gleason sums and ISUP grade groups are mapped onto these).
GRADES = ("low", "intermediate", "high")
#: ``result`` of a stain, a molecular test, a margin or a node count.
RESULTS = ("positive", "negative", "equivocal")
#: ``implies``: what a finding says about the lesion (comma-separated when several).
IMPLIES = ("malignant", "high_grade", "low_grade")
#: ``group``: finding families the contradiction rules reason about. Only tight families are
#: listed, where a member affirmed and another member negated contradict each other ("no
#: necrosis" vs "comedo necrosis"); loose families (architecture, inflammation) carry no group.
GROUPS = (
    "invasion",
    "metastasis",
    "lvi",
    "pni",
    "extranodal_extension",
    "margin",
    "necrosis",
    "mitoses",
    "pleomorphism",
    "atypia",
    "keratinization",
    "mucin",
    "calcification",
)
#: ``depends_on``: what a diagnosis presupposes (invasive carcinoma → invasion).
DEPENDS_ON = ("invasion", "metastasis")
#: ``lineage`` of a neoplasm.
LINEAGES = (
    "epithelial",
    "mesenchymal",
    "hematolymphoid",
    "melanocytic",
    "neuroendocrine",
    "germ_cell",
    "glial",
    "neural",
    "mesothelial",
    "trophoblastic",
    "mixed",
)
YES_NO = ("yes", "no")
INTENSITIES = ("weak", "moderate", "strong")
DISTRIBUTIONS = ("focal", "patchy", "diffuse")
EXTENTS = ("minimal", "focal", "multifocal", "extensive")
#: Grading/staging systems named by ``system``.
SYSTEMS = ("gleason", "isup", "nottingham", "figo", "fuhrman", "who", "masaoka", "ajcc")
#: ``derive`` functions a pattern rule may name.
DERIVATIONS = (
    "gleason",
    "grade_group",
    "grade_number",
    "tnm",
    "stage_group",
    "r_status",
    "size",
    "node_count",
    "mitotic_count",
    "ihc_sign",
    "ihc_score",
)

#: Allowed values per attribute key. ``None``: checked otherwise (``site``/``part_of`` must name
#: an anatomical_site concept, ``positive``/``total`` are non-negative integers).
ATTRIBUTE_VALUES: Mapping[str, tuple[str, ...] | None] = MappingProxyType(
    {
        "behavior": BEHAVIORS,
        "invasive": YES_NO,
        "depends_on": DEPENDS_ON,
        "group": GROUPS,
        "implies": IMPLIES,
        "grade": GRADES,
        "result": RESULTS,
        "lineage": LINEAGES,
        "intensity": INTENSITIES,
        "distribution": DISTRIBUTIONS,
        "extent": EXTENTS,
        "system": SYSTEMS,
        "site": None,
        "part_of": None,
        "positive": None,
        "total": None,
        "n_positive": None,
        "gleason_sum_stated": None,
        "n_total": None,
        "derive": DERIVATIONS,
        # "state=normal": the diagnosis describes a tissue as normal or reactive, not a lesion
        "state": ("normal",),
    }
)
#: Keys whose value may list several allowed values, comma-separated.
#: Named regex groups each ``derive`` function needs (one of the alternatives).
REQUIRED_GROUPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "gleason": (("g1", "g2"), ("gs",)),
    "grade_group": (("gg",),),
    "grade_number": (("num",),),
    "stage_group": (("stage",),),
    "r_status": (("r",),),
    "size": (("dims", "unit"),),
    "node_count": (("pos", "tot"),),
    "mitotic_count": (("count",),),
}

MULTI_VALUED = frozenset({"implies", "depends_on"})

_TERM_HEADER = ("concept", "type", "synonyms", "attributes")
_PATTERN_HEADER = ("concept", "type", "regex", "attributes")
_SPELLING_HEADER = ("american", "british")
_HEADERS = (_TERM_HEADER, _PATTERN_HEADER, _SPELLING_HEADER)


@dataclass(frozen=True)
class Term:
    """One concept of the lexicon with every surface form that names it."""

    concept: str
    type: str
    forms: tuple[str, ...]  # case-insensitive surface forms (written and generated), lowercase
    exact_forms: tuple[str, ...]  # case-sensitive surface forms, as written
    attributes: Mapping[str, str]
    source: str  # "file:line" of the (first) row


@dataclass(frozen=True)
class PatternRule:
    """A regular-expression rule producing entities of one concept and type."""

    concept: str
    type: str
    regex: re.Pattern[str]
    attributes: Mapping[str, str]  # without ``derive``
    derive: str | None
    source: str


@dataclass(frozen=True)
class Lexicon:
    """Terms and pattern rules loaded from one or more files."""

    terms: tuple[Term, ...]
    patterns: tuple[PatternRule, ...]
    sources: tuple[str, ...]

    @property
    def n_surface_forms(self) -> int:
        """Number of distinct surface forms (written and generated)."""
        return sum(len(t.forms) + len(t.exact_forms) for t in self.terms)

    def counts_by_type(self) -> dict[str, dict[str, int]]:
        """Per entity type: number of ``concepts`` and of ``forms``."""
        out: dict[str, dict[str, int]] = {}
        for t in self.terms:
            c = out.setdefault(t.type, {"concepts": 0, "forms": 0})
            c["concepts"] += 1
            c["forms"] += len(t.forms) + len(t.exact_forms)
        return out

    def term(self, concept: str, type_: str | None = None) -> Term:
        """The term of ``concept`` (and ``type_`` when given); KeyError when absent."""
        for t in self.terms:
            if t.concept == concept and (type_ is None or t.type == type_):
                return t
        raise KeyError(concept)

    def lookup(self, form: str) -> Term | None:
        """The term a surface form belongs to (exact case first, then case-insensitive)."""
        for t in self.terms:
            if form in t.exact_forms:
                return t
        low = _norm(form)
        for t in self.terms:
            if low in t.forms:
                return t
        return None


def load_lexicon(paths: Sequence[str | Path] | None = None) -> Lexicon:
    """Load and validate a lexicon.

    Args:
        paths: Files or folders (every ``*.tsv`` inside); None for the lexicon shipped with
            pathgls. Results are cached per process for the same list of paths.

    Returns:
        The validated :class:`Lexicon`.

    Raises:
        LexiconError: A file is missing or malformed, or uses an unknown type, attribute key or
            value (the message names the file and line).
    """
    key = (DEFAULT_LEXICON_DIR,) if paths is None else tuple(Path(p) for p in paths)
    return _load_cached(key)


@functools.lru_cache(maxsize=8)
def _load_cached(paths: tuple[Path, ...]) -> Lexicon:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(p.glob("*.tsv")))
        elif p.is_file():
            files.append(p)
        else:
            raise LexiconError(f"lexicon path not found: {p}")
    if not files:
        raise LexiconError(f"no lexicon files (*.tsv) in {', '.join(map(str, paths))}")
    tables = [_read_table(f) for f in files]
    rows = [
        (source, fields, kind == _PATTERN_HEADER)
        for kind, table in tables
        if kind != _SPELLING_HEADER
        for source, fields in table
    ]
    spellings = [(f[0], f[1]) for kind, t in tables if kind == _SPELLING_HEADER for _, f in t]
    sites = {f[0] for _, f, is_pattern in rows if not is_pattern and f[1] == "anatomical_site"}
    terms: dict[tuple[str, str], dict] = {}
    patterns: list[PatternRule] = []
    for source, fields, is_pattern in rows:
        concept, type_, body, attr_text = fields
        _check_concept_type(source, concept, type_)
        attrs = parse_attributes(attr_text, source=source, sites=sites)
        if is_pattern:
            patterns.append(_pattern_rule(source, concept, type_, body, attrs))
            continue
        if "derive" in attrs:
            raise LexiconError(f"{source}: 'derive' is only allowed in pattern files")
        entry = terms.setdefault(
            (concept, type_), {"attrs": attrs, "source": source, "written": []}
        )
        if entry["attrs"] != attrs:
            raise LexiconError(
                f"{source}: concept {concept!r} ({type_}) repeats {entry['source']} "
                "with different attributes"
            )
        entry["written"].extend([concept, *(s.strip() for s in body.split("|") if s.strip())])
    return Lexicon(
        terms=_build_terms(terms, spellings),
        patterns=tuple(patterns),
        sources=tuple(str(f) for f in files),
    )


def parse_attributes(
    text: str, *, source: str = "<attributes>", sites: Iterable[str] | None = None
) -> dict[str, str]:
    """Parse and validate ``key=value;key=value`` (an empty string gives ``{}``).

    Args:
        text: The attribute column.
        source: Where the text comes from, for error messages ("file:line").
        sites: Known anatomical_site concepts for ``site``/``part_of``; None skips that check.

    Raises:
        LexiconError: Bad syntax, an unknown key or a value outside the vocabulary.
    """
    out: dict[str, str] = {}
    for item in (i.strip() for i in text.split(";")):
        if not item:
            continue
        key, sep, value = (s.strip() for s in item.partition("="))
        if not sep or not key or not value:
            raise LexiconError(f"{source}: attribute {item!r} is not key=value")
        if key not in ATTRIBUTE_VALUES:
            raise LexiconError(
                f"{source}: unknown attribute key {key!r}; known: {', '.join(ATTRIBUTE_VALUES)}"
            )
        if key in out:
            raise LexiconError(f"{source}: attribute {key!r} given twice")
        allowed = ATTRIBUTE_VALUES[key]
        values = [v.strip() for v in value.split(",")] if key in MULTI_VALUED else [value]
        for v in values:
            if allowed is not None and v not in allowed:
                raise LexiconError(
                    f"{source}: {key}={v!r} is not allowed; allowed: {', '.join(allowed)}"
                )
            if key in ("positive", "total") and not v.isdigit():
                raise LexiconError(f"{source}: {key}={v!r} must be a non-negative integer")
            if key in ("site", "part_of") and sites is not None and v not in sites:
                raise LexiconError(f"{source}: {key}={v!r} is not an anatomical_site concept")
        out[key] = ",".join(values)
    return out


def _read_table(path: Path) -> tuple[tuple[str, ...], list[tuple[str, list[str]]]]:
    """The header and the ``(source, fields)`` rows of one file (comments and blanks skipped)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise LexiconError(f"cannot read lexicon file {path}: {e}") from e
    rows: list[tuple[str, list[str]]] = []
    header: tuple[str, ...] | None = None
    for no, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.split("\t")]
        source = f"{path.name}:{no}"
        if header is None:
            header = tuple(fields)
            if header not in _HEADERS:
                known = " or ".join(" TAB ".join(h) for h in _HEADERS)
                raise LexiconError(f"{source}: header must be {known}, got {line!r}")
            continue
        if len(fields) != len(header):
            raise LexiconError(
                f"{source}: expected {len(header)} tab-separated columns, got {len(fields)}"
            )
        rows.append((source, fields))
    if header is None:
        raise LexiconError(f"{path.name}: empty lexicon file")
    return header, rows


def _check_concept_type(source: str, concept: str, type_: str) -> None:
    if not concept:
        raise LexiconError(f"{source}: empty concept")
    if concept != concept.lower():
        raise LexiconError(f"{source}: concept {concept!r} must be lowercase")
    if type_ not in ENTITY_TYPES:
        raise LexiconError(
            f"{source}: unknown entity type {type_!r}; known: {', '.join(ENTITY_TYPES)}"
        )


def _pattern_rule(
    source: str, concept: str, type_: str, regex: str, attrs: dict[str, str]
) -> PatternRule:
    try:
        compiled = re.compile(regex)
    except re.error as e:
        raise LexiconError(f"{source}: invalid regex: {e}") from e
    derive = attrs.pop("derive", None)
    if derive is not None:
        needed = REQUIRED_GROUPS.get(derive, ((),))
        if not any(set(n) <= set(compiled.groupindex) for n in needed):
            raise LexiconError(
                f"{source}: derive={derive} needs named groups "
                + " or ".join("+".join(n) for n in needed)
            )
    return PatternRule(concept, type_, compiled, MappingProxyType(attrs), derive, source)


def _norm(form: str) -> str:
    return " ".join(form.lower().split())


def _variants(form: str, spellings: Sequence[tuple[str, str]]) -> set[str]:
    out = {form}
    if "-" in form:
        out.add(form.replace("-", " "))
    words = form.split(" ")
    if len(words) == 2 and all(w.isalpha() for w in words):
        out.add("-".join(words))
    for us, gb in spellings:
        out |= {v.replace(us, gb) for v in list(out) if us in v}
    return out


def _build_terms(
    entries: dict[tuple[str, str], dict], spellings: Sequence[tuple[str, str]]
) -> tuple[Term, ...]:
    owner: dict[str, tuple[str, str, str]] = {}  # written form key → (concept, type, source)
    for (concept, type_), e in entries.items():
        for form in e["written"]:
            key = form[1:] if form.startswith("=") else _norm(form)
            if not key:
                raise LexiconError(f"{e['source']}: empty surface form")
            prev = owner.get(key)
            if prev is not None and prev[:2] != (concept, type_):
                raise LexiconError(
                    f"{e['source']}: surface form {form!r} of {concept!r} ({type_}) is already "
                    f"a form of {prev[0]!r} ({prev[1]}) at {prev[2]}"
                )
            owner[key] = (concept, type_, e["source"])
    taken_lower = {k.lower() for k in owner}
    terms = []
    for (concept, type_), e in entries.items():
        exact = [f[1:] for f in e["written"] if f.startswith("=")]
        written = [_norm(f) for f in e["written"] if not f.startswith("=")]
        forms = dict.fromkeys(written)
        for w in written:
            for v in sorted(_variants(w, spellings)):
                if v not in forms and v not in taken_lower:
                    forms[v] = None
        exact_all = dict.fromkeys(exact)
        for x in exact:
            for v in sorted(_variants(x, ())):
                if v not in owner:
                    exact_all[v] = None
        terms.append(
            Term(
                concept=concept,
                type=type_,
                forms=tuple(forms),
                exact_forms=tuple(exact_all),
                attributes=MappingProxyType(dict(e["attrs"])),
                source=e["source"],
            )
        )
    dupes = [f for f, n in Counter(f for t in terms for f in t.forms).items() if n > 1]
    if dupes:  # only generated variants can collide here; keep the first owner
        seen: set[str] = set()
        fixed = []
        for t in terms:
            keep = tuple(f for f in t.forms if f not in seen)
            seen.update(keep)
            fixed.append(Term(t.concept, t.type, keep, t.exact_forms, t.attributes, t.source))
        terms = fixed
    return tuple(terms)


# --- pattern rules: attributes derived from a regex match --------------------------------------
