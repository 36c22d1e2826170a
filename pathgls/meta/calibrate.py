"""Module weights and gate thresholds from labelled data: the PathGLS calibration and ablation.

A validation table holds, per item, the module scores (grounding, logic, stability, and the
report-side ``report`` when the item had a reference; any of them may be missing) and a
label: an expert rank or score (higher = more trustworthy) or a binary
acceptable 0/1. The trust of a row under weights ``w`` is the weighted mean over the row's
available modules, renormalised by the weight those modules carry.

* :func:`weight_search` grids the weight simplex (multiples of ``step``) and keeps the weights with
  the highest Spearman ρ(trust, label); ties go to the point closest to the default weights.
* :func:`thresholds_for_precision` is the lowest deploy threshold whose precision reaches a target.
* :func:`ablation` is the paper's ablation: ρ with all modules, then with each module dropped.
* :func:`rows_from_cards` joins a benchmark run's ScoreCards with labels read by
  :func:`read_labels`; :func:`trust_scores` is the trust of each row under given weights.

Rows that cannot be used (no module score, missing label) are skipped and reported in the
result's ``warnings``, never imputed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from pathgls.config import DEFAULT_WEIGHTS as FUSION_WEIGHTS
from pathgls.config import default_weights
from pathgls.errors import CalibrationError, TableError
from pathgls.fusion import shown
from pathgls.io.tables import delimiter_for, read_table
from pathgls.modules import BY_NAME, WEIGHTED, score_modules

if TYPE_CHECKING:
    from pathgls.types import ScoreCard

# The built-ins alone, kept for code that imported them; the functions below include plugins.
#: The built-in modules fused by default (:func:`calibrated_modules`).
MODULES: tuple[str, ...] = WEIGHTED
#: Built-in columns a validation table may leave out (:func:`optional_columns`).
OPTIONAL_COLUMNS: tuple[str, ...] = tuple(m for m in MODULES if BY_NAME[m].needs_reference)
DEFAULT_WEIGHTS: Mapping[str, float] = dict(FUSION_WEIGHTS)


def calibrated_modules() -> tuple[str, ...]:
    """The modules fused by default (plugins included), whose weights are searched."""
    return tuple(m.name for m in score_modules() if m.weight is not None)


def optional_columns() -> tuple[str, ...]:
    """Columns a validation table may leave out (every item then lacks that module): those
    needing a reference report, and the plugins' (a table written before they were installed)."""
    return tuple(
        m.name
        for m in score_modules()
        if m.weight is not None and (m.needs_reference or m.name not in BY_NAME)
    )


_TIE = 1e-12  # ρ values closer than this are ties
#: Fewer labelled rows than this get a warning: the 95% CI of a Spearman ρ near 0.5 is still
#: about ±0.3 wide at 30 rows, and the best weights are chosen on the same rows (optimistic).
MIN_ROWS = 30


@dataclass(frozen=True)
class ValidationRow:
    """One labelled item: module scores (``None`` = module missing) and its label."""

    item_id: str
    scores: Mapping[str, float | None]
    label: float


@dataclass(frozen=True)
class GridPoint:
    """One weight vector and its Spearman ρ(trust, label)."""

    weights: dict[str, float]
    spearman: float


@dataclass(frozen=True)
class WeightSearchResult:
    """Best weights on the simplex grid, against the default weights."""

    weights: dict[str, float]
    spearman: float
    default_weights: dict[str, float]
    default_spearman: float
    top: tuple[GridPoint, ...]
    n_rows: int
    n_points: int
    n_points_skipped: int
    warnings: tuple[str, ...] = ()
    # 95% CI of ``spearman`` (Fisher z, Fieller's variance 1.06/(n−3)); None below 4 rows.
    spearman_ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class ThresholdResult:
    """Lowest deploy threshold reaching the target precision (``threshold`` None: unreachable)."""

    threshold: float | None
    target_precision: float
    n: int
    n_deployed: int
    precision: float | None
    recall: float | None
    reason: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class AblationRow:
    """ρ with one module dropped (``dropped`` None: all modules); ``delta`` = ρ − ρ(all)."""

    dropped: str | None
    weights: dict[str, float]
    n: int
    spearman: float
    delta: float
    warnings: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class CardRows:
    """Validation rows made from ScoreCards, and the cards left out (``subject/item_id``)."""

    rows: list[ValidationRow]
    failed: tuple[str, ...]  # status ``failed``: no report was produced
    unlabelled: tuple[str, ...]  # no label for the card's (subject, item_id) nor its item_id


# ----------------------------------------------------------------------------- reading


def _parse_float(text: str | None, *, what: str, where: str, allow_empty: bool) -> float | None:
    s = (text or "").strip()
    if not s:
        if allow_empty:
            return None
        raise CalibrationError(f"{where}: {what} is empty")
    try:
        value = float(s)
    except ValueError as e:
        raise CalibrationError(f"{where}: {what} {s!r} is not a number") from e
    if not math.isfinite(value):
        raise CalibrationError(f"{where}: {what} {s!r} is not a finite number")
    return value


def read_validation_table(path: str | os.PathLike[str]) -> list[ValidationRow]:
    """Rows of a TSV/CSV with columns item_id, grounding, logic, stability, label (and report).

    ``.csv`` files are comma-separated, anything else tab-separated. An empty module cell means
    the module is missing for that item; without a ``report`` column no item has one.

    Raises:
        CalibrationError: unreadable file, missing columns, or a malformed line (named by number).
    """
    p = Path(path)
    modules, optional = calibrated_modules(), optional_columns()
    needed = ("item_id", *(m for m in modules if m not in optional), "label")
    rows: list[ValidationRow] = []
    try:
        table = read_table(p, required=needed, what="validation table")
    except TableError as e:
        raise CalibrationError(str(e)) from e
    for line, r in zip(table.lines, table.rows, strict=True):
        where = f"{p}: line {line}"
        if any(r[c] is None for c in needed):
            raise CalibrationError(
                f"{where}: expected {len(table.columns)} fields separated by {delimiter_for(p)!r}"
            )
        scores = {
            m: _parse_float(r[m], what=f"{m} score", where=where, allow_empty=True)
            for m in modules
            if m in table.columns
        }
        label = _parse_float(r["label"], what="label", where=where, allow_empty=False)
        item_id = (r["item_id"] or "").strip() or f"line{line}"
        rows.append(ValidationRow(item_id, scores, float(label)))  # type: ignore[arg-type]
    return rows


def read_labels(path: str | os.PathLike[str]) -> dict[tuple[str | None, str], float]:
    """Labels from a TSV/CSV with columns ``item_id`` and ``label``, optionally ``subject``.

    ``.csv`` files are comma-separated, anything else tab-separated. The key is
    ``(subject, item_id)``; ``subject`` is None (the label applies to the item under every subject)
    when the file has no subject column or the cell is empty. A row with an empty label is left
    out (the item is unlabelled).

    Raises:
        CalibrationError: unreadable file, missing columns, a malformed line or label, or the same
            key twice.
    """
    p = Path(path)
    labels: dict[tuple[str | None, str], float] = {}
    try:
        table = read_table(p, required=("item_id", "label"), what="labels")
    except TableError as e:
        raise CalibrationError(str(e)) from e
    for line, r in zip(table.lines, table.rows, strict=True):
        where = f"{p}: line {line}"
        if r["item_id"] is None or r["label"] is None:
            raise CalibrationError(f"{where}: expected {len(table.columns)} fields")
        label = _parse_float(r["label"], what="label", where=where, allow_empty=True)
        item = r["item_id"].strip()
        if label is None or not item:
            continue
        key = ((r.get("subject") or "").strip() or None, item)
        if key in labels:
            raise CalibrationError(f"{where}: a second label for {key[0] or '*'}/{item}")
        labels[key] = label
    return labels


def rows_from_cards(
    *, cards: Iterable[ScoreCard], labels: Mapping[tuple[str | None, str], float]
) -> CardRows:
    """Join each card's module values with its label (as read by :func:`read_labels`).

    A card's label is the one for its ``(subject, item_id)``, else for ``(None, item_id)``.
    Cards with status ``failed`` and cards without a label are left out and listed; a missing
    or non-finite module value is ``None`` (missing), never imputed.
    """
    rows: list[ValidationRow] = []
    failed: list[str] = []
    unlabelled: list[str] = []
    for card in cards:
        subject = card.subject
        name = f"{subject}/{card.item_id}" if subject else str(card.item_id)
        label = labels.get((subject, card.item_id), labels.get((None, card.item_id)))
        if card.status == "failed":
            failed.append(name)
        elif label is None:
            unlabelled.append(name)
        else:
            scores = {m: card.value(m) for m in calibrated_modules()}
            rows.append(ValidationRow(name, scores, float(label)))
    return CardRows(rows, tuple(failed), tuple(unlabelled))


# ----------------------------------------------------------------------------- helpers


def _coerce_row(row: ValidationRow | Mapping[str, object], i: int) -> ValidationRow:
    if isinstance(row, ValidationRow):
        return row
    if not isinstance(row, Mapping):
        raise CalibrationError(f"row {i}: expected a ValidationRow or a mapping, got {row!r}")
    scores = row.get("scores", row)
    if not isinstance(scores, Mapping):
        raise CalibrationError(f"row {i}: 'scores' must be a mapping")
    try:
        label = float(row["label"])  # type: ignore[arg-type]
        clean = {
            m: None if scores.get(m) is None else float(scores[m]) for m in calibrated_modules()
        }
    except KeyError as e:
        raise CalibrationError(f"row {i}: no 'label'") from e
    except (TypeError, ValueError) as e:
        raise CalibrationError(f"row {i}: a score or the label is not a number: {e}") from e
    return ValidationRow(str(row.get("item_id", i)), clean, label)


def scored_modules(rows: Sequence[ValidationRow | Mapping[str, object]]) -> tuple[str, ...]:
    """The modules (in :func:`calibrated_modules` order) with a finite score in at least one
    row."""
    coerced = [_coerce_row(r, i) for i, r in enumerate(rows)]
    return tuple(
        m
        for m in calibrated_modules()
        if any((v := r.scores.get(m)) is not None and math.isfinite(float(v)) for r in coerced)
    )


def _check_modules(modules: Sequence[str]) -> tuple[str, ...]:
    mods = tuple(modules)
    known = calibrated_modules()
    if not mods or len(set(mods)) != len(mods) or any(m not in known for m in mods):
        raise CalibrationError(f"modules must be distinct names among {known}; got {mods}")
    return mods


def _matrix(
    rows: Sequence[ValidationRow | Mapping[str, object]], modules: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Scores (n × k, NaN = missing) and labels of the usable rows, and the skip warnings."""
    scores, labels, warnings = [], [], []
    for i, raw in enumerate(rows):
        r = _coerce_row(raw, i)
        given = [r.scores.get(m) for m in modules]
        vals = [math.nan if v is None or not math.isfinite(v) else float(v) for v in given]
        if not math.isfinite(r.label):
            warnings.append(f"row {r.item_id}: label is not a number; skipped")
        elif all(math.isnan(v) for v in vals):
            warnings.append(f"row {r.item_id}: no module score among {modules}; skipped")
        else:
            scores.append(vals)
            labels.append(r.label)
    return (
        np.asarray(scores, dtype=np.float64).reshape(-1, len(modules)),
        np.asarray(labels),
        warnings,
    )


def _trust(scores: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted mean over each row's available modules; NaN where they carry no weight."""
    avail = ~np.isnan(scores)
    wsum = (avail * w).sum(axis=1)
    num = (np.where(avail, scores, 0.0) * w).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(wsum > 0, num / np.where(wsum > 0, wsum, 1.0), np.nan)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(stats.spearmanr(x, y)[0])


def _simplex(k: int, units: int, min_units: int) -> list[tuple[int, ...]]:
    """All k-tuples of integers ≥ min_units summing to units, lexicographic."""
    if k == 1:
        return [(units,)] if units >= min_units else []
    out: list[tuple[int, ...]] = []
    for first in range(min_units, units - min_units * (k - 1) + 1):
        out.extend((first, *rest) for rest in _simplex(k - 1, units - first, min_units))
    return out


def _default_weights(modules: tuple[str, ...]) -> np.ndarray:
    defaults = default_weights()
    w = np.array([defaults[m] for m in modules])
    return w / w.sum()


def _weight_vector(weights: Mapping[str, float]) -> tuple[tuple[str, ...], np.ndarray]:
    mods = _check_modules(list(weights))
    w = np.array([float(weights[m]) for m in mods])
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise CalibrationError(f"weights must be non-negative with a positive sum; got {weights}")
    return mods, w / w.sum()


def _as_dict(modules: Sequence[str], w: np.ndarray) -> dict[str, float]:
    return {m: round(float(x), 10) for m, x in zip(modules, w, strict=True)}


# ----------------------------------------------------------------------------- public API


def spearman_ci(rho: float, n: int, *, level: float = 0.95) -> tuple[float, float] | None:
    """Confidence interval of a Spearman ρ over ``n`` pairs (None: n < 4, |ρ| = 1 or NaN).

    Fisher's z = atanh(ρ) with Fieller, Hartley & Pearson's (1957) variance 1.06 / (n − 3).
    """
    if n < 4 or not math.isfinite(rho) or abs(rho) >= 1 or not 0 < level < 1:
        return None  # (|ρ| = 1: Fisher's z is infinite, the interval undefined)
    from statistics import NormalDist

    z = math.atanh(min(max(rho, -1 + 1e-12), 1 - 1e-12))
    half = NormalDist().inv_cdf(0.5 + level / 2) * math.sqrt(1.06 / (n - 3))
    return math.tanh(z - half), math.tanh(z + half)


def weight_search(
    *,
    rows: Sequence[ValidationRow | Mapping[str, object]],
    modules: Sequence[str] | None = None,
    step: float = 0.05,
    min_weight: float = 0.0,
) -> WeightSearchResult:
    """Grid search of module weights maximising Spearman ρ(trust, label).

    The grid is every weight vector on the simplex whose entries are multiples of ``step`` and at
    least ``min_weight``. A grid point that leaves some usable row without weight on any of its
    available modules is skipped (its ρ would be over fewer rows, not comparable), as is one with
    constant trust. Ties in ρ go to the point closest (Euclidean) to the default weights
    (0.4/0.3/0.3, and 0.4 for the report side, renormalised over ``modules``), then to the
    lexicographically first. A row without a report (no reference) is scored on its other
    modules, as the fusion does.

    Args:
        rows: ``ValidationRow`` objects, or mappings with a ``label`` and the module scores
            (flat or under ``scores``); ``None`` = module missing.
        modules: modules to weight, a subset of grounding, logic, stability, report (None: those
            scored in at least one row).
        step: grid spacing; ``1 / step`` must be a whole number.
        min_weight: lower bound of every weight (a multiple of ``step``).

    Raises:
        CalibrationError: bad grid, fewer than 3 usable rows, constant labels, or no grid point
            that scores every usable row.
    """
    mods = _check_modules(scored_modules(rows) if modules is None else modules)
    if not 0 < step <= 1 or abs(1 / step - round(1 / step)) > 1e-9:
        raise CalibrationError(f"step must divide 1 (e.g. 0.05, 0.1); got {step}")
    units = round(1 / step)
    min_units = min_weight / step
    if min_weight < 0 or abs(min_units - round(min_units)) > 1e-9:
        raise CalibrationError(
            f"min_weight must be a non-negative multiple of step; got {min_weight}"
        )
    min_units = round(min_units)
    if min_units * len(mods) > units:
        raise CalibrationError(f"min_weight {min_weight} × {len(mods)} modules exceeds 1")
    scores, labels, warnings = _matrix(rows, mods)
    if labels.size < 3:
        raise CalibrationError(f"only {labels.size} usable rows; at least 3 are needed")
    if np.ptp(labels) == 0:
        raise CalibrationError(f"all {labels.size} labels equal {labels[0]}: ρ is undefined")

    default = _default_weights(mods)
    default_rho = _spearman(_trust(scores, default), labels)
    ranked: list[tuple[float, float, tuple[float, ...], np.ndarray]] = []
    skipped = 0
    for point in _simplex(len(mods), units, min_units):
        w = np.array(point, dtype=np.float64) / units
        trust = _trust(scores, w)
        rho = math.nan if np.isnan(trust).any() else _spearman(trust, labels)
        if math.isnan(rho):
            skipped += 1
            continue
        dist = float(np.linalg.norm(w - default))
        ranked.append((-round(rho / _TIE) * _TIE, round(dist, 12), tuple(w), w))
    if not ranked:
        raise CalibrationError("no grid point gives a non-constant trust for every usable row")
    ranked.sort(key=lambda t: t[:3])
    best = ranked[0][3]
    best_rho = _spearman(_trust(scores, best), labels)
    top = tuple(
        GridPoint(_as_dict(mods, w), _spearman(_trust(scores, w), labels)) for *_, w in ranked[:5]
    )
    if skipped:
        warnings.append(f"{skipped} grid point(s) skipped: a row without weight or constant trust")
    ci = spearman_ci(best_rho, int(labels.size))
    if labels.size < MIN_ROWS:
        span = f"95% CI [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "no CI (too few rows or |ρ| = 1)"
        warnings.append(
            f"only {labels.size} labelled rows (fewer than {MIN_ROWS}): ρ {best_rho:.3f} has a "
            f"{span}, and the weights are chosen on these rows, so ρ is optimistic; do not "
            "deploy these weights without more labels"
        )
    return WeightSearchResult(
        weights=_as_dict(mods, best),
        spearman=best_rho,
        default_weights=_as_dict(mods, default),
        default_spearman=default_rho,
        top=top,
        n_rows=int(labels.size),
        n_points=len(ranked),
        n_points_skipped=skipped,
        warnings=tuple(warnings),
        spearman_ci=ci,
    )


def thresholds_for_precision(
    *,
    trust: Sequence[float] | NDArray[np.float64],
    acceptable: Sequence[bool | int] | NDArray[np.bool_],
    target_precision: float = 0.9,
) -> ThresholdResult:
    """Lowest threshold t such that the items deployed (trust ≥ t) reach the target precision.

    Candidate thresholds are the observed trust values rounded as the gate rounds them
    (:func:`pathgls.fusion.shown`): the gate decides on those numbers, so the threshold found
    deploys exactly the items counted here. Precision = acceptable deployed / deployed; recall =
    acceptable deployed / acceptable. Pairs with a NaN trust are dropped with a warning.

    Raises:
        CalibrationError: mismatched lengths, labels other than 0/1, a target outside (0, 1], or
            no usable pair.
    """
    if not 0 < target_precision <= 1:
        raise CalibrationError(f"target_precision must be in (0, 1]; got {target_precision}")
    t = np.asarray(trust, dtype=np.float64)
    a = np.asarray(acceptable, dtype=np.float64)
    if t.shape != a.shape or t.ndim != 1:
        raise CalibrationError(f"{t.size} trust values for {a.size} acceptable labels")
    if not np.isin(a, (0.0, 1.0)).all():
        raise CalibrationError("acceptable labels must be 0/1 (or booleans)")
    warnings = []
    finite = np.isfinite(t)
    if not finite.all():
        warnings.append(f"{int((~finite).sum())} pair(s) with a missing trust dropped")
    t, a = t[finite], a[finite].astype(bool)
    if t.size == 0:
        raise CalibrationError("no usable (trust, acceptable) pair")
    t = np.array([shown(x) for x in t], dtype=np.float64)  # what the gate compares
    positives = int(a.sum())

    def unreachable(reason: str) -> ThresholdResult:
        return ThresholdResult(
            None, target_precision, int(t.size), 0, None, None, reason, tuple(warnings)
        )

    if positives == 0:
        return unreachable("no acceptable item: no threshold reaches any precision")
    for cut in np.unique(t):  # ascending: the first hit is the lowest threshold
        deployed = t >= cut
        n_dep = int(deployed.sum())
        tp = int((deployed & a).sum())
        if tp / n_dep >= target_precision - _TIE:
            return ThresholdResult(
                threshold=float(cut),
                target_precision=target_precision,
                n=int(t.size),
                n_deployed=n_dep,
                precision=tp / n_dep,
                recall=tp / positives,
                warnings=tuple(warnings),
            )
    return unreachable(
        f"no threshold reaches precision {target_precision}: even the highest trust "
        f"({float(t.max())}) deploys an unacceptable item"
    )


def ablation(
    *,
    rows: Sequence[ValidationRow | Mapping[str, object]],
    weights: Mapping[str, float],
) -> list[AblationRow]:
    """Spearman ρ(trust, label) with all weighted modules, then with each one dropped.

    Dropping a module removes its weight and renormalises the others. Each configuration is
    scored on the rows it can score (``n``); a configuration with no weight left or constant trust
    has ρ = NaN.

    Args:
        rows: as for :func:`weight_search`.
        weights: module → non-negative weight (renormalised to sum 1).

    Raises:
        CalibrationError: unknown modules, negative or all-zero weights, fewer than 3 usable rows,
            or constant labels.
    """
    mods, w = _weight_vector(weights)
    scores, labels, skip_warnings = _matrix(rows, mods)
    if labels.size < 3:
        raise CalibrationError(f"only {labels.size} usable rows; at least 3 are needed")
    if np.ptp(labels) == 0:
        raise CalibrationError(f"all {labels.size} labels equal {labels[0]}: ρ is undefined")

    def evaluate(wv: np.ndarray) -> tuple[int, float, list[str]]:
        notes = []
        if wv.sum() <= 0:
            return 0, math.nan, ["no weight left"]
        trust = _trust(scores, wv / wv.sum())
        keep = ~np.isnan(trust)
        if not keep.all():
            notes.append(f"{int((~keep).sum())} row(s) without a weighted module left out")
        rho = _spearman(trust[keep], labels[keep])
        if math.isnan(rho):
            notes.append("ρ undefined (fewer than 3 rows or constant trust/labels)")
        return int(keep.sum()), rho, notes

    n_all, rho_all, notes = evaluate(w)
    out = [AblationRow(None, _as_dict(mods, w), n_all, rho_all, 0.0, tuple(skip_warnings + notes))]
    for i, m in enumerate(mods):
        wd = w.copy()
        wd[i] = 0.0
        n, rho, notes = evaluate(wd)
        kept = wd / wd.sum() if wd.sum() > 0 else wd
        rest = [x for x in mods if x != m]
        out.append(
            AblationRow(
                m,
                _as_dict(rest, np.delete(kept, i)),
                n,
                rho,
                rho - rho_all,
                tuple(notes),
            )
        )
    return out


def trust_scores(
    *,
    rows: Sequence[ValidationRow | Mapping[str, object]],
    weights: Mapping[str, float],
) -> tuple[np.ndarray, np.ndarray]:
    """Trust and label of each usable row under ``weights`` (the trust :func:`weight_search` ranks).

    Trust is the weighted mean over the row's available modules, renormalised by the weight they
    carry; NaN where none of them is weighted. Rows without any module score or label are left
    out, as in :func:`weight_search`.

    Raises:
        CalibrationError: unknown modules, or negative or all-zero weights.
    """
    mods, w = _weight_vector(weights)
    scores, labels, _ = _matrix(rows, mods)
    return _trust(scores, w), labels
