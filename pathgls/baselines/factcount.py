"""Fact counting: precision, recall, F-score and accuracy from annotators' fact counts.

The human protocol of Moramarco et al. (2021, "Towards objectively evaluating the quality of
generated medical summaries", HumEval): instead of rating a generated report on a scale,
annotators count facts, and the scores are computed from the raw counts. Per row (one case, one
annotator):

======  ==============================================================================
``R``   facts in the reference report
``G``   facts in the generated report
``RG``  facts stated by both (R∩G)
``C``   facts of the generated report that the reference contradicts
======  ==============================================================================

    precision = RG / G          (share of the generated facts that the reference supports)
    recall    = RG / R          (share of the reference facts the generated report states)
    F-score   = 2·P·R / (P + R)
    accuracy  = RG / (RG + C)   (of the generated facts checkable against the reference — those
                                 it supports or contradicts — the share that are right)

**Zero denominators** give ``None`` (undefined, shown as "—"), never an invented 0 or 1:
precision when ``G = 0``, recall when ``R = 0``, accuracy when ``RG + C = 0``; F-score is None
when precision or recall is, and 0.0 when both are 0. Averages (macro) are over the rows where
the value is defined, and say how many those were; micro values are the same formulas on the
summed counts.

**Input** (:func:`read_fact_counts`): a CSV (or, for ``.tsv`` files, tab-separated) file with a
header and the columns ``case_id, annotator, R, G, RG, C``; an optional ``system`` column names
the model that generated the report (default ""); other columns are ignored. Counts are
non-negative integers. A row is refused, with a :class:`FactCountError` naming its line, when a
column or value is missing, a count is not a non-negative integer, ``RG > min(R, G)``,
``RG + C > G`` (shared and contradicted facts are distinct facts of the generated report), or
the same ``(system, case_id, annotator)`` appears twice.

**Agreement** (:func:`fact_count_agreement`): Krippendorff's α between annotators over the
units ``(system, case_id)``, computed by the ``krippendorff`` package, for a count column or a
derived score, at the interval (default), ratio, ordinal or nominal level; annotators who did
not rate a unit are missing values.

**Output**: :func:`summarize_fact_counts` gives one :class:`FactCountSummary` per annotator
(and system); :func:`fact_count_table` renders summaries (and agreements) as a ``rich`` table.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pathgls.errors import ConfigError, FactCountError, TableError
from pathgls.io.tables import read_table

__all__ = [
    "COUNT_COLUMNS",
    "MEASURES",
    "REQUIRED_COLUMNS",
    "AgreementResult",
    "FactCountError",
    "FactCountRow",
    "FactCountScore",
    "FactCountSummary",
    "fact_count_agreement",
    "fact_count_scores",
    "fact_count_table",
    "parse_fact_counts",
    "read_fact_counts",
    "summarize_fact_counts",
]

#: The count columns, in the order of the CSV.
COUNT_COLUMNS = ("R", "G", "RG", "C")
#: Columns every fact-count file must have.
REQUIRED_COLUMNS = ("case_id", "annotator", *COUNT_COLUMNS)
#: What agreement can be computed on: a count column or a derived score.
MEASURES = (*COUNT_COLUMNS, "precision", "recall", "f_score", "accuracy")

Level = Literal["nominal", "ordinal", "interval", "ratio"]
_LEVELS = ("nominal", "ordinal", "interval", "ratio")


@dataclass(frozen=True)
class FactCountRow:
    """One annotator's fact counts for one generated report."""

    case_id: str
    annotator: str
    R: int  # facts in the reference
    G: int  # facts in the generated report
    RG: int  # facts in both
    C: int  # generated facts the reference contradicts
    system: str = ""  # model that generated the report ("" when not given)
    line: int | None = None  # line in the source file (header = 1), or the record's number

    def __post_init__(self) -> None:
        _check_counts(
            {c: getattr(self, c) for c in COUNT_COLUMNS}, where=_where(self.line), line=self.line
        )


@dataclass(frozen=True)
class FactCountScore:
    """Scores of one row; None where the denominator is 0."""

    row: FactCountRow
    precision: float | None  # RG / G
    recall: float | None  # RG / R
    f_score: float | None  # 2PR / (P + R)
    accuracy: float | None  # RG / (RG + C)


@dataclass(frozen=True)
class FactCountSummary:
    """Macro and micro fact-count scores of one annotator (and system)."""

    annotator: str
    system: str
    n_rows: int
    precision: float | None  # macro: mean over rows where defined
    recall: float | None
    f_score: float | None
    accuracy: float | None
    n_defined: dict[str, int] = field(default_factory=dict)  # rows where each score is defined
    micro_precision: float | None = None  # the formulas on the summed counts
    micro_recall: float | None = None
    micro_f_score: float | None = None
    micro_accuracy: float | None = None


@dataclass(frozen=True)
class AgreementResult:
    """Krippendorff's α between annotators on one measure."""

    measure: str  # R, G, RG, C, precision, recall, f_score or accuracy
    level: str  # level of measurement
    alpha: float | None  # None when undefined (see ``note``)
    n_units: int  # units (system, case_id) with at least two ratings
    n_annotators: int
    note: str = ""


def _where(line: int | None, unit: str = "line") -> str:
    return "fact-count row" if line is None else f"fact-count {unit} {line}"


def _check_counts(counts: Mapping[str, Any], *, where: str, line: int | None) -> None:
    for name in COUNT_COLUMNS:
        value = counts[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise FactCountError(f"{where}: {name} must be an integer, got {value!r}", line=line)
        if value < 0:
            raise FactCountError(f"{where}: {name}={value} is negative", line=line)
    shared, limit = counts["RG"], min(counts["R"], counts["G"])
    if shared > limit:
        raise FactCountError(
            f"{where}: RG={shared} exceeds min(R, G)={limit} "
            f"(shared facts cannot outnumber the reference's or the generated report's)",
            line=line,
        )
    if shared + counts["C"] > counts["G"]:
        raise FactCountError(
            f"{where}: RG + C = {shared + counts['C']} exceeds G={counts['G']} (shared and "
            "contradicted facts are distinct facts of the generated report)",
            line=line,
        )


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _f(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _score(row: FactCountRow) -> FactCountScore:
    p, r = _ratio(row.RG, row.G), _ratio(row.RG, row.R)
    return FactCountScore(
        row=row, precision=p, recall=r, f_score=_f(p, r), accuracy=_ratio(row.RG, row.RG + row.C)
    )


# ------------------------------------------------------------------------------------ input


def _count(value: Any, *, name: str, where: str, line: int) -> int:
    if isinstance(value, bool):
        raise FactCountError(f"{where}: {name} must be an integer, got {value!r}", line=line)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    text = "" if value is None else str(value).strip()
    if not text:
        raise FactCountError(f"{where}: {name} is missing", line=line)
    try:
        return int(text)
    except ValueError as e:
        raise FactCountError(
            f"{where}: {name}={text!r} is not a non-negative integer", line=line
        ) from e


def parse_fact_counts(
    records: Iterable[Mapping[str, Any]], *, first_line: int = 0
) -> list[FactCountRow]:
    """Validate records (dicts with the :data:`REQUIRED_COLUMNS`) into :class:`FactCountRow` s.

    Args:
        records: Mappings column → value (strings as read from a CSV, or numbers).
        first_line: Number of the first record in messages and in :attr:`FactCountRow.line`
            (records are numbered from it: "fact-count record 0", ...).

    Raises:
        FactCountError: a record is missing a column or value, holds a bad count, breaks a count
            constraint, or repeats a ``(system, case_id, annotator)``.
    """
    return _parse(((first_line + i, rec) for i, rec in enumerate(records)), unit="record")


def _parse(
    numbered: Iterable[tuple[int, Mapping[str, Any]]], *, unit: str = "line"
) -> list[FactCountRow]:
    rows: list[FactCountRow] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, rec in numbered:
        where = _where(line, unit)
        missing = [c for c in REQUIRED_COLUMNS if c not in rec]
        if missing:
            raise FactCountError(
                f"{where}: missing column(s) {', '.join(missing)} "
                f"(required: {', '.join(REQUIRED_COLUMNS)})",
                line=line,
            )
        case_id = str(rec["case_id"] if rec["case_id"] is not None else "").strip()
        annotator = str(rec["annotator"] if rec["annotator"] is not None else "").strip()
        for name, value in (("case_id", case_id), ("annotator", annotator)):
            if not value:
                raise FactCountError(f"{where}: {name} is missing", line=line)
        system = str(rec.get("system") or "").strip()
        counts = {c: _count(rec[c], name=c, where=where, line=line) for c in COUNT_COLUMNS}
        _check_counts(counts, where=where, line=line)
        row = FactCountRow(case_id=case_id, annotator=annotator, system=system, line=line, **counts)
        key = (system, case_id, annotator)
        if key in seen:
            raise FactCountError(
                f"{where}: case {case_id!r} (system {system!r}) was already counted by "
                f"annotator {annotator!r} at {unit} {seen[key]}",
                line=line,
            )
        seen[key] = line
        rows.append(row)
    return rows


def read_fact_counts(path: str | os.PathLike[str]) -> list[FactCountRow]:
    """Read and validate a fact-count CSV (tab-separated when the name ends in ``.tsv``).

    Raises:
        FactCountError: the file cannot be read, lacks a required column, or has a bad row
            (the message names its line; the header is line 1).
    """
    p = Path(path)
    delimiter = "\t" if p.suffix.lower() == ".tsv" else ","
    try:
        table = read_table(p, delimiter=delimiter, what="fact counts")
    except TableError as e:
        raise FactCountError(str(e), line=_line_of(str(e))) from e
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise FactCountError(
            f"{p}: missing column(s) {', '.join(missing)} in the header "
            f"(found: {', '.join(table.columns) or 'none'}; required: "
            f"{', '.join(REQUIRED_COLUMNS)})",
            line=1,
        )
    records = list(zip(table.lines, table.rows, strict=True))
    try:
        return _parse(records)
    except FactCountError as e:
        raise FactCountError(f"{p}: {e}", line=e.line) from e


def _line_of(message: str) -> int | None:
    """The line number a :class:`TableError` message names, if any."""
    found = re.search(r", line (\d+)", message)
    return int(found.group(1)) if found else None


# ---------------------------------------------------------------------------------- scoring


def fact_count_scores(*, rows: Sequence[FactCountRow]) -> list[FactCountScore]:
    """Precision, recall, F-score and accuracy of each row (None where undefined)."""
    return [_score(r) for r in rows]


def _mean(values: Iterable[float | None]) -> tuple[float | None, int]:
    defined = [v for v in values if v is not None]
    return (sum(defined) / len(defined) if defined else None), len(defined)


def summarize_fact_counts(*, rows: Sequence[FactCountRow]) -> list[FactCountSummary]:
    """Macro and micro scores per ``(system, annotator)``, sorted by system then annotator."""
    groups: dict[tuple[str, str], list[FactCountRow]] = {}
    for r in rows:
        groups.setdefault((r.system, r.annotator), []).append(r)
    out = []
    for (system, annotator), members in sorted(groups.items()):
        scores = [_score(r) for r in members]
        macro: dict[str, float | None] = {}
        n_defined: dict[str, int] = {}
        for name in ("precision", "recall", "f_score", "accuracy"):
            macro[name], n_defined[name] = _mean(getattr(s, name) for s in scores)
        total = {c: sum(getattr(r, c) for r in members) for c in COUNT_COLUMNS}
        mp, mr = _ratio(total["RG"], total["G"]), _ratio(total["RG"], total["R"])
        out.append(
            FactCountSummary(
                annotator=annotator,
                system=system,
                n_rows=len(members),
                n_defined=n_defined,
                micro_precision=mp,
                micro_recall=mr,
                micro_f_score=_f(mp, mr),
                micro_accuracy=_ratio(total["RG"], total["RG"] + total["C"]),
                **macro,
            )
        )
    return out


# -------------------------------------------------------------------------------- agreement


def fact_count_agreement(
    *, rows: Sequence[FactCountRow], measure: str = "RG", level: Level = "interval"
) -> AgreementResult:
    """Krippendorff's α between annotators on ``measure`` over the units ``(system, case_id)``.

    Args:
        rows: Validated fact counts of two or more annotators.
        measure: A count column (R, G, RG, C) or a derived score (precision, recall, f_score,
            accuracy; undefined scores are missing values).
        level: Level of measurement: interval (default), ratio, ordinal or nominal.

    Returns:
        An :class:`AgreementResult`; ``alpha`` is None, with a note, when every pairable rating
        is the same value (α is 0/0 then).

    Raises:
        ConfigError: unknown measure or level.
        FactCountError: fewer than two annotators, or no unit rated by two of them.
    """
    import krippendorff
    import numpy as np

    if measure not in MEASURES:
        raise ConfigError(f"unknown fact-count measure {measure!r}; expected one of {MEASURES}")
    if level not in _LEVELS:
        raise ConfigError(f"unknown level of measurement {level!r}; expected one of {_LEVELS}")
    annotators = sorted({r.annotator for r in rows})
    if len(annotators) < 2:
        raise FactCountError(
            f"agreement needs at least two annotators, got {len(annotators)} "
            f"({', '.join(annotators) or 'none'})"
        )
    units = sorted({(r.system, r.case_id) for r in rows})
    a_index = {a: i for i, a in enumerate(annotators)}
    u_index = {u: j for j, u in enumerate(units)}
    data = np.full((len(annotators), len(units)), np.nan)
    for r in rows:
        value = getattr(r, measure) if measure in COUNT_COLUMNS else getattr(_score(r), measure)
        if value is not None:
            data[a_index[r.annotator], u_index[(r.system, r.case_id)]] = float(value)
    pairable = np.sum(~np.isnan(data), axis=0) >= 2
    n_units = int(pairable.sum())
    if n_units == 0:
        raise FactCountError(
            f"agreement on {measure}: no case was rated by two annotators (with a defined value)"
        )
    values = np.unique(data[:, pairable][~np.isnan(data[:, pairable])])
    if len(values) < 2:
        return AgreementResult(
            measure=measure,
            level=level,
            alpha=None,
            n_units=n_units,
            n_annotators=len(annotators),
            note=f"every paired rating is {values[0]:g}: α is undefined (no variation)",
        )
    alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    return AgreementResult(
        measure=measure,
        level=level,
        alpha=alpha if math.isfinite(alpha) else None,
        n_units=n_units,
        n_annotators=len(annotators),
        note="" if math.isfinite(alpha) else "α is not finite",
    )


# ------------------------------------------------------------------------------------ table


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def fact_count_table(
    *,
    summaries: Sequence[FactCountSummary],
    agreements: Sequence[AgreementResult] = (),
    title: str = "Fact counting",
) -> Any:
    """A ``rich.table.Table`` of summaries (macro, with micro in brackets) and agreements.

    Args:
        summaries: From :func:`summarize_fact_counts`.
        agreements: From :func:`fact_count_agreement`, listed in the caption.
        title: Table title.
    """
    from rich.table import Table

    table = Table(title=title)
    show_system = any(s.system for s in summaries)
    if show_system:
        table.add_column("system")
    table.add_column("annotator")
    table.add_column("rows", justify="right")
    for name in ("precision", "recall", "F-score", "accuracy"):
        table.add_column(f"{name} (micro)", justify="right")
    for s in summaries:
        cells = [
            f"{_fmt(macro)} ({_fmt(micro)})"
            for macro, micro in (
                (s.precision, s.micro_precision),
                (s.recall, s.micro_recall),
                (s.f_score, s.micro_f_score),
                (s.accuracy, s.micro_accuracy),
            )
        ]
        table.add_row(*([s.system] if show_system else []), s.annotator, str(s.n_rows), *cells)
    if agreements:
        table.caption = "Krippendorff's α: " + "; ".join(
            f"{a.measure} ({a.level}, {a.n_units} cases) = {_fmt(a.alpha)}" for a in agreements
        )
    return table
