"""Run mode of :mod:`pathgls.meta.certify`: the realised share among the reports of one known run.

The population mode bounds risk(λ), a property of the population the reports are drawn from;
the batch mode (:mod:`pathgls.meta.certify_batch`) bounds the realised share in a future batch
whose trust values are not yet known. At gate time they *are* known: the team gates a finished
run. Run mode certifies a threshold for that run: among the run's reports the gate deploys, the
share that is unacceptable is ≤ α with probability ≥ 1 − δ, over which of the pooled reports
(labelled calibration rows and the run's) were the labelled ones — the rows of both exchangeable.

The bound, at one threshold λ: ``c`` calibration rows deploy, ``k`` of them unacceptable, and
``D`` of the run's reports deploy (known). Given the pool of the c + D deployed reports, of which
K (unknown, fixed) are unacceptable, which c of them are calibration rows is a uniformly random
draw, so k ~ Hypergeometric(c + D, K, c) exactly. The one-sided (1 − δ) upper bound of K is the
largest K with P(X ≤ k) > δ (:func:`count_upper`); the run then holds at most K⁺ − k
unacceptable deployed reports, and λ passes when that is ≤ α·D. No normal or binomial
approximation, and no bound on a deploy rate: D is counted, not estimated.

Across thresholds the fixed sequence of :mod:`pathgls.meta.certify` runs from strict to loose,
starting at the strictest threshold where a calibration set without any error could pass (read
from the trust values, never the labels), until the first threshold that fails. For the
population risk Learn-then-Test proves that step; for a realised share (a random quantity, not
a fixed parameter) its proof does not carry over as is, so the procedure's error rate is checked
by exhaustive enumeration of every split of small pools in the tests and on 1,000 splits of the
expert pairs in ``benchmarks/bench_certify.py``.

Pure functions on arrays; no I/O.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

#: The method named in a run-mode certificate.
METHOD_RUN = "Learn-then-Test, fixed-sequence, exact hypergeometric bound on the run's reports"


@functools.lru_cache(maxsize=65536)
def count_upper(*, errors: int, selected: int, run_selected: int, delta: float) -> int:
    """One-sided (1 − δ) upper bound on the errors among ``run_selected`` run reports.

    ``errors`` of ``selected`` calibration rows on the same side of the threshold are errors;
    the ``selected + run_selected`` rows are exchangeable. 0 when nothing of the run is
    selected; ``run_selected`` when no calibration row is (nothing is known).
    """
    if run_selected <= 0:
        return 0
    pool = selected + run_selected
    totals = np.arange(errors, errors + run_selected + 1)
    p = stats.hypergeom.cdf(errors, pool, totals, selected)  # P(X ≤ k | K) falls with K
    return int(totals[p > delta].max()) - errors


def passes(*, errors: int, selected: int, run_selected: int, risk: float, delta: float) -> bool:
    """Whether the bound keeps the run's share of errors among its selected reports ≤ risk."""
    up = count_upper(errors=errors, selected=selected, run_selected=run_selected, delta=delta)
    return up <= math.floor(risk * run_selected + 1e-9)


def run_sequence(
    *,
    counts: np.ndarray,
    errors: np.ndarray,
    run_counts: np.ndarray,
    risk: float,
    delta: float,
) -> tuple[int | None, int, int | None]:
    """The fixed sequence over thresholds ordered strict → loose.

    ``counts``/``errors``: calibration rows selected and errors among them at each threshold;
    ``run_counts``: the run's reports selected. Returns the index of the loosest threshold
    passed (None: none), how many were tested, and where the sequence started (None: no
    threshold where a clean calibration set could pass).
    """
    start = None
    for i in range(len(counts)):
        c, d = int(counts[i]), int(run_counts[i])
        if d >= 1 and passes(errors=0, selected=c, run_selected=d, risk=risk, delta=delta):
            start = i
            break
    if start is None:
        return None, 0, None
    passed, tested = None, 0
    for i in range(start, len(counts)):
        tested += 1
        ok = passes(
            errors=int(errors[i]),
            selected=int(counts[i]),
            run_selected=int(run_counts[i]),
            risk=risk,
            delta=delta,
        )
        if not ok:
            break
        passed = i
    return passed, tested, start


def rows_needed_run(
    *,
    counts: np.ndarray,
    errors: np.ndarray,
    run_counts: np.ndarray,
    n: int,
    risk: float,
    delta: float,
) -> int | None:
    """Labelled rows in all with which some threshold would pass at the observed rates.

    For each threshold with an observed error share below the risk: the fewest calibration
    rows N (the selected count and errors scaled from these n rows) whose bound passes for the
    run's own selected count. None: no threshold can, however many rows (the run's own
    sampling noise at its size is too large). A floor, like :func:`~pathgls.meta.certify.
    rows_needed`: it ignores the stricter thresholds of the sequence.
    """
    limit = 10**6

    def ok(size: int, c: int, e: int, d: int) -> bool:
        sel = round(size * c / n)
        return passes(
            errors=round(sel * e / c), selected=sel, run_selected=d, risk=risk, delta=delta
        )

    best: int | None = None
    seen: set[tuple[int, int, int]] = set()
    for c, e, d in zip(counts.tolist(), errors.tolist(), run_counts.tolist(), strict=True):
        if c <= 0 or d <= 0 or e / c >= risk or (c, e, d) in seen:
            continue
        seen.add((c, e, d))
        if not ok(limit, c, e, d):
            continue
        lo, hi = n, limit  # not ok(lo) (nothing passed on n rows), ok(hi)
        if best is not None and not ok(min(best, hi), c, e, d):
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if ok(mid, c, e, d) else (mid, hi)
        best = hi if best is None else min(best, hi)
    return None if best is None else max(best, n + 1)


def side_counts(
    trust: np.ndarray, acceptable: np.ndarray, run_trust: np.ndarray, grid: np.ndarray, side: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Calibration rows selected, errors among them, run reports selected, at each threshold.

    Deploy: trust ≥ λ, errors = unacceptable; reject: trust < λ, errors = acceptable.
    """
    order, run_order = np.sort(trust), np.sort(run_trust)
    if side == "deploy":
        bad = np.sort(trust[~acceptable])
        counts = trust.size - np.searchsorted(order, grid - 1e-9, side="left")
        errors = bad.size - np.searchsorted(bad, grid - 1e-9, side="left")
        run_counts = run_trust.size - np.searchsorted(run_order, grid - 1e-9, side="left")
    else:
        good = np.sort(trust[acceptable])
        counts = np.searchsorted(order, grid - 1e-9, side="left")
        errors = np.searchsorted(good, grid - 1e-9, side="left")
        run_counts = np.searchsorted(run_order, grid - 1e-9, side="left")
    return counts, errors, run_counts


def check_run_trust(run_trust: Sequence[float], decimals: int) -> np.ndarray:
    """The run's trust values, rounded as the gate rounds them.

    Raises:
        ValueError: not finite numbers in one dimension, or none at all.
    """
    r = np.asarray(run_trust, dtype=np.float64)
    if r.ndim != 1 or r.size == 0:
        raise ValueError("the run has no trust value to certify for")
    if not np.isfinite(r).all():
        raise ValueError("every trust value of the run must be a finite number")
    return np.round(r, decimals)
