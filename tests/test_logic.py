"""Rules NLI, pair building and S_l — exact math with an injected toy extractor, then the real
offline stack (lexicon + rules) on real reference reports."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
import pytest

from pathgls.logic import LogicConfig, build_pairs, logic_score, score_logic, top_k
from pathgls.nli.rules import RulesNLI
from pathgls.text.analyze import analyze_report
from pathgls.types import Entity

# phrase → (type, concept, attributes)
TOY = {
    "invasive ductal carcinoma": (
        "pathological_diagnosis",
        "invasive ductal carcinoma",
        {"behavior": "malignant", "invasive": "yes", "depends_on": "invasion"},
    ),
    "fibroadenoma": ("pathological_diagnosis", "fibroadenoma", {"behavior": "benign_neoplasm"}),
    "ductal carcinoma in situ": (
        "pathological_diagnosis",
        "ductal carcinoma in situ",
        {"behavior": "in_situ"},
    ),
    "lymphovascular invasion": (
        "lymphovascular_invasion",
        "lymphovascular invasion",
        {"group": "lvi", "implies": "malignant"},
    ),
    "stromal invasion": (
        "morphology_finding",
        "stromal invasion",
        {"group": "invasion", "implies": "malignant"},
    ),
    "well differentiated": ("grade", "well differentiated", {"grade": "low"}),
    "poorly differentiated": ("grade", "poorly differentiated", {"grade": "high"}),
    "marked pleomorphism": ("morphology_finding", "marked pleomorphism", {"implies": "high_grade"}),
    "er": ("ihc_marker", "er", {}),
    "positive": ("ihc_modifier", "positive", {"result": "positive"}),
    "negative": ("ihc_modifier", "negative", {"result": "negative"}),
    "margins involved": ("margin", "margin", {"result": "positive"}),
    "margins free": ("margin", "margin", {"result": "negative"}),
    "malignancy": ("pathological_diagnosis", "malignancy", {"behavior": "malignant"}),
}


class ToyExtractor:
    """Finds TOY phrases; "no <phrase>" is negated, "suspicious for <phrase>" uncertain."""

    name = "toy"

    def extract(self, report_text: str) -> list[Entity]:
        out = []
        low = report_text.lower()
        for phrase, (etype, concept, attrs) in TOY.items():
            for m in re.finditer(rf"\b{re.escape(phrase)}\b", low):
                before = low[max(0, m.start() - 25) : m.start()]
                out.append(
                    Entity(
                        text=report_text[m.start() : m.end()],
                        type=etype,
                        start=m.start(),
                        end=m.end(),
                        negated=bool(re.search(r"\bno (evidence of )?$", before)),
                        uncertain=before.endswith("suspicious for "),
                        concept=concept,
                        attributes=dict(attrs),
                    )
                )
        return out


@pytest.fixture(scope="module")
def rules() -> RulesNLI:
    return RulesNLI(ToyExtractor())


@pytest.mark.parametrize(
    ("premise", "hypothesis", "rule"),
    [
        ("Lymphovascular invasion is present.", "No lymphovascular invasion.", "negation"),
        ("No stromal invasion is seen.", "Invasive ductal carcinoma.", "dependency"),
        ("Lymphovascular invasion is present.", "Fibroadenoma.", "benign_vs_malignant"),
        ("No evidence of malignancy.", "Invasive ductal carcinoma.", "benign_vs_malignant"),
        (
            "Stromal invasion is present.",
            "Ductal carcinoma in situ, no stromal invasion.",
            "in_situ_vs_invasive",
        ),
        ("Poorly differentiated tumour.", "Well differentiated carcinoma.", "grade"),
        ("Marked pleomorphism.", "Well differentiated carcinoma.", "grade"),
        ("The tumour is ER positive.", "ER negative.", "marker_result"),
        ("Margins involved.", "Margins free.", "margin"),
    ],
)
def test_each_rule_fires_symmetrically(
    rules: RulesNLI, premise: str, hypothesis: str, rule: str
) -> None:
    for p, h in ((premise, hypothesis), (hypothesis, premise)):
        hits = rules.explain(p, h)
        assert hits and rule in {x.rule for x in hits}, (p, h, hits)
    probs = rules.contradiction([premise, hypothesis], [hypothesis, premise])
    assert probs[0] == probs[1] >= 0.3


@pytest.mark.parametrize(
    ("premise", "hypothesis"),
    [
        ("Lymphovascular invasion is present.", "Invasive ductal carcinoma."),
        ("Invasive ductal carcinoma and ductal carcinoma in situ.", "Stromal invasion is present."),
        ("ER positive.", "ER positive."),
        (
            "Suspicious for lymphovascular invasion.",
            "No lymphovascular invasion.",
        ),  # uncertain: no rule
        ("Poorly differentiated.", "Marked pleomorphism."),
        ("Stromal invasion is present.", "Ductal carcinoma in situ."),  # coexistence
        ("Lymphovascular invasion is present.", "Fibroadenoma with invasive ductal carcinoma."),
        ("Poorly differentiated.", "Well differentiated and poorly differentiated areas."),
    ],
)
def test_consistent_pairs_get_the_base_probability(
    rules: RulesNLI, premise: str, hypothesis: str
) -> None:
    assert rules.contradiction([premise], [hypothesis])[0] == pytest.approx(rules.base_probability)
    assert rules.explain(premise, hypothesis) == []


def test_rules_input_checks(rules: RulesNLI) -> None:
    with pytest.raises(ValueError, match="premises"):
        rules.contradiction(["a"], [])
    assert rules.contradiction([], []).shape == (0,)


class FixedNLI:
    """Returns given probabilities in pair order (to check the aggregation exactly)."""

    name = "fixed"

    def __init__(self, probs):
        self.probs = np.asarray(probs, dtype=float)

    def contradiction(self, premises, hypotheses):
        assert len(premises) == len(hypotheses) == len(self.probs)
        return self.probs


REPORT = (
    "MICROSCOPIC DESCRIPTION: Marked pleomorphism is seen. Lymphovascular invasion is present. "
    "ER positive.\n"
    "DIAGNOSIS: Invasive ductal carcinoma. Ductal carcinoma in situ.\n"
)


def test_pairs_and_top_k_mean() -> None:
    rep = analyze_report(REPORT, extractor=ToyExtractor())
    pairs = build_pairs(rep)
    sents = rep.parsed.sentences
    kinds = {(sents[p.premise].text, sents[p.hypothesis].text, p.kind) for p in pairs}
    # three finding sentences × two diagnosis statements + one diagnosis↔diagnosis pair
    assert len(pairs) == 7
    assert (
        "Invasive ductal carcinoma.",
        "Ductal carcinoma in situ.",
        "diagnosis<->diagnosis",
    ) in kinds
    assert all(sents[p.hypothesis].section == "diagnosis" for p in pairs)
    probs = [0.9, 0.1, 0.5, 0.2, 0.0, 0.3, 0.7]
    k = math.ceil(0.3 * 7)
    score = logic_score(report=rep, nli=FixedNLI(probs))
    assert score.evidence["k"] == k == 3
    assert score.value == pytest.approx(1 - (0.9 + 0.7 + 0.5) / 3)
    assert [p["probability"] for p in score.evidence["top_pairs"]] == [0.9, 0.7, 0.5]
    fixed = logic_score(report=rep, nli=FixedNLI(probs), config=LogicConfig(top_k=1))
    assert fixed.value == pytest.approx(0.1)
    assert top_k(2, LogicConfig(top_k=5)) == 2 and top_k(1, LogicConfig()) == 1


def test_benign_morphology_with_carcinoma_scores_lower(rules: RulesNLI) -> None:
    consistent = (
        "MICROSCOPIC: Stromal invasion is present. Lymphovascular invasion is present. "
        "Marked pleomorphism.\nDIAGNOSIS: Invasive ductal carcinoma, poorly differentiated."
    )
    contradicted = consistent.replace(
        "Invasive ductal carcinoma, poorly differentiated", "Fibroadenoma"
    )
    s_ok = score_logic(consistent, extractor=ToyExtractor(), nli=rules)
    s_bad = score_logic(contradicted, extractor=ToyExtractor(), nli=rules)
    assert s_ok.value > 0.95
    assert s_bad.value < 0.5 * s_ok.value
    top = s_bad.evidence["top_pairs"][0]
    assert top["rule"] == "benign_vs_malignant" and "Fibroadenoma" in top["hypothesis"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t ",
        "<html><body><p>hello</p></body></html>",
        "Das Gewebe zeigt keine Auffälligkeiten.",
        "Lymphovascular invasion is present.",
    ],
)
def test_no_pairs_is_missing_not_one(rules: RulesNLI, text: str) -> None:
    s = score_logic(text, extractor=ToyExtractor(), nli=rules)
    assert s.value is None and s.missing and "logic not scored" in s.missing_reason


# --- the real offline stack ------------------------------------------------------------------


@pytest.fixture(scope="module")
def references(shared_data: Path) -> list[str]:
    with open(
        shared_data / "expert_scores" / "hare_expert_dev.tsv", newline="", encoding="utf-8"
    ) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return list(dict.fromkeys(r["reference"] for r in rows))


@pytest.mark.slow
def test_lexicon_rules_on_real_reports(references: list[str]) -> None:
    from pathgls.meta.perturb import swap_diagnosis
    from pathgls.nli import build_nli
    from pathgls.text import build_extractor

    ext, nli = build_extractor("lexicon"), build_nli("rules")
    scored = 0
    drops = []
    for ref in references[:12]:
        orig = score_logic(ref, extractor=ext, nli=nli)
        bad_text = swap_diagnosis(ref)
        if orig.value is None or bad_text is None:
            continue
        scored += 1
        bad = score_logic(bad_text, extractor=ext, nli=nli)
        assert bad.value is not None
        drops.append(orig.value - bad.value)
    assert scored >= 6
    assert np.mean(drops) > 0.15  # replacing the malignancy by a benign tumour is caught


@pytest.mark.parametrize(
    ("raw", "warning"),
    [
        (b"", "empty"),
        (b"   \n\t", "empty"),
        (b"\x93Invasive carcinoma\x94 with no lymphovascular invasion.", "cp1252"),
        ("Invasive ductal carcinoma. " * 40_000, "truncat"),
        (
            "<p>Diagnosis: <b>invasive ductal carcinoma</b></p><p>No lymphovascular invasion.</p>",
            "HTML",
        ),
        ("Das Gewebe zeigt ein invasives duktales Karzinom ohne Lymphgefäßinvasion.", "English"),
        ("肿瘤细胞异型性明显。诊断：浸润性导管癌。", "English"),
    ],
)
def test_bad_input_gives_defined_results_with_warnings(raw, warning: str) -> None:
    from pathgls.nli import build_nli
    from pathgls.text import build_extractor

    s = score_logic(raw, extractor=build_extractor("lexicon"), nli=build_nli("rules"))
    assert s.value is None or 0.0 <= s.value <= 1.0
    if s.value is None:
        assert s.missing_reason
    assert any(warning.lower() in w.lower() for w in s.warnings), s.warnings


def test_logic_runs_with_a_hugging_face_nli_model(tmp_path: Path) -> None:
    """Wiring only: a tiny random DeBERTa-v2 classifier gives probabilities, never a result."""
    from pathgls.nli import build_nli
    from pathgls.testing import save_random_nli_classifier

    model = save_random_nli_classifier(
        tmp_path / "nli", size="tiny", label_order=("neutral", "contradiction", "entailment")
    )
    nli = build_nli(f"hf:{model}")
    s = score_logic(REPORT, extractor=ToyExtractor(), nli=nli)
    assert s.value is not None and 0.0 <= s.value <= 1.0
    assert s.evidence["n_pairs"] == 7 and "rule" not in s.evidence["top_pairs"][0]
    direct = nli.contradiction(
        [s.evidence["top_pairs"][0]["premise"]], [s.evidence["top_pairs"][0]["hypothesis"]]
    )
    assert direct[0] == pytest.approx(s.evidence["top_pairs"][0]["probability"], abs=1e-6)


def test_negation_about_the_remaining_ones_is_no_contradiction() -> None:
    from pathgls.nli import build_nli

    nli = build_nli("rules")
    pos = "Two of fourteen lymph nodes are positive for metastatic carcinoma."
    rest = "The remaining lymph nodes are negative for metastatic carcinoma."
    assert nli.explain(pos, rest) == []
    assert nli.explain(pos, "The lymph nodes are negative for metastatic carcinoma.") != []
