"""Which metric to believe: correlation with expert scores, sensitivity to perturbations.

:func:`correlate` follows the published protocol of the HARE expert evaluation: keep the pairs
with a non-zero expert score (``include_zeros`` keeps them all), scale the expert score and the
metric to [0, 1] (expert 0–4 divided by 4; metric min–max over the kept pairs), and report
Pearson r, Spearman ρ and Kendall τ (each with its p-value), R² and RMSE of the least-squares
line expert ~ metric, and n. Rows with a NaN expert score or metric value are dropped with a
warning, never imputed.

:func:`sensitivity` is the PathGLS Table 1 harness: a score function applied to control and
perturbed sets of reports (the tests make them with ``tests/perturb.py``), the mean per set and
its change in percent.

Calibrating the trust score itself — the module weight search, deploy thresholds for a target
precision and the module ablation — lives in :mod:`pathgls.meta.calibrate` (``pathgls calibrate``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats

from pathgls.errors import MetaError, TableError
from pathgls.io.tables import read_table


@dataclass(frozen=True)
class ExpertRow:
    """One (reference, candidate, expert score) row."""

    case_id: str
    reference: str
    candidate: str
    expert: float


@dataclass(frozen=True)
class Correlation:
    """One metric against the expert scores."""

    metric: str
    n: int
    pearson: float
    pearson_p: float
    spearman: float
    spearman_p: float
    kendall: float
    kendall_p: float
    r2: float
    rmse: float
    warnings: tuple[str, ...] = ()


def read_expert_table(
    path: str | os.PathLike[str],
    *,
    reference: str = "reference",
    candidate: str = "candidate",
    score: str = "expert_score",
    case_id: str = "case_id",
) -> tuple[list[ExpertRow], list[str]]:
    """Rows of a TSV/CSV of (reference, candidate, expert score); bad rows skipped with a warning.

    Raises:
        MetaError: unreadable file or missing columns (:func:`~pathgls.io.tables.read_table`).
    """
    p = Path(path)
    try:
        table = read_table(p, required=(reference, candidate, score), what="expert table")
    except TableError as e:
        raise MetaError(str(e)) from e
    rows, warnings = [], []
    seen: dict[str, int] = {}  # case id → its first line
    twice: list[str] = []
    first_bad: tuple[int, str | None] | None = None
    numeric = 0
    for i, r in zip(table.lines, table.rows, strict=True):
        try:
            value = float(r[score])  # type: ignore[arg-type]
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            warnings.append(f"line {i}: expert score {r[score]!r} is not a number; skipped")
            first_bad = first_bad or (i, r[score])
            continue
        numeric += 1
        ref, cand = r[reference] or "", r[candidate] or ""
        if not ref.strip() or not cand.strip():
            warnings.append(f"line {i}: empty reference or candidate; skipped")
            continue
        rows.append(ExpertRow(r.get(case_id) or str(i), ref, cand, value))
        if r.get(case_id):  # one row per case, or per (case, candidate slot)
            key = "/".join(x for x in (r[case_id], r.get("candidate_slot")) if x)
            if key in seen:
                twice.append(f"{key!r} (lines {seen[key]} and {i})")
            seen.setdefault(key, i)
    if twice:
        raise MetaError(
            f"{p}: {len(twice)} {case_id} value(s) given twice: {', '.join(twice[:10])}; "
            "each case must be scored once (a duplicate would count twice in every correlation)"
        )
    if first_bad is not None and numeric == 0:
        raise MetaError(
            f"{p}: the expert score column {score!r} holds no number (line {first_bad[0]}: "
            f"{first_bad[1]!r}); name the score column (`pathgls meta --score-column`)"
        )
    return rows, warnings


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return np.zeros_like(x) if hi == lo else (x - lo) / (hi - lo)


def correlate(
    *,
    metric: str,
    values: Sequence[float],
    expert: Sequence[float],
    expert_max: float = 4.0,
    include_zeros: bool = False,
) -> Correlation:
    """Correlation of one metric with the expert scores under the published protocol.

    Raises:
        MetaError: mismatched lengths, or fewer than 3 usable pairs.
    """
    v = np.asarray(values, dtype=np.float64)
    e = np.asarray(expert, dtype=np.float64)
    if v.shape != e.shape:
        raise MetaError(f"{metric}: {v.size} metric values for {e.size} expert scores")
    warnings = []
    finite = np.isfinite(v) & np.isfinite(e)
    if not finite.all():
        warnings.append(f"{int((~finite).sum())} pair(s) with a missing value dropped")
    keep = finite & ((e != 0) | include_zeros)
    v, e = v[keep], e[keep]
    if v.size < 3:
        raise MetaError(f"{metric}: only {v.size} usable pairs; at least 3 are needed")
    if np.ptp(e) == 0:
        raise MetaError(
            f"the expert scores of all {e.size} pairs are {e[0]:g}: with constant scores no "
            "correlation, R² or RMSE of a fit means anything; score pairs that differ"
        )
    x, y = _minmax(v), e / expert_max
    if np.ptp(x) == 0:
        nan = float("nan")
        warnings.append(
            f"{metric} is constant ({v[0]:g}) on these {v.size} pairs: correlations undefined"
        )
        return Correlation(
            metric, int(v.size), nan, nan, nan, nan, nan, nan, nan, nan, tuple(warnings)
        )
    pr, pp = stats.pearsonr(x, y)
    sr, sp = stats.spearmanr(x, y)
    kt, kp = stats.kendalltau(x, y)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / ss_tot if ss_tot > 0 else float("nan")
    return Correlation(
        metric=metric,
        n=int(v.size),
        pearson=float(pr),
        pearson_p=float(pp),
        spearman=float(sr),
        spearman_p=float(sp),
        kendall=float(kt),
        kendall_p=float(kp),
        r2=r2,
        rmse=float(np.sqrt((resid**2).mean())),
        warnings=tuple(warnings),
    )


def scatter_plot(
    path: str | os.PathLike[str],
    *,
    metric: str,
    values: Sequence[float],
    expert: Sequence[float],
    include_zeros: bool = False,
    expert_max: float = 4.0,
) -> Path:
    """Scatter of the scaled metric against the scaled expert score, with the fitted line."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    v = np.asarray(values, dtype=np.float64)
    e = np.asarray(expert, dtype=np.float64)
    keep = np.isfinite(v) & np.isfinite(e) & ((e != 0) | include_zeros)
    x, y = _minmax(v[keep]), e[keep] / expert_max
    c = correlate(metric=metric, values=values, expert=expert, include_zeros=include_zeros)
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(x, y, s=12, alpha=0.6)
    if np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        xs = np.linspace(0, 1, 2)
        ax.plot(xs, slope * xs + intercept, color="C3")
    ax.set_xlabel(f"{metric} (min–max scaled)")
    ax.set_ylabel("expert score / 4")
    ax.set_title(f"{metric}: r = {c.pearson:.3f}, ρ = {c.spearman:.3f} (n = {c.n})")
    fig.tight_layout()
    from pathgls.io.atomic import write_via

    out = Path(path)
    write_via(out, lambda p: fig.savefig(p, dpi=120, format=out.suffix.lstrip(".") or "png"))
    plt.close(fig)
    return out


@dataclass
class SensitivityRow:
    """Mean score of one perturbation set and its change against the originals."""

    name: str
    kind: str  # control, visual, logic
    mean: float
    n: int
    delta_percent: float  # 100 × (mean − original mean) / original mean
    failures: int = 0


@dataclass
class SensitivityTable:
    """Table 1 of PathGLS for one score."""

    score: str
    original_mean: float
    rows: list[SensitivityRow] = field(default_factory=list)


def sensitivity(
    *,
    score: str,
    originals: Sequence[str],
    sets: dict[str, tuple[str, Sequence[str | None]]],
    score_fn: Callable[[str, str], float | None],
) -> SensitivityTable:
    """Mean of ``score_fn(original, variant)`` per perturbation set and its Δ% vs the originals.

    Args:
        score: Name of the score (for the table).
        originals: The unperturbed reports.
        sets: name → (kind, variants aligned with ``originals``; None where the perturbation
            did not apply).
        score_fn: ``(original, report) → score`` (None: could not be scored). The originals'
            mean is ``score_fn(o, o)``.

    Raises:
        MetaError: misaligned sets or no scorable original.
    """
    base = [score_fn(o, o) for o in originals]
    base_vals = [b for b in base if b is not None]
    if not base_vals:
        raise MetaError(f"{score}: no original report could be scored")
    mean0 = float(np.mean(base_vals))
    table = SensitivityTable(score=score, original_mean=mean0)
    for name, (kind, variants) in sets.items():
        if len(variants) != len(originals):
            raise MetaError(f"set {name}: {len(variants)} variants for {len(originals)} originals")
        vals, failures = [], 0
        for o, v in zip(originals, variants, strict=True):
            if v is None:
                continue
            s = score_fn(o, v)
            if s is None:
                failures += 1
            else:
                vals.append(s)
        mean = float(np.mean(vals)) if vals else float("nan")
        delta = 100.0 * (mean - mean0) / mean0 if mean0 else float("nan")
        table.rows.append(SensitivityRow(name, kind, mean, len(vals), delta, failures))
    return table
