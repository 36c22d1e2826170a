"""Reasons say what was measured: a contradiction only where a check or the judge found one, no
sentence paired with itself, the rank's own numbers, and a deploy without an image check says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pathgls.config import GateConfig
from pathgls.fusion import route
from pathgls.reasons import IMAGE_UNCHECKED, card_reasons, is_contradiction, logic_note
from pathgls.runner.summary import ranked_on
from pathgls.types import ModuleScore, ScoreCard

V1 = Path(__file__).parent / "data" / "scorecards_v1"
SAME = "Benign skin with a keratin-filled dilated follicular infundibulum."


def pair(p: float, premise: str = "No atypia.", hypothesis: str = "Benign skin.", **kw) -> dict:
    return {"premise": premise, "hypothesis": hypothesis, "probability": p, **kw}


def test_a_probability_alone_is_not_a_contradiction() -> None:
    note = logic_note([pair(0.02), pair(0.01, "A.", "B.")])
    assert note == "no contradiction found (most similar pair p=0.020)"
    assert not is_contradiction(pair(0.9))


def test_the_flag_or_a_fired_check_makes_one() -> None:
    assert is_contradiction(pair(0.1, contradicts=True))
    assert not is_contradiction(pair(0.9, contradicts=False, rule="grade_conflict"))
    # older cards have no flag: a fired check decides
    assert is_contradiction(pair(0.6, rule="benign_morphology"))
    assert is_contradiction(pair(0.6, checks=[{"rule": "x"}]))
    note = logic_note([pair(0.9), pair(0.6, "benign glands.", "invasive carcinoma.", rule="r")])
    assert note == "contradiction 'benign glands.' vs 'invasive carcinoma.' (p=0.600, r)"


def test_a_sentence_is_never_paired_with_itself() -> None:
    assert logic_note([pair(0.02, SAME, SAME)]) is None
    assert logic_note([pair(0.9, SAME, f" {SAME.upper()} ", rule="r")]) is None
    same_index = pair(0.5, "A.", "B.", premise_sentence=3, hypothesis_sentence=3, rule="r")
    note = logic_note([same_index, pair(0.1, "C.", "D.")])
    assert note == "no contradiction found (most similar pair p=0.100)"


def test_an_older_cards_top_contradiction_is_recomputed_from_its_evidence() -> None:
    card = ScoreCard.from_json((V1 / "partial.json").read_bytes())
    assert any("top contradiction" in r for r in card.decision.reasons)
    reasons = card_reasons(card)
    assert not any("top contradiction" in r for r in reasons)
    # its pair had a fired check (benign_morphology): still called a contradiction
    assert any(r.startswith("logic 0.400: contradiction 'benign glands") for r in reasons)
    ev = card.modules["logic"].evidence
    for p in ev["top_pairs"]:
        p.pop("rule", None)
        p.pop("checks", None)
    reasons = card_reasons(card)
    assert any(
        "logic 0.400: no contradiction found (most similar pair p=0.600)" in r for r in reasons
    )


def _score(name: str, value: float | None) -> ModuleScore:
    return ModuleScore(name=name, value=value, missing_reason=None if value else "no encoder")


def test_a_deploy_with_the_image_unchecked_says_so() -> None:
    modules = {"logic": _score("logic", 1.0), "stability": _score("stability", 0.98)}
    modules["grounding"] = _score("grounding", None)
    decision = route(trust=0.99, modules=modules, config=GateConfig(required=(), min_coverage=0.0))
    assert decision.route == "deploy" and IMAGE_UNCHECKED in decision.reasons[0]
    modules["grounding"] = _score("grounding", 0.9)
    checked = route(trust=0.95, modules=modules, config=GateConfig(required=(), min_coverage=0.0))
    assert checked.route == "deploy" and IMAGE_UNCHECKED not in checked.reasons[0]


@pytest.mark.parametrize(("tier", "head"), [(1.0, "tier 1"), (2.0, "tier 2"), (float("nan"), "–")])
def test_ranked_on_shows_the_tier_beside_the_value(tier: float, head: str) -> None:
    row = {
        "tier": tier,
        "matched_trust_n": 3,
        "matched_trust_mean": 0.866,
        "matched_trust_ci_low": 0.8,
        "matched_trust_ci_high": 0.93,
    }
    assert ranked_on(row) == f"{head} · 0.866 [0.80, 0.93] (n=3)"
