"""Coverage-aware ranking and comparison: subjects are compared on the modules they share.

The planted case of issue 24: a *silent* subject (a captioner that states no diagnosis, so only
Stability is scored, at 1.000) against a *good* one (Logic and Stability scored, a little below
1). On the full trust the silent one wins (1.000 against ≈ 0.94) — on a number the good one was
penalised on (Logic) and the silent one was never scored on. It must rank below, and every
comparison must say what it compared.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from rich.console import Console

from pathgls.config import FusionConfig, GateConfig
from pathgls.fusion import gate_scorecard
from pathgls.meta.compare import CompareConfig, compare_subjects
from pathgls.meta.ranking import card_coverage, matched_trust, rank_subjects
from pathgls.runner.summary import print_summary, summarise
from pathgls.types import ModuleScore, ScoreCard

ITEMS = [f"slide{i}" for i in range(8)]
NO_DX = "logic not scored: no diagnosis statement and no two statements about the same thing"


def _card(item: str, subject: str, **values: float | None) -> ScoreCard:
    modules = {
        name: ModuleScore(name=name, value=v, missing_reason=None if v is not None else NO_DX)
        for name, v in values.items()
    }
    card = ScoreCard(item_id=item, subject=subject, modules=modules)
    return gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())


def _planted() -> list[ScoreCard]:
    rng = np.random.default_rng(0)
    cards = []
    for item in ITEMS:
        # no encoder in this run: grounding is missing for everybody
        cards.append(
            _card(
                item,
                "good",
                grounding=None,
                logic=float(rng.uniform(0.85, 0.99)),
                stability=float(rng.uniform(0.9, 0.97)),
            )
        )
        cards.append(_card(item, "silent", grounding=None, logic=None, stability=1.0))
    return cards


def test_a_silent_subject_never_ranks_above_a_good_one_on_what_it_escaped() -> None:
    cards = _planted()
    trust = {s: np.mean([c.trust for c in cards if c.subject == s]) for s in ("good", "silent")}
    assert trust["silent"] == pytest.approx(1.0) and trust["good"] < 0.96  # full trust: silent wins
    ranking = rank_subjects(cards, n_boot=500)
    good, silent = ranking.of("good"), ranking.of("silent")
    assert (good.rank, silent.rank) == (1, 2)
    assert (good.tier, silent.tier) == (1, 2)
    assert good.coverage == pytest.approx(0.6) and silent.coverage == pytest.approx(0.3)
    # each tier is matched on its own modules, named with the item counts
    assert good.matched_on == "logic+stability (8 items)"
    assert silent.matched_on == "stability (8 items)"
    assert ranking.items == tuple(ITEMS)
    # the summary table and its console show the rank, the coverage and what it rests on
    table = summarise(cards, n_boot=500).set_index("subject")
    assert (table.loc["good", "rank"], table.loc["silent", "rank"]) == (1, 2)
    assert table.loc["silent", "trust_mean"] > table.loc["good", "trust_mean"]
    assert table.loc["silent", "coverage_mean"] == pytest.approx(0.3)
    console = Console(record=True, width=250)
    print_summary(summarise(cards, n_boot=500), console=console)
    text = console.export_text()
    assert text.index("good") < text.index("silent")  # rank order
    assert "on logic+stability (8 items)" in text and "30%" in text and "coverage first" in text


def test_the_pair_is_compared_on_the_modules_both_were_scored_on() -> None:
    cards = _planted()
    res = compare_subjects(cards=cards, config=CompareConfig(n_boot=500))
    (pair,) = res.pairs
    assert (pair.a, pair.b) == ("good", "silent")
    assert pair.matched_on == "stability (8 items)" and pair.n == 8
    good_stability = np.mean([c.value("stability") for c in cards if c.subject == "good"])
    assert pair.mean_a == pytest.approx(good_stability) and pair.mean_b == pytest.approx(1.0)
    # the full trust and the coverage beside it, over the same items
    good_trust = np.mean([c.trust for c in cards if c.subject == "good"])
    assert pair.trust_a == pytest.approx(good_trust) and pair.trust_b == pytest.approx(1.0)
    assert (pair.coverage_a, pair.coverage_b) == (pytest.approx(0.6), pytest.approx(0.3))
    assert pair.note.startswith("silent was scored on less of the trust's weight (30% vs 60%)")
    # on a module, the module's own values (no note about matching)
    on_stability = compare_subjects(cards=cards, metric="stability", config=CompareConfig())
    assert on_stability.pairs[0].matched_on == "stability"
    assert on_stability.pairs[0].mean_difference == pytest.approx(pair.mean_difference)


def test_within_a_tier_each_item_is_matched_on_what_all_of_its_subjects_have() -> None:
    cards = []
    for i, item in enumerate(ITEMS):
        cards.append(_card(item, "a", grounding=0.9, logic=0.6, stability=0.9))
        # b has no logic on the first item only: same coverage tier, that item drops logic
        logic = None if i == 0 else 0.9
        cards.append(_card(item, "b", grounding=0.8, logic=logic, stability=0.9))
    ranking = rank_subjects(cards, n_boot=500)
    a, b = ranking.of("a"), ranking.of("b")
    assert a.tier == b.tier == 1
    assert a.matched_on == "grounding+logic+stability (7 items), grounding+stability (1 item)"
    on_first = matched_trust(cards[0], {"grounding", "stability"}, FusionConfig())
    assert on_first == pytest.approx((0.4 * 0.9 + 0.3 * 0.9) / 0.7)
    expected_a = (on_first + 7 * (0.4 * 0.9 + 0.3 * 0.6 + 0.3 * 0.9)) / 8
    assert a.matched == pytest.approx(expected_a)
    expected_b = ((0.4 * 0.8 + 0.3 * 0.9) / 0.7 + 7 * (0.4 * 0.8 + 0.3 * 0.9 + 0.3 * 0.9)) / 8
    assert b.matched == pytest.approx(expected_b)
    assert b.rank == 1 and a.rank == 2  # b's better logic outweighs a's better grounding


@pytest.mark.parametrize("seed", range(12))
def test_less_coverage_is_never_ranked_above_clearly_more(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cards = []
    for s in range(4):
        p_missing = rng.uniform(0.0, 0.9, size=3)  # each subject skips modules at its own rate
        for item in ITEMS:
            values = {
                m: None if rng.random() < p else float(rng.uniform(0, 1))
                for m, p in zip(("grounding", "logic", "stability"), p_missing, strict=True)
            }
            cards.append(_card(item, f"s{s}", **values))
    ranking = rank_subjects(cards, n_boot=300)
    ranked = [st for st in ranking.standings if st.rank is not None]
    for x in ranked:
        for y in ranked:
            if y.coverage_ci[0] > x.coverage_ci[1]:  # y clearly more coverage than x
                assert y.rank < x.rank, (x, y)
            if x.tier == y.tier and x.matched_ci[0] > y.matched_ci[1]:
                assert x.rank < y.rank, (x, y)


def test_failed_items_and_empty_subjects() -> None:
    cards = _planted()
    cards.append(ScoreCard(item_id="slide0", subject="dead", status="failed", errors=["x"]))
    failed = ScoreCard(item_id="slide1", subject="good", status="failed", errors=["x"])
    cards = [c for c in cards if not (c.subject == "good" and c.item_id == "slide1")] + [failed]
    ranking = rank_subjects(cards, n_boot=200)
    assert ranking.unranked == {"dead": "no completed item"}
    assert ranking.of("dead").rank is None and ranking.standings[-1].subject == "dead"
    assert "slide1" not in ranking.items and len(ranking.items) == 7  # not completed by all
    assert ranking.of("good").rank == 1
    assert card_coverage(failed, FusionConfig()) is None
    # a subject scored on nothing at all is tied below the others, not left out
    blank = [_card(i, "blank", grounding=None, logic=None, stability=None) for i in ITEMS]
    ranking = rank_subjects([*_planted(), *blank], n_boot=200)
    st = ranking.of("blank")
    assert (st.rank, st.tier, st.coverage) == (3, 3, 0.0)
    assert math.isnan(st.matched) and st.matched_on == "no module shared"
