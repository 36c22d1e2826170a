"""Batch mode of the certified gate: the realised share among the deployed reports of the next
batch of m. The bounds' arithmetic against scipy and closed forms, the guarantee on a synthetic
score with a known risk curve (exact chance of a broken batch, and batches drawn), and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pathgls.errors import CalibrationError
from pathgls.meta.certify import CertifyConfig, binomial_upper, certify_deploy, rows_needed
from pathgls.meta.certify_batch import (
    batch_bounds,
    batch_tail,
    binomial_lower,
    exceed_counts,
    min_clean_rows,
)


def _broken(p: float, r: float, m: int, alpha: float) -> float:
    """Exact chance that a batch of m breaks α: Σ_d P(D = d) P(Bin(d, r) > ⌊α d⌋), D ~ Bin(m, p)."""
    d = np.arange(1, m + 1)
    cut = np.array([math.floor(alpha * x + 1e-9) for x in d])
    return float((stats.binom.pmf(d, m, p) * stats.binom.sf(cut, d, r)).sum())


@pytest.mark.parametrize(("k", "n"), [(1, 1), (1, 29), (3, 40), (10, 100), (57, 300), (100, 100)])
@pytest.mark.parametrize("delta", [0.025, 0.1])
def test_the_lower_bound_is_scipys_exact_one_sided_clopper_pearson(
    k: int, n: int, delta: float
) -> None:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * delta, method="exact")
    assert binomial_lower(k=k, n=n, delta=delta) == pytest.approx(ci.low, abs=1e-9)
    assert binomial_lower(k=0, n=n, delta=delta) == 0.0


def test_exceed_counts_floor_alpha_d_without_float_slips() -> None:
    # 0.1 · 30 is 3.0000000000000004 and 0.2 · 15 is 3.0000000000000004 in floats: still 3
    assert exceed_counts(batch=30, risk=0.1)[[9, 10, 29, 30]].tolist() == [0, 1, 2, 3]
    assert exceed_counts(batch=15, risk=0.2)[[4, 5, 14, 15]].tolist() == [0, 1, 2, 3]


def test_the_batch_tail_in_closed_form() -> None:
    # m = 1: the one report, if deployed, is bad with chance r; T*(0) = T*(1) = r
    for r, p in ((0.03, 0.2), (0.3, 0.9)):
        got = batch_tail(risk_upper=np.array([r]), deploy_lower=np.array([p]), batch=1, risk=0.1)
        assert got[0] == pytest.approx(r, abs=1e-12)
    # m = 2, α = 0.5: t_1 = r (⌊0.5⌋ = 0), t_2 = r² (⌊1⌋ = 1); envelope T*(0) = T*(1) = r
    r, p = 0.2, 0.6
    want = (1 - p) ** 2 * r + 2 * p * (1 - p) * r + p**2 * r**2
    got = batch_tail(risk_upper=np.array([r]), deploy_lower=np.array([p]), batch=2, risk=0.5)
    assert got[0] == pytest.approx(want, abs=1e-12)


def test_the_batch_tail_bounds_every_risk_below_and_deploy_rate_above() -> None:
    m, alpha = 40, 0.1
    for r_up, p_lo in ((0.02, 0.1), (0.05, 0.3), (0.08, 0.6)):
        tail = batch_tail(
            risk_upper=np.array([r_up]), deploy_lower=np.array([p_lo]), batch=m, risk=alpha
        )[0]
        exact = [
            _broken(p, r, m, alpha)
            for r in np.linspace(0.0, r_up, 5)
            for p in np.linspace(p_lo, 1.0, 9)
        ]
        assert max(exact) <= tail + 1e-12
        # the envelope costs something, but not an order of magnitude at the bounds themselves
        assert tail < 3 * _broken(p_lo, r_up, m, alpha)


def test_batch_bounds_are_the_clopper_pearson_bounds_at_a_quarter_of_delta() -> None:
    r_up, p_lo, tail = batch_bounds(
        k=np.array([2, 0]), c=np.array([50, 80]), n=160, batch=100, risk=0.1, delta_cal=0.05
    )
    assert r_up[0] == pytest.approx(binomial_upper(k=2, n=50, delta=0.025))
    assert p_lo[1] == pytest.approx(binomial_lower(k=80, n=160, delta=0.025))
    want = batch_tail(risk_upper=r_up, deploy_lower=p_lo, batch=100, risk=0.1)
    assert tail.tolist() == pytest.approx(want.tolist())


def test_min_clean_rows_is_the_fewest_clean_rows_that_pass() -> None:
    kw = {"n": 2000, "batch": 400, "risk": 0.1, "delta_cal": 0.05}
    c = min_clean_rows(**kw, delta_batch=0.05)
    assert c > 0

    def tail(count: int) -> float:
        return float(batch_bounds(k=np.zeros(1), c=np.array([count]), **kw)[2][0])

    assert tail(c) <= 0.05 < tail(c - 1)
    # a batch of 5 at α = 0.05: one bad deployed report breaks it, so r⁺ itself must be
    # ≤ δ/2 — 60 clean rows cannot show that (r⁺ = 1 − 0.025^(1/60) ≈ 0.06)
    assert min_clean_rows(n=60, batch=5, risk=0.05, delta_cal=0.05, delta_batch=0.05) == 0


def _draw(rng: np.random.Generator, n: int, slope: int) -> tuple[np.ndarray, np.ndarray]:
    """Trust ~ U(0, 1), P(unacceptable | t) = (1 − t)/slope: deploy rate at λ is 1 − λ and the
    risk among the deployed (1 − λ)/(2 slope)."""
    t = rng.uniform(size=n)
    return t, ~(rng.uniform(size=n) < (1 - t) / slope)


def test_the_guarantee_on_the_realised_share_of_a_batch() -> None:
    """Exact chance that the next batch breaks α at the chosen threshold, averaged over draws
    of the calibration rows (0 when nothing is certified), and batches actually drawn: ≤ δ."""
    rng = np.random.default_rng(5)
    n, m, alpha = 400, 100, 0.1
    cfg = CertifyConfig(risk=alpha, confidence=0.9, batch=m)
    broken, drawn = [], []
    for _ in range(100):
        t, ok = _draw(rng, n, 10)
        res = certify_deploy(trust=t, acceptable=ok, config=cfg, explain=False)
        if res.threshold is None:
            broken.append(0.0)
            continue
        lam = res.threshold
        broken.append(_broken(1 - lam, (1 - lam) / 20, m, alpha))
        assert res.batch == m and res.batch_tail is not None and res.batch_tail <= 0.05
        assert res.bound == pytest.approx(
            binomial_upper(k=res.n_errors, n=res.n_selected, delta=0.025)
        )
        assert res.n_selected == int((np.round(t, 3) >= lam).sum())
        for _ in range(20):  # next batches, independent of the calibration rows
            tb, okb = _draw(rng, m, 10)
            dep = np.round(tb, 3) >= lam
            drawn.append(int((dep & ~okb).sum()) > math.floor(alpha * int(dep.sum()) + 1e-9))
    assert float(np.mean(broken)) <= 0.1  # the guarantee, computed exactly per draw
    assert len(drawn) >= 20 * 15  # not vacuous: it certifies in a fair share of the draws
    assert sum(drawn) / 20 / 100 <= 0.1  # broken batches per calibration draw, drawn


def test_the_population_mode_does_not_bound_a_batchs_share() -> None:
    """Why batch mode exists: the population threshold keeps risk ≤ α, yet a batch of 200 at it
    breaks α far more often than δ (exact chance, averaged over calibration draws)."""
    rng = np.random.default_rng(5)
    n, m, alpha = 1000, 200, 0.1
    cfg = CertifyConfig(risk=alpha, confidence=0.9)
    broken, risks = [], []
    for _ in range(100):
        t, ok = _draw(rng, n, 4)
        res = certify_deploy(trust=t, acceptable=ok, config=cfg, explain=False)
        lam = 1.0 if res.threshold is None else res.threshold
        risks.append((1 - lam) / 8)
        broken.append(0.0 if res.threshold is None else _broken(1 - lam, (1 - lam) / 8, m, alpha))
    assert float(np.mean(np.asarray(risks) > alpha)) <= 0.1  # its own guarantee holds
    assert float(np.mean(broken)) > 0.15


def test_a_batch_too_small_to_certify_says_so() -> None:
    res = certify_deploy(
        trust=np.linspace(0.5, 1.0, 60),
        acceptable=[1] * 60,
        config=CertifyConfig(risk=0.05, batch=5),
    )
    assert res.threshold is None and res.batch == 5
    assert "even all 60 rows deployed without an error" in (res.reason or "")


def test_rows_needed_in_batch_mode() -> None:
    cfg = CertifyConfig(risk=0.1, confidence=0.9, batch=200)
    counts, errors = np.array([60]), np.array([1])  # 1 bad among 60% of 100 rows
    need = rows_needed(counts=counts, errors=errors, n=100, config=cfg)
    assert need is not None and 100 < need < 400

    def tail(size: int) -> float:
        c = size * 0.6
        return float(batch_bounds(k=c / 60, c=c, n=size, batch=200, risk=0.1, delta_cal=0.05)[2][0])

    assert tail(need) <= 0.05 < tail(need - 1)
    # 8% bad among 5% of the rows: ~10 deployed in a batch of 200 break 0.1 too often however
    # many rows are labelled
    assert rows_needed(counts=np.array([25]), errors=np.array([2]), n=500, config=cfg) is None
    # the population mode asks fewer rows for the same rates (its bound only needs r⁺ ≤ α)
    pop = rows_needed(counts=counts, errors=errors, n=100, config=CertifyConfig(risk=0.1))
    assert pop is not None and pop < need


@pytest.mark.parametrize("batch", [0, -3, True])
def test_batch_must_be_a_count(batch: int) -> None:
    with pytest.raises(CalibrationError, match="batch"):
        CertifyConfig(batch=batch)
