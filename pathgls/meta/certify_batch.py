"""The batch test of :mod:`pathgls.meta.certify`: the realised share in the next batch of m reports.

The population mode bounds risk(λ), the chance that a deployed report is unacceptable. A team
that checks the next batch of ``m`` reports sees instead the *realised* share K / D (D reports
deployed of the m, K of them unacceptable; 0 when none deploys), which has sampling noise of its
own: with 9 deployed at α = 0.1, a single bad report breaks it. With rows drawn independently,
D ~ Binomial(m, p) (p: the deploy rate at λ) and K | D ~ Binomial(D, r) (r = risk(λ)), so the
chance that the batch breaks α is

    f(p, r) = Σ_d P(D = d) · t_d(r),   t_d(r) = P(Binomial(d, r) > ⌊α d⌋)   (t_0 = 0).

The calibration rows give, at λ, ``c`` deployed of ``n`` and ``k`` unacceptable among those:

* ``r ≤ r⁺`` with r⁺ the one-sided Clopper–Pearson upper bound of k in c at level δ_r;
* ``p ≥ p⁻`` with p⁻ the one-sided Clopper–Pearson lower bound of c in n at level δ_p.

t_d grows with r, but not monotonically with d (⌊α d⌋ steps: at α = 0.1, t_9 > t_10), so f is
bounded through the envelope T*(d) = max over d' ≥ max(d, 1) of t_d', which never grows with d:
for every p ≥ p⁻ and r ≤ r⁺, f(p, r) ≤ E[T*(D; r)] with D ~ Binomial(m, p)
≤ E[T*(D; r⁺)] with D ~ Binomial(m, p⁻) =: :func:`batch_tail`. λ passes when that tail is ≤ δ_b.

Why this is a guarantee: a threshold whose true f exceeds δ_b passes only if r > r⁺ or p < p⁻
(chance ≤ δ_r + δ_p), so the fixed sequence of :mod:`pathgls.meta.certify` run at δ_r + δ_p
picks such a threshold with chance ≤ δ_r + δ_p; otherwise the next batch, drawn independently of
the calibration rows, breaks α with chance ≤ δ_b. In all, P(realised share > α) ≤ δ_r + δ_p + δ_b
= δ, over the calibration rows and the batch together. pathgls splits δ as δ_b = δ/2 and
δ_r = δ_p = δ/4 (:data:`DELTA_SHARES`, fixed before any data was seen).

Pure functions on arrays; no I/O.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Shares of δ: the risk bound, the deploy-rate bound (the calibration side), the batch's tail.
DELTA_SHARES = (0.25, 0.25, 0.5)


def binomial_lower(*, k: float, n: float, delta: float) -> float:
    """One-sided (1 − δ) Clopper–Pearson lower bound of a binomial rate with k events in n.

    0.0 when k ≤ 0 (or n ≤ 0); fractional k and n are allowed (:func:`pathgls.meta.certify.
    rows_needed` works at observed rates).
    """
    if n <= 0 or k <= 0:
        return 0.0
    if k >= n:
        return float(delta ** (1.0 / n))
    return float(stats.beta.ppf(delta, k, n - k + 1.0))


def exceed_counts(*, batch: int, risk: float) -> np.ndarray:
    """⌊α d⌋ for d = 0 … batch: the most unacceptable reports d deployed may hold."""
    d = np.arange(batch + 1, dtype=np.float64)
    return np.floor(d * risk + 1e-9)


def batch_tail(
    *, risk_upper: np.ndarray, deploy_lower: np.ndarray, batch: int, risk: float
) -> np.ndarray:
    """E[T*(D; r⁺)] with D ~ Binomial(batch, p⁻), for each (r⁺, p⁻) pair (see the module doc).

    A bound, for every risk ≤ r⁺ and deploy rate ≥ p⁻, on the chance that the share of
    unacceptable reports among those deployed in a batch of ``batch`` exceeds ``risk``.
    """
    r = np.atleast_1d(np.asarray(risk_upper, dtype=np.float64))[:, None]
    p = np.atleast_1d(np.asarray(deploy_lower, dtype=np.float64))[:, None]
    d = np.arange(batch + 1, dtype=np.float64)[None, :]
    t = stats.binom.sf(exceed_counts(batch=batch, risk=risk)[None, :], d, r)  # P(K > ⌊α d⌋)
    t[:, 0] = 0.0  # nothing deployed: nothing to break
    env = np.maximum.accumulate(t[:, ::-1], axis=1)[:, ::-1]  # T*(d) = max over d' ≥ d
    env[:, 0] = env[:, 1] if batch >= 1 else 0.0  # T*(0) = T*(1): the envelope must not grow
    w = stats.binom.pmf(d, batch, p)
    return np.minimum((w * env).sum(axis=1), 1.0)


def batch_bounds(
    *, k: np.ndarray, c: np.ndarray, n: float, batch: int, risk: float, delta_cal: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r⁺, p⁻, batch tail) for each (k unacceptable of c selected) out of ``n`` rows.

    ``delta_cal`` is the calibration side's δ (δ_r + δ_p), split evenly between the two bounds.
    """
    k = np.atleast_1d(np.asarray(k, dtype=np.float64))
    c = np.atleast_1d(np.asarray(c, dtype=np.float64))
    d_r = d_p = delta_cal / 2
    r_up = np.ones(k.shape)
    ok = (c > 0) & (k < c)
    r_up[ok] = stats.beta.ppf(1.0 - d_r, k[ok] + 1.0, c[ok] - k[ok])
    p_lo = np.zeros(c.shape)
    some = (c > 0) & (c < n)
    p_lo[some] = stats.beta.ppf(d_p, c[some], n - c[some] + 1.0)
    p_lo[(c > 0) & (c >= n)] = d_p ** (1.0 / n) if n > 0 else 0.0
    return r_up, p_lo, batch_tail(risk_upper=r_up, deploy_lower=p_lo, batch=batch, risk=risk)


def min_clean_rows(*, n: int, batch: int, risk: float, delta_cal: float, delta_batch: float) -> int:
    """The fewest selected rows (of ``n``) with which a set without any error passes; 0: none.

    The batch tail of a clean set never grows with the count (r⁺ falls, p⁻ rises), so a
    bisection finds it. Read from counts alone — never the labels.
    """

    def passes(c: int) -> bool:
        _, _, tail = batch_bounds(
            k=np.zeros(1), c=np.array([c]), n=n, batch=batch, risk=risk, delta_cal=delta_cal
        )
        return bool(tail[0] <= delta_batch)

    if n < 1 or not passes(n):
        return 0
    lo, hi = 0, n  # passes(hi), not passes(lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if passes(mid) else (mid, hi)
    return hi
