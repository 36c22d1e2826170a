"""The project-owned pathology lexicon: loading, validation and the attribute vocabulary.

The lexicon is data (``pathgls/resources/lexicon/``), written for pathgls from pathology
knowledge, in tab-separated files readable with the standard library:

- term files (``sites.tsv``, ``diagnoses.tsv``, ``findings.tsv``, ``markers.tsv``), header
  ``concept  type  synonyms  attributes``: one concept per row, its ``|``-separated surface forms
  (the concept name itself is always one) and ``key=value;key=value`` attributes;
- ``patterns.tsv``, header ``concept  type  regex  attributes``: regular-expression rules (a
  regex pass of pathgls, not TargetMatcher token patterns) for numeric and pattern forms:
  Gleason scores, grade numbers, TNM, stage groups, R status, sizes, node counts, mitotic
  counts, IHC signs and scores. ``derive=NAME`` names the function of :func:`derive_attributes`
  that turns the match's named groups into attributes (grade from a number, ...);
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

from pathgls.errors import PathGLSError
from pathgls.text.base import ENTITY_TYPES

#: Folder of the lexicon shipped with pathgls.
DEFAULT_LEXICON_DIR = Path(__file__).resolve().parents[1] / "resources" / "lexicon"

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
        "derive": DERIVATIONS,
    }
)
#: Keys whose value may list several allowed values, comma-separated.
MULTI_VALUED = frozenset({"implies", "depends_on"})

_TERM_HEADER = ("concept", "type", "synonyms", "attributes")
_PATTERN_HEADER = ("concept", "type", "regex", "attributes")
_SPELLING_HEADER = ("american", "british")
_HEADERS = (_TERM_HEADER, _PATTERN_HEADER, _SPELLING_HEADER)


class LexiconError(PathGLSError, ValueError):
    """A lexicon file is malformed or uses an unknown type, attribute key or value."""


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
        needed = _REQUIRED_GROUPS.get(derive, ((),))
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

_ROMAN = {"I": 1, "II": 2, "III": 3, "IV": 4}
_WORD_NUMBERS = {
    w: i
    for i, w in enumerate(
        re.findall(
            r"\w+",
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty",
        )
    )
} | {"none": 0, "no": 0, "thirty": 30, "forty": 40}
_FOUR_TIER = ("fuhrman", "who/isup", "isup", "who")
_GRADE_SYSTEMS = {
    "nottingham": "nottingham",
    "bloom": "nottingham",
    "elston": "nottingham",
    "sbr": "nottingham",
    "figo": "figo",
    "fuhrman": "fuhrman",
    "isup": "isup",
    "who": "who",
}
_TNM_PART = re.compile(
    r"(?P<pre>[ycpra]{0,3})(?:T(?P<t>is|[0-4]|X|x)(?P<tsub>[a-d]?\d?)"
    r"|(?P<s>S?)N(?P<n>[0-3]|X|O)(?P<nsub>[a-c]?)(?:\s?\((?P<nmod>(?:i|mol|sn)?[+-]?)\))?"
    r"|M(?P<m>[01]|X)(?P<msub>[a-c]?)|(?P<lvr>L|V|Pn|R)(?P<lvrn>[0-2]))"
)
_REQUIRED_GROUPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "gleason": (("g1", "g2"), ("gs",)),
    "grade_group": (("gg",),),
    "grade_number": (("num",),),
    "stage_group": (("stage",),),
    "r_status": (("r",),),
    "size": (("dims", "unit"),),
    "node_count": (("pos", "tot"),),
    "mitotic_count": (("count",),),
}
_TO_MM = {"mm": 1.0, "cm": 10.0, "um": 0.001, "µm": 0.001, "μm": 0.001, "micron": 0.001}


def derive_attributes(name: str | None, match: re.Match[str]) -> dict[str, str] | None:
    """Attributes a pattern rule's ``derive`` function reads from its match.

    Args:
        name: One of :data:`DERIVATIONS` (None: no attributes).
        match: The regex match (named groups as written in ``patterns.tsv``).

    Returns:
        The attributes, or None when the match makes no sense (e.g. "5 of 3 lymph nodes").
    """
    if name is None:
        return {}
    g = {k: v for k, v in match.groupdict().items() if v}
    text = match.group("span") if "span" in match.re.groupindex else match.group(0)
    return _DERIVE[name](g, text)


def _grade_from_gleason(score: int) -> str:
    return "low" if score <= 6 else "intermediate" if score == 7 else "high"


def _derive_gleason(g: dict[str, str], _: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    if "g1" in g:
        p, s = int(g["g1"]), int(g["g2"])
        out |= {"gleason_primary": str(p), "gleason_secondary": str(s)}
        total = p + s
        if "gs" in g and int(g["gs"]) != total:
            return None
        grade_group = 1 if total <= 6 else (2 if p == 3 else 3) if total == 7 else min(total - 4, 5)
        out["grade_group"] = str(grade_group)
    else:
        total = int(g["gs"])
    if not 2 <= total <= 10:
        return None
    return out | {"gleason_score": str(total), "grade": _grade_from_gleason(total)}


def _derive_grade_group(g: dict[str, str], _: str) -> dict[str, str]:
    gg = int(g["gg"])
    grade = "low" if gg == 1 else "intermediate" if gg <= 3 else "high"
    return {"grade_group": str(gg), "grade": grade}


def _number(value: str) -> int:
    return _ROMAN[value.upper()] if value.upper() in _ROMAN else int(value)


def _derive_grade_number(g: dict[str, str], _: str) -> dict[str, str] | None:
    num = max(_number(g["num"]), _number(g.get("num2", g["num"])))
    words = g.get("sys", "").lower()
    system = next((v for k, v in _GRADE_SYSTEMS.items() if k in words), "")
    scale = _number(g["scale"]) if "scale" in g else 4 if system in _FOUR_TIER or num == 4 else 3
    if num > scale or scale not in (3, 4):
        return None
    grade = ("low" if num <= 2 else "high") if scale == 4 else GRADES[num - 1]
    out = {"grade": grade, "grade_number": str(num), "grade_scale": str(scale)}
    return out | ({"system": system} if system else {})


def _derive_tnm(_: dict[str, str], text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _TNM_PART.finditer(text):
        if m.group("t"):
            out["t"] = "T" + m.group("t").upper().replace("IS", "is") + (m.group("tsub") or "")
        elif m.group("n"):
            n = "N" + m.group("n").replace("O", "0") + (m.group("nsub") or "")
            out["n"] = n + (f"({m.group('nmod')})" if m.group("nmod") else "")
        elif m.group("m"):
            out["m"] = "M" + m.group("m") + (m.group("msub") or "")
        elif m.group("lvr"):
            out[m.group("lvr").lower()] = m.group("lvr") + m.group("lvrn")
        if m.group("pre") and "prefix" not in out:
            out["prefix"] = m.group("pre")
    return out


def _derive_stage_group(g: dict[str, str], _: str) -> dict[str, str]:
    stage = g["stage"]
    stage = {"1": "I", "2": "II", "3": "III", "4": "IV"}.get(stage, stage)
    out = {"stage": stage + g.get("sub", "") + g.get("subnum", "")}
    words = g.get("sys", "").lower()
    for key in ("figo", "ajcc", "masaoka", "uicc", "ann"):
        if key in words:
            out["system"] = "ann_arbor" if key == "ann" else key
    return out


def _derive_r_status(g: dict[str, str], _: str) -> dict[str, str]:
    return {"r": g["r"], "result": "negative" if g["r"] == "R0" else "positive"}


def _derive_size(g: dict[str, str], _: str) -> dict[str, str] | None:
    unit = g["unit"].lower().rstrip("s")
    unit = {"millimeter": "mm", "millimetre": "mm", "centimeter": "cm", "centimetre": "cm"}.get(
        unit, unit
    )
    dims = [float(d.replace(",", ".")) for d in re.split(r"\s*(?:x|×|X|by)\s*", g["dims"])]
    if unit not in _TO_MM or not dims:
        return None
    value = max(dims) * _TO_MM[unit]
    return {
        "value_mm": f"{value:g}",
        "dims": "x".join(f"{d:g}" for d in dims),
        "unit": "um" if _TO_MM[unit] < 1 else unit,
    }


def _count(word: str) -> int | None:
    w = word.lower()
    return int(w) if w.isdigit() else _WORD_NUMBERS.get(w)


def _derive_node_count(g: dict[str, str], _: str) -> dict[str, str] | None:
    pos, total = _count(g["pos"]), _count(g["tot"])
    if pos is None or total is None or total == 0 or pos > total:
        return None
    return {"positive": str(pos), "total": str(total), "result": RESULTS[0 if pos else 1]}


def _derive_mitotic_count(g: dict[str, str], _: str) -> dict[str, str]:
    return {"count": g["count"], "per": f"{g['per']} HPF" if "per" in g else "mm2"}


def _derive_ihc_sign(_: dict[str, str], text: str) -> dict[str, str]:
    return {"result": "positive" if "+" in text else "negative", "score": text.strip("()")}


def _derive_ihc_score(_: dict[str, str], text: str) -> dict[str, str]:
    score = text.strip()
    return {"score": score, "result": "negative" if score == "0" else "positive"}


_DERIVE = {
    "gleason": _derive_gleason,
    "grade_group": _derive_grade_group,
    "grade_number": _derive_grade_number,
    "tnm": _derive_tnm,
    "stage_group": _derive_stage_group,
    "r_status": _derive_r_status,
    "size": _derive_size,
    "node_count": _derive_node_count,
    "mitotic_count": _derive_mitotic_count,
    "ihc_sign": _derive_ihc_sign,
    "ihc_score": _derive_ihc_score,
}
