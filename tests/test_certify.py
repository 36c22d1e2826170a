"""Certified thresholds (Learn-then-Test, fixed sequence, Clopper–Pearson): the bound's arithmetic
against scipy, the guarantee on a synthetic score with a known risk curve, and the refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pathgls.errors import CalibrationError
from pathgls.meta.certify import (
    CertifyConfig,
    binomial_upper,
    certify_deploy,
    certify_reject,
    min_rows,
    rows_needed,
)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 29), (3, 40), (10, 100), (57, 300), (99, 100)])
@pytest.mark.parametrize("delta", [0.05, 0.1, 0.2])
def test_the_bound_is_scipys_exact_one_sided_clopper_pearson(k: int, n: int, delta: float) -> None:
    ours = binomial_upper(k=k, n=n, delta=delta)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * delta, method="exact")
    assert ours == pytest.approx(ci.high, abs=1e-9)
    # the same decision as the exact binomial test of H0: p ≥ ours
    p_at_bound = stats.binomtest(k, n, ours, alternative="less").pvalue
    assert p_at_bound == pytest.approx(delta, rel=1e-6)


def test_min_rows_is_the_fewest_clean_rows_that_pass() -> None:
    m = min_rows(risk=0.1, delta=0.1)
    assert m == 22  # 0.9^22 = 0.098 ≤ 0.1 < 0.9^21 = 0.109
    assert binomial_upper(k=0, n=m, delta=0.1) <= 0.1 < binomial_upper(k=0, n=m - 1, delta=0.1)
    assert binomial_upper(k=5, n=5, delta=0.1) == 1.0
    assert binomial_upper(k=0, n=0, delta=0.1) == 1.0


def _draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Trust ~ U(0, 1), P(unacceptable | t) = (1 − t)/2: risk(λ) = E[… | T ≥ λ] = (1 − λ)/4."""
    t = rng.uniform(size=n)
    bad = rng.uniform(size=n) < (1 - t) / 2
    return t, ~bad


def test_the_guarantee_holds_on_a_known_risk_curve() -> None:
    rng = np.random.default_rng(7)
    cfg = CertifyConfig(risk=0.1, confidence=0.9)  # oracle threshold: (1 − λ)/4 = 0.1 → λ = 0.6
    chosen = []
    for _ in range(300):
        t, ok = _draw(rng, 400)
        res = certify_deploy(trust=t, acceptable=ok, config=cfg, explain=False)
        if res.threshold is None:  # nothing deployed: no violation possible
            assert res.rate == 0.0 and res.reason and res.rows_needed is None
            continue
        chosen.append(res.threshold)
        assert res.bound is not None and res.bound <= 0.1
        assert res.n_selected == int((np.round(t, 3) >= res.threshold).sum())
        assert res.n_errors == int(((np.round(t, 3) >= res.threshold) & ~ok).sum())
        assert res.rate == pytest.approx(res.n_selected / 400)
    true_risk = (1 - np.asarray(chosen)) / 4
    violations = float((true_risk > 0.1).sum()) / 300
    assert violations <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 300)  # ≤ δ up to sampling noise
    # and it is not vacuous: most draws certify, above the oracle 0.6 but not at the top
    assert len(chosen) > 150
    assert 0.6 < float(np.median(chosen)) < 0.95


def test_reject_mirrors_deploy() -> None:
    rng = np.random.default_rng(3)
    cfg = CertifyConfig(risk=0.1, confidence=0.9)
    chosen = []
    for _ in range(200):  # P(acceptable | t) = t/2: share among t < λ is λ/4 → oracle λ = 0.4
        t = rng.uniform(size=400)
        ok = rng.uniform(size=400) < t / 2
        res = certify_reject(trust=t, acceptable=ok, config=cfg, explain=False)
        assert res.side == "reject"
        if res.threshold is None:
            continue
        rejected = np.round(t, 3) < res.threshold
        assert res.n_selected == int(rejected.sum())
        assert res.n_errors == int((rejected & ok).sum())
        chosen.append(res.threshold)
    assert float((np.asarray(chosen) / 4 > 0.1).sum()) / 200 <= 0.1 + 3 * math.sqrt(0.09 / 200)
    assert len(chosen) > 100
    assert 0.05 < float(np.median(chosen)) < 0.4


def test_nothing_certifiable_says_how_many_rows_would_do() -> None:
    rng = np.random.default_rng(1)
    t, ok = _draw(rng, 40)
    cfg = CertifyConfig(risk=0.1, confidence=0.9)
    res = certify_deploy(trust=t, acceptable=ok, config=cfg)
    if res.threshold is not None:  # the draw happened to certify: make it hopeless
        ok[np.argsort(t)[-10:]] = False
        res = certify_deploy(trust=t, acceptable=ok, config=cfg)
    assert res.threshold is None and res.reason
    assert res.rate == 0.0 and res.bound is None


def test_rows_needed_is_the_smallest_passing_size() -> None:
    cfg = CertifyConfig(risk=0.1, confidence=0.9)
    counts, errors = np.array([50]), np.array([2])  # 4% bad among half of 100 rows
    need = rows_needed(counts=counts, errors=errors, n=100, config=cfg)
    assert need is not None
    d, p, delta = 0.5, 0.04, cfg.delta_each
    assert binomial_upper(k=need * d * p, n=need * d, delta=delta) <= 0.1
    assert binomial_upper(k=(need - 1) * d * p, n=(need - 1) * d, delta=delta) > 0.1
    # an observed share at or above α: no amount of such rows helps
    assert rows_needed(counts=np.array([50]), errors=np.array([5]), n=100, config=cfg) is None


def test_all_bad_refuses_and_says_more_rows_cannot_help() -> None:
    res = certify_deploy(
        trust=[0.9, 0.8, 0.7] * 20, acceptable=[0] * 60, config=CertifyConfig(risk=0.1)
    )
    assert res.threshold is None and res.rows_needed is None
    assert "cannot help" in (res.reason or "")


@pytest.mark.parametrize(
    ("trust", "ok", "match"),
    [([0.5, 0.6], [1], "2 trust values for 1"), ([0.5], [2], "0/1"), ([math.nan], [1], "finite")],
)
def test_bad_input(trust: list[float], ok: list[int], match: str) -> None:
    with pytest.raises(CalibrationError, match=match):
        certify_deploy(trust=trust, acceptable=ok, config=CertifyConfig())


@pytest.mark.parametrize(
    "kw", [{"risk": 0}, {"risk": 1.2}, {"confidence": 1.0}, {"starts": ()}, {"starts": (1.0,)}]
)
def test_config_bounds(kw: dict[str, object]) -> None:
    with pytest.raises(CalibrationError):
        CertifyConfig(**kw)
