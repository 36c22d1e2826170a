"""Small statistics shared by the summary, the ranking and the paired comparison.

:func:`bootstrap_ci` (percentile bootstrap CI of a mean), :func:`rank_with_ties` (rank by mean,
tied where the CIs overlap) and :func:`holm` (step-down adjusted p-values). Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TypedDict

import numpy as np

from pathgls.errors import ConfigError

_MAX_BOOT_ELEMENTS = 5_000_000  # resampled indices held at once by bootstrap_ci


class BootstrapArgs(TypedDict):
    """The keyword arguments of :func:`bootstrap_ci` that a caller passes on (``**boot``)."""

    n_boot: int
    confidence: float
    seed: int


def bootstrap_ci(
    values: Iterable[float], *, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean.

    The resamples are scipy's (``scipy.stats.bootstrap(..., method="percentile", batch=...)``
    draws the same indices from the same generator); the interval is numpy's linear quantile,
    kept because scipy's quantile differs from it in the last bit (89 of 300 random samples,
    2026-12-02), and every printed CI — the summary's, the ranking's, ``pathgls compare``'s —
    stays exactly what it was.

    Args:
        values: Sample; non-finite values are ignored.
        n_boot: Number of bootstrap resamples (at least 100).
        confidence: Coverage of the interval, strictly between 0 and 1.
        seed: Seed of :func:`numpy.random.default_rng`; the same seed gives the same interval.

    Returns:
        ``(low, high)``, or ``(nan, nan)`` when fewer than two finite values are given.

    Raises:
        ConfigError: ``n_boot`` or ``confidence`` is out of range.
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 100:
        raise ConfigError(f"n_boot must be an integer >= 100, got {n_boot!r}")
    if not isinstance(confidence, int | float | np.floating) or not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    sample = values if isinstance(values, np.ndarray) else list(values)
    x = np.asarray(sample, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    block = max(1, _MAX_BOOT_ELEMENTS // n)
    means = np.empty(int(n_boot), dtype=np.float64)
    for start in range(0, int(n_boot), block):
        stop = min(int(n_boot), start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1.0 - float(confidence)) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given), capped at 1."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return [float(x) for x in adjusted]


def rank_with_ties(
    means: Sequence[float], lows: Sequence[float], highs: Sequence[float]
) -> list[int | None]:
    """Rank (1 = best, higher is better) with ties where the CIs overlap.

    A subject's rank is 1 + the number of subjects whose CI lies wholly above its own: subjects
    whose intervals overlap share a rank unless a third separates them. A missing CI bound (one
    item) is the mean itself; a missing mean is unranked (None).
    """
    lo = [m if not math.isfinite(x) else x for m, x in zip(means, lows, strict=True)]
    hi = [m if not math.isfinite(x) else x for m, x in zip(means, highs, strict=True)]
    out: list[int | None] = []
    for i, m in enumerate(means):
        if not math.isfinite(m):
            out.append(None)
            continue
        above = sum(
            1 for j, mj in enumerate(means) if j != i and math.isfinite(mj) and lo[j] > hi[i]
        )
        out.append(1 + above)
    return out
