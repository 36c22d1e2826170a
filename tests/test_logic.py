"""Logic (S_l): scoped statements, the consistency checks and their look-alikes, scoped pairs,
the published top-K aggregation, an HF NLI on the same pairs, and bad input."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from pathgls.config import LogicConfig
from pathgls.logic import analyze_logic, build_pairs, logic_score, score_logic, top_k
from pathgls.nli import build_nli
from pathgls.nli.rules import RulesNLI
from pathgls.text import analyze_report, build_extractor
from pathgls.text.consistency import CHECKS, run_checks
from pathgls.text.consistency.statements import report_statements


@pytest.fixture(scope="module")
def lexicon():
    return build_extractor("lexicon")


@pytest.fixture(scope="module")
def rules() -> RulesNLI:
    return build_nli("rules")


def checks_of(text: str, extractor) -> list[str]:
    return [
        h.rule for h in run_checks(report_statements(analyze_report(text, extractor=extractor)))
    ]


# Each check on a contradiction of its own, and the look-alikes it must stay silent on. Written
# for these tests (not taken from the benchmark's evaluation set).
FIRES = [
    (
        "polarity",
        "Perineural invasion is identified. The tumour measures 2 cm. "
        "No perineural invasion is seen.",
    ),
    ("polarity", "Tumor necrosis is present. Tumor necrosis is not seen."),
    (
        "polarity",
        "Lobectomy of the right upper lobe: squamous cell carcinoma without lymphovascular "
        "invasion. Lymphovascular invasion is present.",
    ),
    (
        "in_situ_vs_invasive",
        "Ductal carcinoma in situ, no invasive carcinoma identified. "
        "Invasive ductal carcinoma measures 1.2 cm.",
    ),
    (
        "in_situ_vs_invasive",
        "Urothelial carcinoma confined to the urothelium, with no invasion "
        "of the lamina propria. Muscularis propria invasion is present.",
    ),
    (
        "node_status",
        "Metastatic carcinoma in 3 of 15 axillary lymph nodes. No lymph node "
        "metastasis is identified.",
    ),
    (
        "node_counts",
        "Two of 12 lymph nodes are positive for carcinoma. Lymph nodes: 4/12 involved.",
    ),
    ("margin", "All margins are free of tumour. The deep margin is involved by carcinoma."),
    ("margin", "Carcinoma extends to the inked margin. The closest margin is 0.2 cm."),
    ("marker_result", "Tumour cells are positive for ER (90%). The carcinoma is ER-negative."),
    ("grade", "Adenocarcinoma, grade 1 (poorly differentiated)."),
    ("grade", "Prostatic adenocarcinoma, Gleason score 3+3=6 (Grade Group 4)."),
    ("grade", "Prostatic adenocarcinoma, Gleason 4+4 (total score 7)."),
    (
        "benign_vs_malignant",
        "Fibroadenoma. Lymphovascular invasion is present. Two of ten lymph "
        "nodes are positive for carcinoma.",
    ),
    (
        "benign_vs_malignant",
        "Invasive ductal carcinoma, 2.0 cm. The mass itself is a fibroadenoma.",
    ),
    ("benign_morphology", "Invasive carcinoma. The glands show no atypia and no pleomorphism."),
    (
        "unsupported_metastasis",
        "Invasive ductal carcinoma of the breast. Metastatic melanoma in two axillary lymph nodes.",
    ),
    ("stage", "Invasive ductal carcinoma of the breast, 6.2 cm. Pathologic stage pT1c N0."),
    ("stage", "Colonic adenocarcinoma, pT3 pN0. Metastatic adenocarcinoma in 3 of 12 lymph nodes."),
    ("stage", "Adenocarcinoma, pT3 pN1 (0/14)."),
    (
        "node_status",
        "Metastatic carcinoma in twenty-five of thirty lymph nodes. No lymph node metastasis.",
    ),
    ("node_counts", "Metastatic carcinoma in two of twenty-one lymph nodes. Lymph nodes: 5/21."),
    ("stage", "Prostatic adenocarcinoma, pT3a. The tumour is confined to the prostate."),
]
SILENT = [
    "Lymphovascular invasion: present. Perineural invasion: not identified.",
    # another organ, side, part, station, structure
    "Perineural invasion is present in the prostate. The seminal vesicles show no perineural "
    "invasion.",
    "Right breast: invasive ductal carcinoma. Left breast: fibroadenoma.",
    "Part A, core biopsy: invasive ductal carcinoma.\nPart B, re-excision: no residual carcinoma.",
    "Sentinel lymph node: 1/2 positive for metastatic carcinoma. Non-sentinel lymph nodes: 0/8.",
    "Invasive ductal carcinoma. No carcinoma is present at the inked margins.",
    "Endometrioid adenocarcinoma of the endometrium. The cervix is free of tumour. Leiomyoma.",
    "Invasive ductal carcinoma of the left breast. Contralateral mastectomy: benign breast "
    "tissue, negative for carcinoma.",
    "Metastatic carcinoma in the left pelvic lymph nodes, while the right pelvic lymph nodes "
    "show no tumour.",
    # the site named before a denial, lists of organs, structures, separate specimens, other lesions
    "Left breast, mastectomy: invasive lobular carcinoma, 3 cm. The right breast shows "
    "fibrocystic change and no malignancy.",
    "Serous carcinoma of the left ovary. The uterus, cervix and fallopian tubes are free of "
    "tumour.",
    "Clear cell renal cell carcinoma of the kidney. The adrenal gland received with the kidney "
    "is free of carcinoma.",
    "Colonic adenocarcinoma invading the muscularis propria. The serosa is free of tumour.",
    "Invasive ductal carcinoma, 2 cm.\nSeparately submitted superior margin: no carcinoma "
    "identified.",
    "Gastric biopsy: adenocarcinoma. Esophageal biopsy: squamous mucosa (no dysplasia or "
    "malignancy).",
    "A 2 cm nodule in the right upper lobe shows adenocarcinoma. The two smaller nodules show "
    "no tumour.",
    "Tubular adenoma with high-grade dysplasia. A second polyp shows no dysplasia.",
    # part of a set
    "Metastatic carcinoma in 3 of 15 axillary lymph nodes. The remaining lymph nodes are negative.",
    "The deep margin is involved by carcinoma. The other margins are free.",
    # mixed grades, two lesions, coexistence, hedging
    "Carcinoma with well differentiated areas and a poorly differentiated component.",
    "High-grade ductal carcinoma in situ. Invasive ductal carcinoma, grade 1.",
    "Invasive ductal carcinoma with associated ductal carcinoma in situ.",
    "The invasive ductal carcinoma is ER positive, while the metaplastic carcinoma is ER negative.",
    "Suspicious for lymphovascular invasion. No definite lymphovascular invasion.",
    "Invasive ductal carcinoma of the breast. Metastatic ductal carcinoma in two axillary lymph "
    "nodes.",
    "Invasive ductal carcinoma, pT1c pN0(i+). Isolated tumour cells in one sentinel lymph node.",
    "Lung adenocarcinoma, 5.5 cm, pT2b (AJCC 7th edition).",
    # denied severe atypia leaves atypia possible; background tissue is not the tumour
    "Urothelial carcinoma. The ureter shows no high-grade atypia.",
    "Invasive carcinoma. Adjacent breast tissue without atypia.",
]


@pytest.mark.parametrize(
    ("rule", "text"), FIRES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(FIRES)]
)
def test_each_check_fires_on_its_contradiction(rule: str, text: str, lexicon) -> None:
    assert rule in checks_of(text, lexicon)


@pytest.mark.parametrize("text", SILENT, ids=[f"silent-{i}" for i in range(len(SILENT))])
def test_checks_stay_silent_on_look_alikes(text: str, lexicon) -> None:
    assert checks_of(text, lexicon) == []


def test_every_check_is_exercised() -> None:
    tested = {r for r, _ in FIRES} | {"benign_diagnosis"}  # benign_diagnosis fires as below
    assert set(CHECKS) <= tested | {"benign_vs_malignant"}, set(CHECKS) - tested


def test_a_benign_diagnosis_given_as_the_diagnosis_fires(lexicon) -> None:
    text = (
        "Lobectomy: moderately differentiated adenocarcinoma of the lung, 3 cm. "
        "The final diagnosis is organizing pneumonia."
    )
    rs = report_statements(analyze_report(text, extractor=lexicon))
    hits = [h for h in run_checks(rs) if h.rule == "benign_vs_malignant"]
    assert hits and "diagnosis is given as" in hits[0].explanation


def test_hits_carry_both_sentences_scopes_and_an_explanation(lexicon) -> None:
    text = "Left breast: invasive ductal carcinoma, ER positive.\nLeft breast: ER negative."
    score = score_logic(text, extractor=lexicon, nli=build_nli("rules"))
    (check,) = score.evidence["checks"]
    assert check["rule"] == "marker_result"
    assert check["first"]["sentence"].startswith("Left breast: invasive")
    assert check["second"]["sentence"] == "Left breast: ER negative."
    assert "breast" in check["first"]["scope"] and "left" in check["second"]["scope"]
    assert "estrogen receptor positive" in check["explanation"]
    top = score.evidence["top_pairs"][0]
    assert top["rule"] == "marker_result" and top["checks"][0] == check


# --- scope ------------------------------------------------------------------------------------


def _scope_of(report, text: str):
    i = next(i for i, e in enumerate(report.entities) if e.text == text)
    return report.scopes.entity_scopes[i]


def test_scope_is_inherited_from_part_labels_and_site_headings(lexicon) -> None:
    text = (
        "A. RIGHT BREAST, LUMPECTOMY:\n"
        "- Invasive ductal carcinoma, 1.5 cm.\n"
        "- Lymphovascular invasion is present.\n\n"
        "B. LEFT BREAST, EXCISION:\n"
        "- Fibroadenoma.\n"
        "- No lymphovascular invasion.\n"
        "Part 3: Sentinel lymph node, left axilla:\n"
        "- One of two lymph nodes with micrometastasis.\n"
    )
    report = analyze_report(text, extractor=lexicon)
    lvi_a = _scope_of(report, "Lymphovascular invasion")
    assert (lvi_a.part, lvi_a.organ, lvi_a.side) == ("A", "breast", "right")
    fa = _scope_of(report, "Fibroadenoma")
    assert (fa.part, fa.organ, fa.side) == ("B", "breast", "left")
    micro = _scope_of(report, "micrometastasis")
    assert micro.part == "3" and micro.station == "sentinel lymph node"
    # different parts: the two LVI statements and the fibroadenoma never meet
    assert "checks" not in score_logic(text, extractor=lexicon, nli=build_nli("rules")).evidence


def test_scope_within_one_sentence_follows_its_clauses(lexicon) -> None:
    text = (
        "The left breast shows infiltrating lobular carcinoma, while the right breast shows "
        "fibroadenoma."
    )
    report = analyze_report(text, extractor=lexicon)
    assert _scope_of(report, "infiltrating lobular carcinoma").side == "left"
    assert _scope_of(report, "fibroadenoma").side == "right"


# --- pairs and aggregation ---------------------------------------------------------------------

REPORT = (
    "Microscopic: tumour necrosis is present. Lymphovascular invasion is present.\n"
    "Lymph nodes: metastatic carcinoma in 2 of 14 lymph nodes.\n"
    "Comment: no tumour necrosis. No lymphovascular invasion. Lymph nodes negative.\n"
    "Diagnosis: invasive ductal carcinoma, grade 2. Ductal carcinoma in situ.\n"
)


class FixedNLI:
    """Gives fixed probabilities in pair order and records what it was shown."""

    name = "fixed"

    def __init__(self, probs: Sequence[float] | None = None) -> None:
        self.probs = probs
        self.seen: list[tuple[str, str]] = []

    def contradiction(self, premises, hypotheses):
        self.seen += list(zip(premises, hypotheses, strict=True))
        n = len(premises)
        probs = self.probs if self.probs is not None else [0.1 * (i % 10) for i in range(n)]
        assert len(probs) == n
        return np.asarray(probs, dtype=float)


def test_top_k_aggregation_is_the_published_one(lexicon) -> None:
    report = analyze_report(REPORT, extractor=lexicon)
    nli = FixedNLI()
    la = analyze_logic(report=report, nli=nli, config=LogicConfig(checks=False))
    n = len(la.pairs)
    assert n >= 3
    model = [0.1 * (i % 10) for i in range(n)]
    score = logic_score(report=report, nli=FixedNLI(model), config=LogicConfig(checks=False))
    k = math.ceil(0.3 * n)
    assert score.evidence["k"] == k == top_k(n, LogicConfig())
    assert score.value == pytest.approx(1 - np.mean(sorted(model, reverse=True)[:k]))
    fixed = logic_score(
        report=report, nli=FixedNLI(model), config=LogicConfig(top_k=1, checks=False)
    )
    assert fixed.value == pytest.approx(1 - max(model))
    assert top_k(2, LogicConfig(top_k=5)) == 2 and top_k(1, LogicConfig()) == 1


def test_a_pair_takes_the_larger_of_the_model_and_the_checks(lexicon) -> None:
    report = analyze_report(REPORT, extractor=lexicon)
    la = analyze_logic(report=report, nli=FixedNLI(None))
    by_pair = {(p.premise, p.hypothesis): i for i, p in enumerate(la.pairs)}
    assert la.hits, "REPORT contradicts itself three times"
    for h in la.hits:
        i = by_pair[h.sentences]
        assert la.probabilities[i] == max(la.model_probabilities[i], h.probability)


def test_finding_pairs_reach_an_hf_nli_model_with_the_right_sentences(
    tiny_nli: Path, lexicon
) -> None:
    """Wiring only: a tiny random DeBERTa-v2 classifier sees the scoped finding↔finding pairs."""
    nli = build_nli(f"hf:{tiny_nli}")
    shown: list[tuple[str, str]] = []
    original = nli.contradiction

    def recording(premises, hypotheses):
        shown.extend(zip(premises, hypotheses, strict=True))
        return original(premises, hypotheses)

    nli.contradiction = recording  # type: ignore[method-assign]
    text = "Tumor necrosis is present. The tumour is 2 cm. Tumor necrosis is not seen."
    score = score_logic(text, extractor=lexicon, nli=nli)
    assert ("Tumor necrosis is present.", "Tumor necrosis is not seen.") in shown
    assert score.value is not None and 0.0 <= score.value <= 1.0
    top = score.evidence["top_pairs"][0]
    assert "nli_probability" in top and top["rule"] == "polarity"
    assert top["probability"] == pytest.approx(max(top["nli_probability"], 0.95))
    # the model sees only scoped pairs: nothing is compared with the size sentence
    assert all("2 cm" not in p and "2 cm" not in h for p, h in shown)


def test_pairs_never_cross_scopes_and_stay_bounded(lexicon) -> None:
    text = (
        "Part A, right breast: invasive ductal carcinoma. Lymphovascular invasion is present.\n"
        "Part B, left breast: no lymphovascular invasion.\n"
    )
    report = analyze_report(text, extractor=lexicon)
    pairs = build_pairs(report)
    sentences = report.parsed.sentences
    assert not any(
        "Part A" in sentences[p.premise].text and "Part B" in sentences[p.hypothesis].text
        for p in pairs
    )
    many = analyze_report(REPORT * 50, extractor=lexicon)
    assert len(build_pairs(many, config=LogicConfig(max_pairs=7))) == 7
    assert build_pairs(many) == build_pairs(many)  # deterministic


def test_rules_backend_has_no_model_inside_a_report(lexicon, rules: RulesNLI) -> None:
    nli = FixedNLI([])
    report = analyze_report(
        "Fibroadenoma of the breast. Lymphovascular invasion is present.", extractor=lexicon
    )
    la = analyze_logic(report=report, nli=rules)
    assert la.model_probabilities is None and la.hits
    assert nli.seen == []


# --- the rules NLI backend on two texts -------------------------------------------------------


@pytest.mark.parametrize(
    ("premise", "hypothesis", "rule"),
    [
        ("Lymphovascular invasion is present.", "No lymphovascular invasion.", "polarity"),
        ("No stromal invasion is seen.", "Invasive ductal carcinoma.", "in_situ_vs_invasive"),
        ("Lymphovascular invasion is present.", "Fibroadenoma.", "benign_vs_malignant"),
        ("No evidence of malignancy.", "Invasive ductal carcinoma.", "polarity"),
        ("Invasive ductal carcinoma.", "Fibroadenoma.", "benign_vs_malignant"),
        ("Poorly differentiated carcinoma, grade 3.", "Grade 1 carcinoma.", "grade"),
        ("The tumour is ER positive.", "ER negative.", "marker_result"),
        ("Margins involved by carcinoma.", "Margins free of tumour.", "margin"),
    ],
)
def test_rules_nli_fires_symmetrically(
    rules: RulesNLI, premise: str, hypothesis: str, rule: str
) -> None:
    for p, h in ((premise, hypothesis), (hypothesis, premise)):
        assert rule in {x.rule for x in rules.explain(p, h)}, (p, h)
    probs = rules.contradiction([premise, hypothesis], [hypothesis, premise])
    assert probs[0] == probs[1] >= 0.5


@pytest.mark.parametrize(
    ("premise", "hypothesis"),
    [
        ("Lymphovascular invasion is present.", "Invasive ductal carcinoma."),
        ("ER positive.", "ER positive."),
        ("Suspicious for lymphovascular invasion.", "No lymphovascular invasion."),
        ("Stromal invasion is present.", "Ductal carcinoma in situ."),
        (
            "Two of fourteen lymph nodes are positive for metastatic carcinoma.",
            "The remaining lymph nodes are negative for metastatic carcinoma.",
        ),
    ],
)
def test_rules_nli_consistent_pairs_get_the_base(
    rules: RulesNLI, premise: str, hypothesis: str
) -> None:
    assert rules.contradiction([premise], [hypothesis])[0] == pytest.approx(rules.base_probability)


def test_rules_input_checks(rules: RulesNLI) -> None:
    with pytest.raises(ValueError, match="premises"):
        rules.contradiction(["a"], [])
    assert rules.contradiction([], []).shape == (0,)
    assert rules.contradiction([""], ["No necrosis."])[0] == rules.base_probability


# --- S_l on real reports and bad input --------------------------------------------------------


@pytest.fixture(scope="module")
def references(shared_data: Path) -> list[str]:
    with open(
        shared_data / "expert_scores" / "hare_expert_dev.tsv", newline="", encoding="utf-8"
    ) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return list(dict.fromkeys(r["reference"] for r in rows))


@pytest.mark.slow
def test_unedited_expert_reports_do_not_contradict_themselves(references, lexicon, rules) -> None:
    scores = [score_logic(r, extractor=lexicon, nli=rules) for r in references]
    scored = [s.value for s in scores if s.value is not None]
    assert len(scored) >= 0.75 * len(references)
    assert all(v > 0.8 for v in scored)  # no false alarm on the dev references
    assert all(s.missing_reason for s in scores if s.value is None)


@pytest.mark.slow
def test_a_swapped_diagnosis_is_caught_on_real_reports(references, lexicon, rules) -> None:
    from pathgls.meta.perturb import swap_diagnosis

    drops = []
    for ref in references[:16]:
        bad = swap_diagnosis(ref)
        orig = score_logic(ref, extractor=lexicon, nli=rules).value
        if bad is None or orig is None:
            continue
        edited = score_logic(bad, extractor=lexicon, nli=rules).value
        drops.append(orig - (edited if edited is not None else 1 - rules.base_probability))
    assert len(drops) >= 6 and np.mean(drops) > 0.3


BAD_INPUTS = [
    (b"", "empty"),
    (b"   \n\t", "empty"),
    (b"\x93Invasive carcinoma\x94 with no lymphovascular invasion.", "cp1252"),
    ("Invasive ductal carcinoma. Lymphovascular invasion. " * 25_000, "truncat"),
    (
        "<p>Diagnosis: <b>invasive ductal carcinoma</b></p><p>No lymphovascular invasion.</p>",
        "HTML",
    ),
    ("Das Gewebe zeigt ein invasives duktales Karzinom ohne Lymphgefäßinvasion.", "English"),
    ("肿瘤细胞异型性明显。诊断：浸润性导管癌。", "English"),
]


@pytest.mark.parametrize(("raw", "warning"), BAD_INPUTS, ids=[w for _, w in BAD_INPUTS])
def test_bad_input_gives_a_defined_result_with_a_warning(raw, warning: str, lexicon, rules) -> None:
    s = score_logic(raw, extractor=lexicon, nli=rules)
    assert s.value is None or 0.0 <= s.value < 1.0  # never silently 1.0
    if s.value is None:
        assert s.missing_reason
    assert any(warning.lower() in w.lower() for w in s.warnings), s.warnings


SHAPES = {
    "no headings": "invasive ductal carcinoma 2 cm lymphovascular invasion present no "
    "lymphovascular invasion margins free",
    "bullets": "- Invasive ductal carcinoma\n- LVI: present\n- LVI: absent\n- Margins: clear",
    "run-on": "invasive ductal carcinoma, grade 3, with lymphovascular invasion, and necrosis, "
    "and no necrosis, margins negative, 2 of 10 nodes positive, pN0",
    "all caps": "FINAL DIAGNOSIS: INVASIVE DUCTAL CARCINOMA. TUMOR NECROSIS IS PRESENT. "
    "TUMOR NECROSIS IS NOT SEEN.",
    "numbered parts": "1. Right breast: invasive carcinoma.\n2. Left breast: benign.\n"
    "3. Lymph nodes: 0/5.",
    "flattened table": "Specimen | Diagnosis | Margin\nRight breast | IDC | involved\n"
    "Right breast | IDC | free",
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_report_shapes_give_a_defined_score(text: str, lexicon, rules) -> None:
    s = score_logic(text, extractor=lexicon, nli=rules)
    assert (s.value is None and s.missing_reason) or 0.0 <= s.value < 1.0


@pytest.mark.parametrize(
    "text", ["", "   ", "Das Gewebe zeigt keine Auffälligkeiten.", "The slide is blurred."]
)
def test_nothing_to_compare_is_missing_not_one(text: str, lexicon, rules) -> None:
    s = score_logic(text, extractor=lexicon, nli=rules)
    assert s.value is None and s.missing and "logic not scored" in s.missing_reason
