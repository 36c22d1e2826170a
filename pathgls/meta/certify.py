"""Certified gate thresholds: a finite-sample guarantee on the share of bad deployed reports.

:func:`certify_deploy` picks the loosest deploy threshold λ such that, among the reports the
gate deploys (trust ≥ λ), the share labelled unacceptable is ≤ α with probability ≥ 1 − δ over
the draw of the calibration rows (rows exchangeable with the rows the gate will see). It is the
Learn-then-Test recipe (Angelopoulos, Bates, Candès, Jordan & Lei 2021): for each threshold of a
grid fixed in advance (the gate's 0.001 steps, :data:`pathgls.fusion.GATE_DECIMALS`) the null
"risk(λ) > α" gets an exact binomial p-value, and fixed-sequence testing from strict to loose
rejects nulls until the first that cannot be rejected — no multiplicity correction is needed.

* The risk is conditional on deployment: given that ``n`` rows deploy at λ, they are ``n``
  exchangeable draws from the reports above λ, so the count ``k`` of unacceptable ones is
  Binomial(n, risk(λ)), and the null is rejected when the one-sided Clopper–Pearson upper bound
  :func:`binomial_upper` at level 1 − δ is ≤ α (the same as the exact binomial test's
  p-value P(Bin(n, α) ≤ k) ≤ δ).
* The sequence starts at the strictest threshold that deploys at least :func:`min_rows`
  = ⌈ln δ / ln(1 − α)⌉ rows: with fewer, even a clean set cannot pass and the sequence would
  stop at once. Further starts can be asked for (:attr:`CertifyConfig.starts`: LTT's fixed
  sequence with several starts, each at δ / the number of starts, a union bound); on a synthetic
  risk curve they did not certify more often than one start, so one is the default. The starts
  are read from the trust values alone; they keep the guarantee when the chance of an
  unacceptable report does not grow with trust (the premise of a trust score).
  ``benchmarks/bench_certify.py`` checks the guarantee on real expert scores.
* :func:`certify_reject` is the mirror image: the strictest reject threshold such that the share
  of *acceptable* reports among the rejected (trust < λ) is ≤ β, tested from loose to strict.
* When nothing passes, :func:`rows_needed` says how many labelled rows would be needed at the
  observed rates (the deploy rate and the unacceptable share of the most promising threshold).

Pure functions on arrays; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pathgls.errors import CalibrationError

#: The gate decides on trust rounded to 3 decimals, so these are all the thresholds there are.
GRID_DECIMALS = 3
GRID: tuple[float, ...] = tuple(round(i / 10**GRID_DECIMALS, GRID_DECIMALS) for i in range(1001))
METHOD = "Learn-then-Test, fixed-sequence, Clopper-Pearson"


@dataclass(frozen=True)
class CertifyConfig:
    """The guarantee asked for."""

    # Largest share of unacceptable reports among the deployed (deploy) or of acceptable
    # reports among the rejected (reject).
    risk: float = 0.1
    # Probability, over the draw of the calibration rows, that the share stays ≤ risk (1 − δ).
    confidence: float = 0.9
    # Where the fixed sequences start: the strictest threshold selecting at least this share
    # of the rows (0: the fewest rows that can pass, :func:`min_rows`). One sequence per start,
    # each at δ / (number of starts).
    starts: tuple[float, ...] = (0.0,)

    def __post_init__(self) -> None:
        if not self.starts or any(not 0 <= s < 1 for s in self.starts):
            raise CalibrationError(f"starts must be shares in [0, 1); got {self.starts}")
        if not 0 < self.risk < 1:
            raise CalibrationError(f"risk must be in (0, 1); got {self.risk}")
        if not 0 < self.confidence < 1:
            raise CalibrationError(f"confidence must be in (0, 1); got {self.confidence}")

    @property
    def delta(self) -> float:
        """δ = 1 − confidence."""
        return 1.0 - self.confidence

    @property
    def delta_each(self) -> float:
        """δ of each fixed sequence: δ split evenly over the starts."""
        return self.delta / len(self.starts)


@dataclass(frozen=True)
class Certified:
    """A certified threshold (``threshold`` None: none could be certified, see ``reason``).

    ``bound`` is the Clopper–Pearson upper bound of the risk at ``threshold``; ``n_selected``
    rows fall on the gated side of it (deployed, or rejected), ``n_errors`` of them wrongly
    (unacceptable deployed, or acceptable rejected); ``rate`` = n_selected / n.
    """

    side: str  # "deploy" or "reject"
    threshold: float | None
    risk: float
    confidence: float
    n: int
    n_selected: int
    n_errors: int
    bound: float | None
    rate: float
    tested: int  # thresholds tested before the sequence stopped
    reason: str | None = None
    rows_needed: int | None = None  # labelled rows in all for a certificate at observed rates


def binomial_upper(*, k: float, n: float, delta: float) -> float:
    """One-sided (1 − δ) Clopper–Pearson upper bound of a binomial rate with k events in n.

    ``k`` and ``n`` may be fractional (used by :func:`rows_needed` at observed rates); 1.0 when
    k ≥ n, and 1.0 for n = 0.
    """
    if n <= 0 or k >= n:
        return 1.0
    return float(stats.beta.ppf(1.0 - delta, k + 1.0, n - k))


def min_rows(*, risk: float, delta: float) -> int:
    """The fewest rows with which a set without any error passes: (1 − α)^n ≤ δ."""
    return math.ceil(math.log(delta) / math.log1p(-risk) - 1e-12)


def _check(trust: Sequence[float], acceptable: Sequence[bool | int]) -> tuple[np.ndarray, ...]:
    t = np.asarray(trust, dtype=np.float64)
    a = np.asarray(acceptable)
    if t.ndim != 1 or t.shape != a.shape:
        raise CalibrationError(f"{t.size} trust values for {a.size} acceptable labels")
    if not np.isin(a.astype(np.float64), (0.0, 1.0)).all():
        raise CalibrationError("acceptable labels must be 0/1 (or booleans)")
    if not np.isfinite(t).all():
        raise CalibrationError("every trust value must be a finite number (drop missing rows)")
    if t.size == 0:
        raise CalibrationError("no labelled row to certify on")
    return np.round(t, GRID_DECIMALS), a.astype(bool)


def _sequence(
    counts: np.ndarray, errors: np.ndarray, cfg: CertifyConfig, n: int
) -> tuple[int | None, int, int | None]:
    """Fixed-sequence tests over ``counts``/``errors`` ordered strict → loose, one per start.

    Each start (:attr:`CertifyConfig.starts`) runs its own sequence at δ / (number of distinct
    starts) — a union bound, so the family-wise error stays ≤ δ. Returns the index of the
    loosest rejected null of any sequence (None: none), how many nulls were tested, and the
    first start (None: no threshold selects enough rows).
    """
    starts = _starts(counts, cfg, n)
    if not starts:
        return None, 0, None
    delta = cfg.delta_each
    passed, tested = None, 0
    for start in starts:
        bounds = _bounds(errors[start:], counts[start:], delta)
        failed = np.flatnonzero(bounds > cfg.risk)
        stop = int(failed[0]) if failed.size else len(bounds)
        tested += stop + (1 if failed.size else 0)
        if stop > 0:
            passed = max(passed if passed is not None else -1, start + stop - 1)
    return passed, tested, starts[0]


def _starts(counts: np.ndarray, cfg: CertifyConfig, n: int) -> list[int]:
    """Indices where the sequences start: the strictest thresholds selecting enough rows.

    Read from the counts alone (the trust values, never the labels).
    """
    m = min_rows(risk=cfg.risk, delta=cfg.delta_each)
    out: list[int] = []
    for share in cfg.starts:
        need = max(m, math.ceil(share * n))
        i = next((i for i, c in enumerate(counts) if c >= need), None)
        if i is not None and i not in out:
            out.append(i)
    return out


def _bounds(k: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """:func:`binomial_upper` of each (k, n), vectorised."""
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    ok = (n > 0) & (k < n)
    out = np.ones(k.shape)
    out[ok] = stats.beta.ppf(1.0 - delta, k[ok] + 1.0, n[ok] - k[ok])
    return out


def _result(
    side: str,
    grid: np.ndarray,
    counts: np.ndarray,
    errors: np.ndarray,
    cfg: CertifyConfig,
    n: int,
    explain: bool,
) -> Certified:
    passed, tested, start = _sequence(counts, errors, cfg, n)
    if passed is not None:
        return Certified(
            side=side,
            threshold=float(grid[passed]),
            risk=cfg.risk,
            confidence=cfg.confidence,
            n=n,
            n_selected=int(counts[passed]),
            n_errors=int(errors[passed]),
            bound=binomial_upper(k=errors[passed], n=counts[passed], delta=cfg.delta_each),
            rate=float(counts[passed]) / n,
            tested=tested,
        )
    what = (
        "unacceptable among the deployed" if side == "deploy" else "acceptable among the rejected"
    )
    need = rows_needed(counts=counts, errors=errors, n=n, config=cfg) if explain else None
    if start is None:
        reason = (
            f"no threshold puts {min_rows(risk=cfg.risk, delta=cfg.delta_each)} rows on the {side} "
            f"side, the fewest with which a share of {what} ≤ {cfg.risk:g} can be certified at "
            f"confidence {cfg.confidence:g}"
        )
    else:
        i = start
        reason = (
            f"the strictest testable threshold {grid[i]:.3f} {side}s {int(counts[i])} of {n} "
            f"rows with {int(errors[i])} {what}: bound "
            f"{binomial_upper(k=errors[i], n=counts[i], delta=cfg.delta_each):.3f} > "
            f"{cfg.risk:g}"
        )
    if not explain:
        pass
    elif need is None:
        reason += f"; no threshold has an observed share of {what} below {cfg.risk:g}, so more "
        reason += "rows of the same kind cannot help (a better trust score or a larger risk can)"
    else:
        reason += f"; at the observed rates at least {need} labelled rows in all ({need - n} more)"
    return Certified(side, None, cfg.risk, cfg.confidence, n, 0, 0, None, 0.0, tested, reason, need)


def certify_deploy(
    *,
    trust: Sequence[float],
    acceptable: Sequence[bool | int],
    config: CertifyConfig,
    explain: bool = True,
) -> Certified:
    """The loosest deploy threshold with P(share unacceptable among deployed ≤ α) ≥ 1 − δ.

    ``explain`` False skips :func:`rows_needed` when nothing passes (for many repeated calls).

    Raises:
        CalibrationError: mismatched lengths, labels other than 0/1, missing trust, no row.
    """
    t, a = _check(trust, acceptable)
    grid = np.asarray(GRID[::-1])  # strict (1.000) → loose (0.000)
    order = np.sort(t)
    bad_sorted = np.sort(t[~a])
    counts = t.size - np.searchsorted(order, grid - 1e-9, side="left")  # t ≥ λ
    errors = bad_sorted.size - np.searchsorted(bad_sorted, grid - 1e-9, side="left")
    return _result("deploy", grid, counts, errors, config, int(t.size), explain)


def certify_reject(
    *,
    trust: Sequence[float],
    acceptable: Sequence[bool | int],
    config: CertifyConfig,
    explain: bool = True,
) -> Certified:
    """The highest reject threshold with P(share acceptable among rejected ≤ β) ≥ 1 − δ.

    Rejected = trust < λ (the gate rejects below its review threshold).

    Raises:
        CalibrationError: mismatched lengths, labels other than 0/1, missing trust, no row.
    """
    t, a = _check(trust, acceptable)
    grid = np.asarray(GRID)  # loose (rejects nothing at 0.000) → strict (rejects most)
    order = np.sort(t)
    good_sorted = np.sort(t[a])
    counts = np.searchsorted(order, grid - 1e-9, side="left")  # t < λ
    errors = np.searchsorted(good_sorted, grid - 1e-9, side="left")
    return _result("reject", grid, counts, errors, config, int(t.size), explain)


def rows_needed(
    *, counts: np.ndarray, errors: np.ndarray, n: int, config: CertifyConfig
) -> int | None:
    """Labelled rows in all that would certify some threshold at the observed rates.

    For each threshold whose observed error share is below the risk, the smallest N with
    ``binomial_upper(k=N·d·p, n=N·d) ≤ α`` (d: the share of rows it selects, p: the error share
    among them); the least over thresholds. None: no threshold's observed share is below α.
    It ignores the stricter thresholds of the sequence, so it is a floor, not a promise.
    """
    best: int | None = None
    for c, e in sorted(set(zip(counts.tolist(), errors.tolist(), strict=True))):
        if c <= 0 or e / c >= config.risk:
            continue
        d, p = c / n, e / c
        lo, hi = n, n
        while binomial_upper(k=hi * d * p, n=hi * d, delta=config.delta_each) > config.risk:
            hi *= 2
            if hi > 10**9:
                break
        else:
            while hi - lo > 1:  # smallest N in (lo, hi] that passes
                mid = (lo + hi) // 2
                ok = (
                    binomial_upper(k=mid * d * p, n=mid * d, delta=config.delta_each) <= config.risk
                )
                lo, hi = (lo, mid) if ok else (mid, hi)
            best = hi if best is None else min(best, hi)
    return None if best is None else max(best, n + 1)
