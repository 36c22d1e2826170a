"""Calibration of module weights and gate thresholds, and the module ablation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pathgls.errors import PathGLSError
from pathgls.meta.calibrate import (
    CalibrationError,
    ValidationRow,
    ablation,
    read_validation_table,
    thresholds_for_precision,
    weight_search,
)


def _rows(g: np.ndarray, lo: np.ndarray, s: np.ndarray, label: np.ndarray) -> list[dict]:
    return [
        {"grounding": float(a), "logic": float(b), "stability": float(c), "label": float(y)}
        for a, b, c, y in zip(g, lo, s, label, strict=True)
    ]


def _noise_data(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(size=n), rng.permutation(np.linspace(0, 1, n)), rng.uniform(size=n)


def test_label_equal_to_logic_puts_all_weight_on_logic() -> None:
    g, lo, s = _noise_data()
    rows = _rows(g, lo, s, label=lo**2)  # a monotone function of logic alone
    res = weight_search(rows=rows)
    assert res.weights == {"grounding": 0.0, "logic": 1.0, "stability": 0.0}
    assert res.spearman == pytest.approx(1.0)
    assert res.default_weights == {"grounding": 0.4, "logic": 0.3, "stability": 0.3}
    assert res.default_spearman < 0.9
    assert len(res.top) == 5 and res.top[0].weights == res.weights
    assert [p.spearman for p in res.top] == sorted((p.spearman for p in res.top), reverse=True)
    assert res.n_rows == 40 and res.n_points + res.n_points_skipped == 231

    abl = ablation(rows=rows, weights=res.default_weights)
    assert abl[0].dropped is None and abl[0].delta == 0.0 and abl[0].n == 40
    by = {r.dropped: r for r in abl[1:]}
    assert set(by) == {"grounding", "logic", "stability"}
    assert min(by.values(), key=lambda r: r.delta).dropped == "logic"
    assert by["logic"].weights == {
        "grounding": pytest.approx(4 / 7),
        "stability": pytest.approx(3 / 7),
    }
    expected = stats.spearmanr((0.4 * g + 0.3 * s) / 0.7, lo)[0]
    assert by["logic"].spearman == pytest.approx(expected)
    assert by["logic"].delta == pytest.approx(expected - abl[0].spearman)


def test_mixed_label_has_its_optimum_on_the_grid() -> None:
    g, lo, s = _noise_data(n=60, seed=1)
    rows = _rows(g, lo, s, label=0.7 * g + 0.3 * lo)
    res = weight_search(rows=rows)
    assert res.weights == {"grounding": 0.7, "logic": 0.3, "stability": 0.0}
    assert res.spearman == pytest.approx(1.0)
    assert all(p.spearman < 1.0 - 1e-9 for p in res.top[1:])
    coarse = weight_search(rows=rows, step=0.1, min_weight=0.1)  # stability must keep 0.1
    assert coarse.weights["stability"] == pytest.approx(0.1)
    assert min(coarse.weights.values()) >= 0.1 - 1e-12


def test_ties_go_to_the_point_closest_to_the_defaults() -> None:
    # Every module equals the label: every grid point has ρ = 1, so the defaults win.
    x = np.arange(6.0)
    res = weight_search(rows=_rows(x, x, x, x), step=0.1)
    assert res.weights == {"grounding": 0.4, "logic": 0.3, "stability": 0.3}
    assert res.spearman == pytest.approx(1.0)


def test_missing_modules_are_renormalised_and_empty_rows_skipped() -> None:
    rows = [
        ValidationRow("a", {"grounding": 0.1, "logic": None, "stability": 0.2}, 1.0),
        ValidationRow("b", {"grounding": 0.5, "logic": 0.4, "stability": None}, 2.0),
        ValidationRow("c", {"grounding": 0.9, "logic": 0.8, "stability": 0.7}, 3.0),
        ValidationRow("d", {"grounding": 0.95, "logic": 0.9, "stability": 0.9}, 4.0),
        ValidationRow("e", {"grounding": None, "logic": None, "stability": None}, 5.0),
    ]
    res = weight_search(rows=rows, step=0.1)
    assert res.n_rows == 4
    assert any("row e" in w for w in res.warnings)
    assert res.spearman == pytest.approx(1.0)
    # Points that leave row a (no logic) or b (no stability) without weight are skipped.
    assert res.n_points_skipped > 0


def test_weight_search_rejects_bad_input() -> None:
    rows = _rows(np.arange(2.0), np.arange(2.0), np.arange(2.0), np.arange(2.0))
    with pytest.raises(CalibrationError, match="at least 3"):
        weight_search(rows=rows)
    x = np.arange(5.0)
    with pytest.raises(CalibrationError, match="labels equal") as info:
        weight_search(rows=_rows(x, x, x, np.ones(5)))
    assert isinstance(info.value, PathGLSError) and isinstance(info.value, ValueError)
    with pytest.raises(CalibrationError, match="step"):
        weight_search(rows=_rows(x, x, x, x), step=0.3)
    with pytest.raises(CalibrationError, match="modules"):
        weight_search(rows=_rows(x, x, x, x), modules=("logic", "fluency"))
    with pytest.raises(CalibrationError, match="at least 3"):
        ablation(rows=rows, weights={"logic": 1.0})


def test_thresholds_for_precision_exact() -> None:
    trust = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    ok = [0, 0, 1, 0, 1, 1, 0, 1, 1, 1]
    r = thresholds_for_precision(trust=trust, acceptable=ok, target_precision=0.8)
    # t=0.5 deploys 6 items, 5 acceptable (5/6 ≥ 0.8); t=0.4 deploys 7, 5 acceptable (< 0.8).
    assert r.threshold == 0.5 and r.n_deployed == 6
    assert r.precision == pytest.approx(5 / 6) and r.recall == pytest.approx(5 / 6)
    r = thresholds_for_precision(trust=trust, acceptable=ok, target_precision=0.7)
    assert r.threshold == 0.3 and r.n_deployed == 8  # 6/8 = 0.75; t=0.2 gives 6/9 < 0.7
    assert r.precision == pytest.approx(0.75) and r.recall == 1.0
    r = thresholds_for_precision(trust=trust, acceptable=ok, target_precision=1.0)
    assert r.threshold == 0.8 and r.n_deployed == 3 and r.recall == pytest.approx(0.5)
    r = thresholds_for_precision(trust=[0.2, float("nan"), 0.9], acceptable=[1, 1, 0])
    assert r.threshold is None and "highest trust" in (r.reason or "")
    assert r.n == 2 and r.warnings
    r = thresholds_for_precision(trust=[0.2, 0.3], acceptable=[False, False])
    assert r.threshold is None and "no acceptable" in (r.reason or "")
    with pytest.raises(CalibrationError):
        thresholds_for_precision(trust=[0.1, 0.2], acceptable=[1])
    with pytest.raises(CalibrationError):
        thresholds_for_precision(trust=[0.1], acceptable=[2])
    with pytest.raises(CalibrationError):
        thresholds_for_precision(trust=[0.1], acceptable=[1], target_precision=0.0)


def test_read_validation_table(tmp_path: Path) -> None:
    good = tmp_path / "v.tsv"
    good.write_text(
        "item_id\tgrounding\tlogic\tstability\tlabel\n"
        "a\t0.1\t0.2\t0.3\t1\n"
        "b\t\t0.5\t0.6\t2\n"
        "c\t0.7\t0.8\t\t3\n",
        encoding="utf-8",
    )
    rows = read_validation_table(good)
    assert [r.item_id for r in rows] == ["a", "b", "c"]
    assert rows[1].scores == {"grounding": None, "logic": 0.5, "stability": 0.6}
    assert rows[2].label == 3.0
    csv_path = tmp_path / "v.csv"
    csv_path.write_text("item_id,grounding,logic,stability,label\nx,0.1,,0.3,0\n", "utf-8")
    assert read_validation_table(csv_path)[0].scores["logic"] is None

    bad = tmp_path / "bad.tsv"
    bad.write_text(
        "item_id\tgrounding\tlogic\tstability\tlabel\na\t0.1\t0.2\t0.3\t1\nb\t0.1\tzz\t0.3\t1\n",
        encoding="utf-8",
    )
    with pytest.raises(CalibrationError, match=r"line 3: logic score 'zz'"):
        read_validation_table(bad)
    bad.write_text("item_id\tgrounding\tlogic\tstability\tlabel\na\t0.1\t0.2\n", "utf-8")
    with pytest.raises(CalibrationError, match="line 2: expected 5 fields"):
        read_validation_table(bad)
    bad.write_text("item_id\tgrounding\tlogic\tstability\tlabel\na\t0.1\t0.2\t0.3\t\n", "utf-8")
    with pytest.raises(CalibrationError, match="line 2: label is empty"):
        read_validation_table(bad)
    bad.write_text("item_id\tgrounding\tlabel\n", "utf-8")
    with pytest.raises(CalibrationError, match="missing column"):
        read_validation_table(bad)
    with pytest.raises(CalibrationError, match="cannot read"):
        read_validation_table(tmp_path / "absent.tsv")


def test_spearman_ci_fisher_z_values() -> None:
    from pathgls.meta.calibrate import spearman_ci

    # by hand: z = atanh(ρ), half width 1.95996 · sqrt(1.06 / (n − 3))
    low, high = spearman_ci(0.5, 30)
    assert (low, high) == (pytest.approx(0.1596, abs=1e-3), pytest.approx(0.7339, abs=1e-3))
    low, high = spearman_ci(0.894, 4)
    assert (low, high) == (pytest.approx(-0.521, abs=1e-3), pytest.approx(0.998, abs=1e-3))
    assert spearman_ci(0.9, 3) is None and spearman_ci(float("nan"), 50) is None
