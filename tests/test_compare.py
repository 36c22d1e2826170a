"""Paired comparison of subjects: planted effects, nulls, Holm, rank with ties, refusals, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.errors import ComparisonError
from pathgls.meta.compare import CompareConfig, compare_pair, compare_subjects
from pathgls.meta.stats import holm, rank_with_ties
from pathgls.runner.store import ResultsStore
from pathgls.types import GateDecision, ModuleScore, ScoreCard


def _cards(subject: str, values: dict[str, float], *, failed: tuple[str, ...] = ()) -> list:
    out = []
    for item, v in values.items():
        if item in failed:
            out.append(ScoreCard(item_id=item, subject=subject, status="failed", errors=["x"]))
            continue
        modules = {
            "logic": ModuleScore(name="logic", value=v),
            "grounding": ModuleScore(name="grounding", value=None, missing_reason="no encoder"),
        }
        decision = GateDecision(route="review", reasons=["r"], thresholds={})
        out.append(
            ScoreCard(item_id=item, subject=subject, modules=modules, trust=v, decision=decision)
        )
    return out


def _planted(n: int = 40, effect: float = 0.08, seed: int = 3) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.8, size=n)  # item difficulty, shared by both subjects
    a = {f"slide{i:02d}": float(x) for i, x in enumerate(base)}
    b = {k: float(v - effect + rng.normal(0, 0.05)) for k, v in a.items()}
    return a, b


def test_a_planted_effect_is_found_with_the_right_sign() -> None:
    a, b = _planted()
    r = compare_pair(a="A", b="B", values_a=a, values_b=b)
    assert r.n == 40 and r.mean_difference == pytest.approx(
        np.mean([a[k] - b[k] for k in a]), abs=1e-12
    )
    assert 0.04 < r.ci_low < r.mean_difference < r.ci_high < 0.12
    assert r.p_permutation < 0.05 and r.p_wilcoxon is not None and r.p_wilcoxon < 0.05
    assert r.wins > 30 and r.wins + r.ties + r.losses == 40
    # the other way round: the same size, the other sign
    back = compare_pair(a="B", b="A", values_a=b, values_b=a)
    assert back.mean_difference == pytest.approx(-r.mean_difference)
    assert back.ci_high < 0 and (back.wins, back.losses) == (r.losses, r.wins)
    # the most disagreeing item is the one with the largest |A − B|
    diffs = {k: a[k] - b[k] for k in a}
    top = max(diffs, key=lambda k: abs(diffs[k]))
    assert r.disagreements[0].item_id == top
    assert r.disagreements[0].difference == pytest.approx(diffs[top])


def test_the_paired_ci_is_the_bootstrap_of_the_differences_resampled_items_together() -> None:
    # the paired CI is meta.stats.bootstrap_ci of A − B (one bootstrap in pathgls): the same
    # resamples, drawn at once, and numpy's percentiles, to the last bit
    a, b = _planted(n=23, seed=5)
    cfg = CompareConfig(n_boot=1500, confidence=0.9, seed=11)
    r = compare_pair(a="A", b="B", values_a=a, values_b=b, config=cfg)
    d = np.array([a[k] - b[k] for k in sorted(a)])
    idx = np.random.default_rng(11).integers(0, d.size, size=(1500, d.size))
    expected = np.quantile(d[idx].mean(axis=1), [0.05, 0.95])
    assert (r.ci_low, r.ci_high) == (float(expected[0]), float(expected[1]))


def test_the_same_subject_twice_is_a_null() -> None:
    a, _ = _planted()
    r = compare_pair(a="A", b="A", values_a=a, values_b=a)
    assert r.mean_difference == 0.0 and r.ci_low <= 0.0 <= r.ci_high
    assert r.p_permutation > 0.5 and r.p_wilcoxon is None  # every difference is 0
    assert (r.wins, r.ties, r.losses) == (0, 40, 0) and r.disagreements == ()


def test_noise_alone_is_not_significant() -> None:
    rng = np.random.default_rng(11)
    base = rng.uniform(0.2, 0.8, size=40)
    a = {f"s{i}": float(x + rng.normal(0, 0.05)) for i, x in enumerate(base)}
    b = {f"s{i}": float(x + rng.normal(0, 0.05)) for i, x in enumerate(base)}
    r = compare_pair(a="A", b="B", values_a=a, values_b=b)
    assert r.ci_low <= 0.0 <= r.ci_high and r.p_permutation > 0.05


def test_holm_step_down() -> None:
    # sorted 0.01, 0.03, 0.04 → ×3, ×2, ×1 = 0.03, 0.06, 0.04 → monotone: 0.03, 0.06, 0.06
    assert holm([0.04, 0.01, 0.03]) == pytest.approx([0.06, 0.03, 0.06])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_compare_subjects_corrects_across_pairs_and_skips_failed_items() -> None:
    a, b = _planted()
    c = {k: v for k, v in a.items()}  # C is A again: A vs C is a null
    cards = [
        *_cards("A", a),
        *_cards("B", b, failed=("slide00", "slide01")),
        *_cards("C", c),
    ]
    res = compare_subjects(cards=cards, metric="trust")
    assert [(p.a, p.b) for p in res.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    ab, ac, bc = res.pairs
    assert ab.n == 38 and ab.only_a == 2 and ab.only_b == 0  # failed items are not shared
    assert ab.p_holm == pytest.approx(min(1.0, 3 * ab.p_permutation))  # the smallest of three
    assert ac.p_holm == 1.0 and bc.mean_difference < 0
    by_logic = compare_subjects(cards=cards, subjects=["A", "B"], metric="logic")
    assert by_logic.pairs[0].mean_difference == pytest.approx(ab.mean_difference)
    assert by_logic.pairs[0].p_holm == by_logic.pairs[0].p_permutation  # one pair: no change


def test_refusals() -> None:
    a = {f"x{i}": 0.5 for i in range(10)}
    b = {f"y{i}": 0.4 for i in range(10)}
    with pytest.raises(ComparisonError, match=r"A and B share 0 completed item\(s\)"):
        compare_pair(a="A", b="B", values_a=a, values_b=b)
    few = {**b, "x0": 0.1, "x1": 0.2}
    with pytest.raises(ComparisonError, match=r"share 2 .* at least 5"):
        compare_pair(a="A", b="B", values_a=a, values_b=few)
    assert (
        compare_pair(a="A", b="B", values_a=a, values_b=few, config=CompareConfig(min_items=2)).n
        == 2
    )
    cards = _cards("A", a)
    with pytest.raises(ComparisonError, match="no card of subject"):
        compare_subjects(cards=cards, subjects=["A", "Z"])
    with pytest.raises(ComparisonError, match="unknown metric 'hare'"):
        compare_subjects(cards=cards, metric="hare")
    with pytest.raises(ComparisonError, match="needs two subjects"):
        compare_subjects(cards=cards)
    with pytest.raises(ComparisonError, match="min_items"):
        CompareConfig(min_items=1)


def test_rank_with_ties_where_cis_overlap() -> None:
    # A [0.70, 0.80] and B [0.65, 0.75] overlap: tied at 1; C [0.40, 0.50] is below both: 3;
    # D has no trust score: unranked
    means = [0.75, 0.70, 0.45, float("nan")]
    lows = [0.70, 0.65, 0.40, float("nan")]
    highs = [0.80, 0.75, 0.50, float("nan")]
    assert rank_with_ties(means, lows, highs) == [1, 1, 3, None]
    # a chain: A overlaps B, B overlaps C, A is wholly above C → A 1, B 1, C 2
    assert rank_with_ties([0.8, 0.6, 0.4], [0.7, 0.45, 0.3], [0.9, 0.75, 0.5]) == [1, 1, 2]
    # one item per subject (no CI): the means alone
    nan = float("nan")
    assert rank_with_ties([0.3, 0.9, 0.3], [nan] * 3, [nan] * 3) == [2, 1, 2]


def test_compare_cli(tmp_path: Path) -> None:
    a, b = _planted()
    store = ResultsStore(tmp_path / "run")
    for card in (*_cards("A", a), *_cards("B", b)):
        store.write_card(card)
    out = tmp_path / "cmp.json"
    res = CliRunner().invoke(app, ["compare", str(store.root), "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "A − B" in res.stdout and "largest disagreements, A vs B" in res.stdout
    data = json.loads(out.read_text())
    assert data["metric"] == "trust" and data["pairs"][0]["p_permutation"] < 0.05
    bad = CliRunner().invoke(app, ["compare", str(store.root), "--min-items", "41"])
    assert bad.exit_code == 2 and "share 40 completed item(s)" in bad.output
    missing = CliRunner().invoke(app, ["compare", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a run directory" in missing.output
