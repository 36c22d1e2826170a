"""The rule vocabularies' data files (``pathgls/resources/vocab/*.tsv``): read once, validated.

The case model's cue words, synonyms, organ families and staging cut-offs are data beside the
lexicon, one entry a line; the code keeps only the grammar they are set in (a denial *before* a
finding, a hedge *after* it, word boundaries). Each file is UTF-8, tab-separated: ``#`` lines
and blank lines are comments, the first other line is the header, and every row has one
non-empty cell per column, without surrounding spaces (they would change a pattern silently).

A file's columns, its key (no two rows may share it), its regular-expression columns (each cell
must compile on its own: an alternative of the pattern the code builds), its number columns
(some may be ``-``: no bound, see :func:`bound`) and the values a column may take are declared in
:data:`SCHEMAS`. Any violation is a :class:`~pathgls.errors.LexiconError` naming the file and
the line.

Rows keep their order: an alternation is tried in the order its alternatives are written, and
the first table entry that matches wins where the code takes the first one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import TypeVar

from pathgls.errors import LexiconError

#: The type of a number column (int or float).
N = TypeVar("N", int, float)


@dataclass(frozen=True)
class Schema:
    """What a vocabulary file must hold."""

    columns: tuple[str, ...]
    #: Columns whose values together identify a row (unique in the file).
    key: tuple[str, ...]
    #: Columns of regular expressions (each cell must compile).
    patterns: tuple[str, ...] = ()
    #: Columns of numbers, with their type.
    numbers: MappingProxyType[str, type] = field(default_factory=lambda: MappingProxyType({}))
    #: Number columns where ``-`` stands for no bound.
    open_ended: tuple[str, ...] = ()
    #: Columns restricted to a closed set of values.
    choices: MappingProxyType[str, frozenset[str]] = field(
        default_factory=lambda: MappingProxyType({})
    )


def _schema(
    columns: str,
    key: str,
    *,
    patterns: str = "",
    numbers: dict[str, type] | None = None,
    open_ended: str = "",
    choices: dict[str, tuple[str, ...]] | None = None,
) -> Schema:
    return Schema(
        columns=tuple(columns.split()),
        key=tuple(key.split()),
        patterns=tuple(patterns.split()),
        numbers=MappingProxyType(dict(numbers or {})),
        open_ended=tuple(open_ended.split()),
        choices=MappingProxyType({k: frozenset(v) for k, v in (choices or {}).items()}),
    )


#: The cue lists of :mod:`pathgls.text.case.polarity`, in the order the file gives them.
POLARITY_LISTS = (
    "denied_before",
    "pre_negation",
    "post_negation_lead",
    "post_negation",
    "post_affirmation_lead",
    "post_affirmation",
    "hedge_before",
    "hedge_after",
    "gross",
    "denial_filler",
    "modifier_stop",
)

#: File name (without ``.tsv``) → schema. A file not listed here cannot be loaded.
SCHEMAS: MappingProxyType[str, Schema] = MappingProxyType(
    {
        "polarity_cues": _schema(
            "list cue", "list cue", patterns="cue", choices={"list": POLARITY_LISTS}
        ),
        "slot_synonyms": _schema(
            "slot key pattern",
            "slot key pattern",
            patterns="pattern",
            choices={"slot": ("invasion", "extent", "finding")},
        ),
        "subject_words": _schema(
            "list word",
            "list word",
            patterns="word",
            choices={"list": ("tumour", "background", "other_population", "other_lesion")},
        ),
        "marker_results": _schema(
            "word result", "word", choices={"result": ("positive", "negative", "equivocal")}
        ),
        "margin_synonyms": _schema("name margin", "name"),
        "site_spellings": _schema("form site", "form"),
        "grade_systems": _schema("name system", "name"),
        "rcc_subtypes": _schema("subtype concept", "subtype"),
        "organ_words": _schema(
            "list organ pattern",
            "list organ pattern",
            patterns="pattern",
            choices={"list": ("report", "confined", "distant")},
        ),
        "type_organs": _schema(
            "source value organ",
            "source value",
            choices={"source": ("lexicon_site", "histotype_family")},
        ),
        "confined_structures": _schema("organ structure", "organ structure"),
        "adjacent_sites": _schema("site neighbour", "site neighbour"),
        "stage_sizes": _schema(
            "organ category above_cm up_to_cm",
            "organ category",
            numbers={"above_cm": float, "up_to_cm": float},
            open_ended="above_cm up_to_cm",
        ),
        "stage_nodes": _schema(
            "organ category min max",
            "organ category",
            numbers={"min": int, "max": int},
            open_ended="max",
        ),
        "stage_extent": _schema(
            "rule organ category structure",
            "rule organ category structure",
            choices={"rule": ("rules_out", "requires")},
        ),
    }
)


@dataclass(frozen=True)
class VocabTable:
    """The rows of one vocabulary file (cells as written, in file order)."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def values(self, column: str, **where: str) -> tuple[str, ...]:
        """The cells of ``column`` in the rows whose cells equal ``where``, in file order."""
        i = self._index(column)
        tests = [(self._index(c), v) for c, v in where.items()]
        return tuple(r[i] for r in self.rows if all(r[j] == v for j, v in tests))

    def groups(self, key: str, value: str, **where: str) -> MappingProxyType[str, tuple[str, ...]]:
        """``key`` cell → the ``value`` cells of its rows (keys in order of first appearance),
        over the rows whose cells equal ``where``."""
        out: dict[str, list[str]] = {}
        for k, v in zip(self.values(key, **where), self.values(value, **where), strict=True):
            out.setdefault(k, []).append(v)
        return MappingProxyType({g: tuple(vs) for g, vs in out.items()})

    def alternation(self, column: str, **where: str) -> str:
        """The cells of :meth:`values` joined with ``|``: one regular expression, alternatives
        in file order."""
        return "|".join(self.values(column, **where))

    def alternations(self, key: str, value: str, **where: str) -> MappingProxyType[str, str]:
        """``key`` cell → the alternation of its rows' ``value`` cells (see :meth:`groups`)."""
        return MappingProxyType(
            {k: "|".join(v) for k, v in self.groups(key, value, **where).items()}
        )

    def rows_by(
        self, key: str, *columns: str, **where: str
    ) -> MappingProxyType[str, tuple[tuple[str, ...], ...]]:
        """``key`` cell → the ``columns`` cells of its rows (keys in order of first appearance),
        over the rows whose cells equal ``where``."""
        k, cols = self._index(key), [self._index(c) for c in columns]
        tests = [(self._index(c), v) for c, v in where.items()]
        out: dict[str, list[tuple[str, ...]]] = {}
        for r in self.rows:
            if all(r[j] == v for j, v in tests):
                out.setdefault(r[k], []).append(tuple(r[i] for i in cols))
        return MappingProxyType({g: tuple(rs) for g, rs in out.items()})

    def pairs(self, key: str, value: str, **where: str) -> tuple[tuple[str, str], ...]:
        """(``key`` cell, ``value`` cell) of the rows whose cells equal ``where``, in file order."""
        return tuple(zip(self.values(key, **where), self.values(value, **where), strict=True))

    def mapping(self, key: str, value: str, **where: str) -> MappingProxyType[str, str]:
        """``key`` cell → ``value`` cell over the rows whose cells equal ``where`` (in file order;
        a key repeated among them is an error)."""
        out: dict[str, str] = {}
        for k, v in self.pairs(key, value, **where):
            if k in out:
                raise LexiconError(f"vocab/{self.name}.tsv: {key} {k!r} is given twice")
            out[k] = v
        return MappingProxyType(out)

    def _index(self, column: str) -> int:
        try:
            return self.columns.index(column)
        except ValueError as e:
            raise LexiconError(f"vocab/{self.name}.tsv has no column {column!r}") from e


def parse_table(text: str, *, name: str, source: str | None = None) -> VocabTable:
    """Parse and validate the text of vocabulary file ``name`` (``source`` names it in errors).

    Raises:
        LexiconError: An unknown file name, a wrong header, a row with a missing, empty or
            padded cell, a repeated key, a pattern that does not compile, a number that is not
            one, or a value outside its column's closed set; the message names file and line.
    """
    src = source or f"vocab/{name}.tsv"
    schema = SCHEMAS.get(name)
    if schema is None:
        raise LexiconError(f"{src}: no schema for vocabulary file {name!r}")
    header: tuple[str, ...] | None = None
    rows: list[tuple[str, ...]] = []
    seen: dict[tuple[str, ...], int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = tuple(line.split("\t"))
        if header is None:
            if cells != schema.columns:
                raise LexiconError(
                    f"{src}:{n}: header {'|'.join(cells)!r}, expected {'|'.join(schema.columns)!r}"
                )
            header = cells
            continue
        _check_row(cells, schema, src, n)
        key = tuple(cells[schema.columns.index(c)] for c in schema.key)
        if key in seen:
            raise LexiconError(
                f"{src}:{n}: duplicate key {' / '.join(key)!r} (first on line {seen[key]})"
            )
        seen[key] = n
        rows.append(cells)
    if header is None or not rows:
        raise LexiconError(f"{src}: no header and rows")
    return VocabTable(name=name, columns=header, rows=tuple(rows))


def _check_row(cells: tuple[str, ...], schema: Schema, src: str, n: int) -> None:
    if len(cells) != len(schema.columns):
        raise LexiconError(
            f"{src}:{n}: {len(cells)} cells, expected {len(schema.columns)} "
            f"({', '.join(schema.columns)}), separated by tabs"
        )
    for col, cell in zip(schema.columns, cells, strict=True):
        if not cell:
            raise LexiconError(f"{src}:{n}: empty {col!r}")
        if cell != cell.strip():
            raise LexiconError(f"{src}:{n}: {col!r} {cell!r} has spaces around it")
        if col in schema.patterns:
            try:
                re.compile(cell)
            except re.error as e:
                raise LexiconError(f"{src}:{n}: {col!r} {cell!r} is not a valid regex: {e}") from e
        if col in schema.numbers and not (cell == "-" and col in schema.open_ended):
            try:
                schema.numbers[col](cell)
            except ValueError as e:
                kind = schema.numbers[col].__name__
                what = f"{kind} or - (no bound)" if col in schema.open_ended else kind
                raise LexiconError(f"{src}:{n}: {col!r} {cell!r} is not {what}") from e
        allowed = schema.choices.get(col)
        if allowed is not None and cell not in allowed:
            raise LexiconError(
                f"{src}:{n}: {col!r} {cell!r} is not one of {', '.join(sorted(allowed))}"
            )


@functools.cache
def load_table(name: str) -> VocabTable:
    """The shipped vocabulary file ``name`` (``pathgls/resources/vocab/<name>.tsv``), read once
    per process and validated (see :func:`parse_table`)."""
    if name not in SCHEMAS:
        raise LexiconError(f"vocab/{name}.tsv: no schema for vocabulary file {name!r}")
    ref = resources.files("pathgls").joinpath("resources", "vocab", f"{name}.tsv")
    try:
        text = ref.read_text(encoding="utf-8")
    except OSError as e:
        raise LexiconError(f"vocab/{name}.tsv cannot be read: {e}") from e
    return parse_table(text, name=name)


def bound(cell: str, kind: Callable[[str], N]) -> N | None:
    """A number cell of a validated table as ``kind``; ``-`` is None (no bound)."""
    return None if cell == "-" else kind(cell)
