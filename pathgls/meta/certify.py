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
* **Batch mode** (:attr:`CertifyConfig.batch` = m): the guarantee is on the *realised* share
  among the reports deployed in the next batch of m, not on the population risk: each threshold
  passes when the bound of :mod:`pathgls.meta.certify_batch` on the chance that such a batch
  breaks α is ≤ δ/2, the calibration side's δ/2 shared by a risk and a deploy-rate bound.
* **Run mode** (:func:`certify_for_run`): the realised share among the deployed reports of one
  run whose trust values are known, by an exact hypergeometric bound
  (:mod:`pathgls.meta.certify_run`).

Pure functions on arrays; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pathgls.errors import CalibrationError
from pathgls.meta.certify_batch import DELTA_SHARES, batch_bounds, batch_tail, min_clean_rows
from pathgls.meta.certify_run import (
    check_run_trust,
    count_upper,
    rows_needed_run,
    run_sequence,
    side_counts,
)

#: The gate decides on trust rounded to 3 decimals, so these are all the thresholds there are.
GRID_DECIMALS = 3
GRID: tuple[float, ...] = tuple(round(i / 10**GRID_DECIMALS, GRID_DECIMALS) for i in range(1001))
METHOD = "Learn-then-Test, fixed-sequence, Clopper-Pearson"
METHOD_BATCH = (
    "Learn-then-Test, fixed-sequence, Clopper-Pearson risk and deploy-rate bounds, "
    "binomial batch tail"
)


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
    # Batch mode: the share among the deployed reports of the next batch of this many reports
    # (the realised share) stays ≤ risk with probability ≥ confidence; None: the population risk.
    batch: int | None = None

    def __post_init__(self) -> None:
        if self.batch is not None and (isinstance(self.batch, bool) or self.batch < 1):
            raise CalibrationError(f"batch must be a number of reports ≥ 1; got {self.batch}")
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
    def delta_cal(self) -> float:
        """The δ spent on the calibration rows: all of it, or in batch mode δ_r + δ_p."""
        return self.delta if self.batch is None else self.delta * sum(DELTA_SHARES[:2])

    @property
    def delta_batch(self) -> float:
        """The δ left for the batch's own sampling noise (batch mode; 0 otherwise)."""
        return 0.0 if self.batch is None else self.delta * DELTA_SHARES[2]

    @property
    def delta_each(self) -> float:
        """δ of each fixed sequence: the calibration side's δ split evenly over the starts."""
        return self.delta_cal / len(self.starts)

    @property
    def delta_bound(self) -> float:
        """δ of the Clopper–Pearson risk bound (batch mode: half of each sequence's δ)."""
        return self.delta_each if self.batch is None else self.delta_each / 2


@dataclass(frozen=True)
class Certified:
    """A certified threshold (``threshold`` None: none could be certified, see ``reason``).

    ``bound`` is the Clopper–Pearson upper bound of the risk at ``threshold``; ``n_selected``
    rows fall on the gated side of it (deployed, or rejected), ``n_errors`` of them wrongly
    (unacceptable deployed, or acceptable rejected); ``rate`` = n_selected / n. In batch mode
    ``batch`` is m and ``batch_tail`` the bound on the chance that a batch of m breaks the risk.
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
    batch: int | None = None
    batch_tail: float | None = None
    # run mode: the run's report count, how many it selects at the threshold, and the bound on
    # the errors among those (``bound`` is then that count over ``run_selected``)
    run_items: int | None = None
    run_selected: int | None = None
    run_errors_bound: int | None = None


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
    passed, tested = None, 0
    for start in starts:
        stop = _first_failure(errors, counts, cfg, n, start)
        tested += stop + (1 if start + stop < len(counts) else 0)
        if stop > 0:
            passed = max(passed if passed is not None else -1, start + stop - 1)
    return passed, tested, starts[0]


def _first_failure(
    errors: np.ndarray, counts: np.ndarray, cfg: CertifyConfig, n: int, start: int
) -> int:
    """How many nulls from ``start`` on are rejected before the first that stands.

    Tested in growing chunks: the sequence stops at the first failure, and the batch test costs
    a batch-long sum per threshold, so the thresholds past it are not computed.
    """
    i, chunk = start, 32
    while i < len(counts):
        hit = np.flatnonzero(_fails(errors[i : i + chunk], counts[i : i + chunk], cfg, n))
        if hit.size:
            return i + int(hit[0]) - start
        i, chunk = i + chunk, chunk * 2
    return len(counts) - start


def _starts(counts: np.ndarray, cfg: CertifyConfig, n: int) -> list[int]:
    """Indices where the sequences start: the strictest thresholds selecting enough rows.

    Read from the counts alone (the trust values, never the labels).
    """
    m = _fewest(cfg, n)
    if m == 0:
        return []
    out: list[int] = []
    for share in cfg.starts:
        need = max(m, math.ceil(share * n))
        i = next((i for i, c in enumerate(counts) if c >= need), None)
        if i is not None and i not in out:
            out.append(i)
    return out


def _fewest(cfg: CertifyConfig, n: int) -> int:
    """The fewest selected rows with which a clean set passes (0: none can, batch mode)."""
    if cfg.batch is None:
        return min_rows(risk=cfg.risk, delta=cfg.delta_each)
    return min_clean_rows(
        n=n,
        batch=cfg.batch,
        risk=cfg.risk,
        delta_cal=cfg.delta_each,
        delta_batch=cfg.delta_batch,
    )


def _fails(errors: np.ndarray, counts: np.ndarray, cfg: CertifyConfig, n: int) -> np.ndarray:
    """Whether each threshold's null stands (population: bound > α; batch: tail > δ_b)."""
    if cfg.batch is None:
        return _bounds(errors, counts, cfg.delta_each) > cfg.risk
    pairs, inverse = np.unique(np.stack([errors, counts]), axis=1, return_inverse=True)
    _, _, tail = batch_bounds(
        k=pairs[0], c=pairs[1], n=n, batch=cfg.batch, risk=cfg.risk, delta_cal=cfg.delta_each
    )
    return (tail > cfg.delta_batch)[np.ravel(inverse)]


def _batch_tail(k: float, c: float, cfg: CertifyConfig, n: float) -> float | None:
    """The batch tail at one (k, c) (None outside batch mode)."""
    if cfg.batch is None:
        return None
    _, _, tail = batch_bounds(
        k=np.array([k]),
        c=np.array([c]),
        n=n,
        batch=cfg.batch,
        risk=cfg.risk,
        delta_cal=cfg.delta_each,
    )
    return float(tail[0])


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
            bound=binomial_upper(k=errors[passed], n=counts[passed], delta=cfg.delta_bound),
            rate=float(counts[passed]) / n,
            tested=tested,
            batch=cfg.batch,
            batch_tail=_batch_tail(errors[passed], counts[passed], cfg, n),
        )
    what = (
        "unacceptable among the deployed" if side == "deploy" else "acceptable among the rejected"
    )
    need = rows_needed(counts=counts, errors=errors, n=n, config=cfg) if explain else None
    batch = "" if cfg.batch is None else f" in a batch of {cfg.batch}"
    fewest = _fewest(cfg, n)
    if start is None and fewest == 0:
        reason = (
            f"even all {n} rows {side}ed without an error would not certify a share of {what} "
            f"≤ {cfg.risk:g}{batch} at confidence {cfg.confidence:g}"
        )
    elif start is None:
        reason = (
            f"no threshold puts {fewest} rows on the {side} side, the fewest with which a share "
            f"of {what} ≤ {cfg.risk:g}{batch} can be certified at confidence {cfg.confidence:g}"
        )
    else:
        i = start
        bound = binomial_upper(k=errors[i], n=counts[i], delta=cfg.delta_bound)
        tail = _batch_tail(errors[i], counts[i], cfg, n)
        reason = (
            f"the strictest testable threshold {grid[i]:.3f} {side}s {int(counts[i])} of {n} "
            f"rows with {int(errors[i])} {what}: "
            + (
                f"bound {bound:.3f} > {cfg.risk:g}"
                if tail is None
                else f"risk bound {bound:.3f}, chance a batch of {cfg.batch} breaks "
                f"{cfg.risk:g} up to {tail:.3f} > {cfg.delta_batch:g}"
            )
        )
    if not explain:
        pass
    elif need is None:
        reason += f"; no threshold has an observed share of {what} below {cfg.risk:g}"
        reason += (
            ", so more rows of the same kind cannot help (a better trust score or a larger risk "
            "can)"
            if cfg.batch is None
            else f" low enough for a batch of {cfg.batch}, so more rows of the same kind cannot "
            "help (a larger batch, a larger risk or a better trust score can)"
        )
    else:
        reason += f"; at the observed rates at least {need} labelled rows in all ({need - n} more)"
    return Certified(
        side, None, cfg.risk, cfg.confidence, n, 0, 0, None, 0.0, tested, reason, need, cfg.batch
    )


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


def _could_pass(d: float, p: float, config: CertifyConfig) -> bool:
    """Batch mode: whether the batch tail at the exact rates (the bounds' limit with unlimited
    rows) is ≤ δ_b — if not, no number of rows can certify."""
    assert config.batch is not None
    tail = batch_tail(
        risk_upper=np.array([p]), deploy_lower=np.array([d]), batch=config.batch, risk=config.risk
    )
    return bool(tail[0] <= config.delta_batch)


def rows_needed(
    *, counts: np.ndarray, errors: np.ndarray, n: int, config: CertifyConfig
) -> int | None:
    """Labelled rows in all that would certify some threshold at the observed rates.

    For each threshold whose observed error share is below the risk, the smallest N with
    ``binomial_upper(k=N·d·p, n=N·d) ≤ α`` (d: the share of rows it selects, p: the error share
    among them; in batch mode: whose batch tail at those counts is ≤ δ/2); the least over
    thresholds. None: no threshold's observed share is below α (batch mode: no number of rows
    brings the tail down, the batch's own noise being too large). It ignores the stricter
    thresholds of the sequence, so it is a floor, not a promise.
    """

    def passes(size: float, d: float, p: float) -> bool:
        if config.batch is None:
            return binomial_upper(k=size * d * p, n=size * d, delta=config.delta_each) <= (
                config.risk
            )
        tail = _batch_tail(size * d * p, size * d, config, size)
        return tail is not None and tail <= config.delta_batch

    best: int | None = None
    for c, e in sorted(set(zip(counts.tolist(), errors.tolist(), strict=True))):
        if c <= 0 or e / c >= config.risk:
            continue
        d, p = c / n, e / c
        if config.batch is not None and not _could_pass(d, p, config):
            continue
        if best is not None and not passes(best - 1, d, p):
            continue  # cannot beat the best so far (the bound tightens with the rows)
        lo, hi = n, n
        while not passes(hi, d, p):
            hi *= 2
            if hi > 10**9:
                break
        else:
            while hi - lo > 1:  # smallest N in (lo, hi] that passes
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if passes(mid, d, p) else (mid, hi)
            best = hi if best is None else min(best, hi)
    return None if best is None else max(best, n + 1)


def certify_for_run(
    *,
    trust: Sequence[float],
    acceptable: Sequence[bool | int],
    run_trust: Sequence[float],
    config: CertifyConfig,
    side: str = "deploy",
    explain: bool = True,
) -> Certified:
    """A threshold for one run: share of errors among *its* selected reports ≤ α w.p. ≥ 1 − δ.

    Deploy: unacceptable among the run's reports with trust ≥ λ; reject: acceptable among those
    with trust < λ. ``run_trust`` are the run's trust values (no labels); the calibration rows
    and the run's reports must be exchangeable (:mod:`pathgls.meta.certify_run`). One fixed
    sequence at δ (the config's ``starts`` are not used); batch mode does not combine with it.

    Raises:
        CalibrationError: bad rows (as :func:`certify_deploy`), a run without a finite trust
            value, a batch size in ``config`` or an unknown side.
    """
    if config.batch is not None:
        raise CalibrationError("run mode certifies for a known run: it takes no batch size")
    if side not in ("deploy", "reject"):
        raise CalibrationError(f"side must be deploy or reject; got {side!r}")
    t, a = _check(trust, acceptable)
    try:
        r = check_run_trust(run_trust, GRID_DECIMALS)
    except ValueError as e:
        raise CalibrationError(str(e)) from e
    grid = np.asarray(GRID[::-1] if side == "deploy" else GRID)
    counts, errors, run_counts = side_counts(t, a, r, grid, side)
    delta, n, m = config.delta, int(t.size), int(r.size)
    passed, tested, start = run_sequence(
        counts=counts, errors=errors, run_counts=run_counts, risk=config.risk, delta=delta
    )
    if passed is not None:
        c, k, d = int(counts[passed]), int(errors[passed]), int(run_counts[passed])
        up = count_upper(errors=k, selected=c, run_selected=d, delta=delta)
        return Certified(
            side=side,
            threshold=float(grid[passed]),
            risk=config.risk,
            confidence=config.confidence,
            n=n,
            n_selected=c,
            n_errors=k,
            bound=up / d,
            rate=c / n,
            tested=tested,
            run_items=m,
            run_selected=d,
            run_errors_bound=up,
        )
    what = "unacceptable" if side == "deploy" else "acceptable"
    verb = "deploy" if side == "deploy" else "reject"
    if start is None:
        reason = (
            f"no threshold {verb}s enough of the run's {m} reports and the {n} calibration rows "
            f"for even an error-free calibration set to certify a share of {what} ≤ "
            f"{config.risk:g} among them at confidence {config.confidence:g}"
        )
    else:
        c, k, d = int(counts[start]), int(errors[start]), int(run_counts[start])
        up = count_upper(errors=k, selected=c, run_selected=d, delta=delta)
        reason = (
            f"the strictest testable threshold {grid[start]:.3f} {verb}s {c} of {n} calibration "
            f"rows with {k} {what} and {d} of the run's {m} reports, of which up to {up} could "
            f"be {what} (share {up / d:.3f} > {config.risk:g})"
        )
    need = None
    if explain:
        need = rows_needed_run(
            counts=counts,
            errors=errors,
            run_counts=run_counts,
            n=n,
            risk=config.risk,
            delta=delta,
        )
        reason += (
            f"; at the observed rates at least {need} labelled rows in all ({need - n} more)"
            if need is not None
            else f"; no threshold's observed share of {what} is low enough for a run of {m} "
            "reports, so more labelled rows cannot help (a larger risk or a better trust "
            "score can)"
        )
    return Certified(
        side=side,
        threshold=None,
        risk=config.risk,
        confidence=config.confidence,
        n=n,
        n_selected=0,
        n_errors=0,
        bound=None,
        rate=0.0,
        tested=tested,
        reason=reason,
        rows_needed=need,
        run_items=m,
    )
