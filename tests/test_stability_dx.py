"""The dx Δ: diagnoses, behaviour and key findings compared both ways, and its evidence."""

from __future__ import annotations

import itertools

import pytest

from pathgls.errors import ConfigError
from pathgls.evidence import FindingChanges
from pathgls.stability.delta import StabilityConfig, finding_changes, make_delta, stability_score
from pathgls.stability.dx import ConceptSimilarity, behaviour_delta, dx_delta
from pathgls.text import analyze_report, build_extractor
from pathgls.text.diagnoses import NO_MALIGNANCY, diagnosis_profile

ORIGINAL = (
    "Invasive ductal carcinoma, grade 3. Lymphovascular invasion is present. Margins are free "
    "of tumor. Two of twelve lymph nodes are positive for metastatic carcinoma."
)
REWORDED = (
    "IDC, Nottingham grade 3. LVI identified. All margins are negative. Metastatic carcinoma "
    "in 2/12 lymph nodes."
)
BENIGN_FLIP = ORIGINAL.replace("Invasive ductal carcinoma", "Fibroadenoma")
IN_SITU_FLIP = ORIGINAL.replace("Invasive ductal carcinoma", "Ductal carcinoma in situ")
NODES_NEGATIVE = ORIGINAL.replace(
    "Two of twelve lymph nodes are positive for metastatic carcinoma.",
    "Twelve lymph nodes are negative for metastatic carcinoma.",
)
LVI_ABSENT = ORIGINAL.replace("Lymphovascular invasion is present.", "No lymphovascular invasion.")
MARGIN_INVOLVED = ORIGINAL.replace(
    "Margins are free of tumor.", "Carcinoma is present at the inked margin."
)
NO_DIAGNOSIS = "The slide shows a section of tissue with some cells."


@pytest.fixture(scope="module")
def extractor():
    return build_extractor("lexicon")


@pytest.fixture(scope="module")
def embedder():
    from pathgls.text.embedders import build_embedder

    return build_embedder("minilm")


@pytest.fixture(scope="module")
def delta(embedder):
    return make_delta(StabilityConfig(delta="dx"), embedder=embedder)


def _a(text: str, extractor):
    return analyze_report(text, extractor=extractor)


def test_dx_is_the_default_and_needs_an_embedder() -> None:
    assert StabilityConfig().delta == "dx"
    with pytest.raises(ConfigError, match="dx Δ needs a text embedder"):
        make_delta(StabilityConfig(delta="dx"))
    for bad in ({"dx_behaviour_weight": 1.5}, {"dx_finding_weight": -0.1}):
        with pytest.raises(ConfigError, match="must be in"):
            StabilityConfig(**bad)


def test_the_profile_is_what_the_report_diagnoses(extractor) -> None:
    p = diagnosis_profile(_a(ORIGINAL, extractor))
    # the nodal deposit is a key finding of the primary, not a second diagnosis
    assert p.diagnoses == (("invasive ductal carcinoma", "malignant"),)
    assert p.finding_values() == {
        "grade of invasive ductal carcinoma": {"high"},
        "lymphovascular invasion": {"positive"},
        "margin": {"negative"},
        "metastasis": {"positive"},
    }
    # incidental processes next to a neoplasm are not the diagnosis
    mixed = diagnosis_profile(_a("Adenocarcinoma with fibrosis and hemorrhage.", extractor))
    assert mixed.concepts == ("adenocarcinoma",)
    benign = diagnosis_profile(_a("Benign tissue. No evidence of malignancy.", extractor))
    assert benign.behaviour == "benign_process"
    only_denial = diagnosis_profile(_a("Negative for malignancy.", extractor))
    assert only_denial.diagnoses == ((NO_MALIGNANCY, "benign_process"),)
    assert diagnosis_profile(_a(NO_DIAGNOSIS, extractor)).diagnoses == ()
    # a malignancy denied of the lymph nodes (the report graph's scope) is node status
    nodes = diagnosis_profile(
        _a("Invasive ductal carcinoma. Lymph nodes are negative for malignancy.", extractor)
    )
    assert nodes.finding_values() == {"metastasis": {"negative"}}
    # a history is not a diagnosis of this specimen
    history = _a(
        "Clinical history: history of breast carcinoma. Diagnosis: fibroadenoma.", extractor
    )
    assert diagnosis_profile(history).concepts == ("fibroadenoma",)


def test_rewording_does_not_move_dx(delta, extractor) -> None:
    a, b = _a(ORIGINAL, extractor), _a(REWORDED, extractor)
    assert delta(a, a) == (0.0, "diagnosis")
    d, scope = delta(a, b)
    assert scope == "diagnosis" and d <= 0.05
    ch = finding_changes(a, b)
    assert ch["diagnosis_changed"] is False and ch["key_findings_changed"] == []


def test_a_diagnosis_flip_moves_dx_at_least_half_and_says_what_changed(
    delta, extractor, embedder
) -> None:
    a = _a(ORIGINAL, extractor)
    benign, in_situ = _a(BENIGN_FLIP, extractor), _a(IN_SITU_FLIP, extractor)
    d_benign, d_in_situ = delta(a, benign)[0], delta(a, in_situ)[0]
    # types never match across behaviours (Δ_type = 1); malignant → benign neoplasm is 3 of 4
    # severity steps and crosses the malignant line: ½ + ½ (½ + ½ · ¾)
    assert d_benign == pytest.approx(0.5 + 0.5 * (0.5 + 0.5 * 0.75))
    assert d_in_situ == pytest.approx(0.5 + 0.5 * (0.5 + 0.5 * 0.25))
    r = dx_delta(
        a,
        benign,
        similarity=ConceptSimilarity(embedder),
        fallback=lambda x, y: pytest.fail("no fallback with diagnoses on both sides"),
    )
    assert r.type_delta == 1.0 and r.behaviour_delta == pytest.approx(0.875)
    assert r.changes.added == ("fibroadenoma",) and r.changes.removed == (
        "invasive ductal carcinoma",
    )
    assert (r.changes.behaviour_before, r.changes.behaviour_after) == (
        "malignant",
        "benign_neoplasm",
    )
    assert r.changes.diagnosis_changed and r.changes.findings_changed == ()


@pytest.mark.parametrize(
    ("edited", "change"),
    [
        (NODES_NEGATIVE, "metastasis: positive → negative"),
        (LVI_ABSENT, "lymphovascular invasion: positive → negative"),
        (MARGIN_INVOLVED, "margin: negative → positive"),
        (ORIGINAL.replace("grade 3", "grade 1"), "grade of invasive ductal carcinoma: high → low"),
    ],
)
def test_a_negated_key_finding_moves_dx_half(delta, extractor, edited, change) -> None:
    a, b = _a(ORIGINAL, extractor), _a(edited, extractor)
    assert delta(a, b) == (pytest.approx(0.5), "diagnosis")
    ch = finding_changes(a, b)
    assert ch["key_findings_changed"] == [change] and ch["diagnosis_changed"] is False


def test_dx_is_symmetric_and_bounded(delta, extractor) -> None:
    texts = [ORIGINAL, REWORDED, BENIGN_FLIP, IN_SITU_FLIP, NODES_NEGATIVE, NO_DIAGNOSIS, ""]
    reports = [_a(t, extractor) for t in texts]
    for a, b in itertools.combinations(reports, 2):
        d_ab, d_ba = delta(a, b)[0], delta(b, a)[0]
        assert d_ab == pytest.approx(d_ba, abs=1e-9)
        assert 0.0 <= d_ab <= 1.0


def test_bad_input_has_a_defined_fallback_with_its_reason(delta, extractor, embedder) -> None:
    a, empty, none = _a(ORIGINAL, extractor), _a("", extractor), _a(NO_DIAGNOSIS, extractor)
    assert delta(a, empty) == (1.0, "empty (one report is empty)")
    assert delta(empty, empty) == (0.0, "empty (both reports are empty)")
    calls = []

    def fallback(x, y):
        calls.append((x, y))
        return 0.3, "report"

    r = dx_delta(a, none, similarity=ConceptSimilarity(embedder), fallback=fallback)
    assert calls == [(a, none)] and r.delta == pytest.approx(0.3)
    assert r.scope == "fallback:report (no diagnosis found in the second report)"
    assert r.fallback == "no diagnosis found in the second report" and r.type_delta is None
    r2 = dx_delta(none, none, similarity=ConceptSimilarity(embedder), fallback=fallback)
    assert r2.fallback == "no diagnosis found in either report"
    # the registered backend falls back on the embedding Δ of the same texts
    emb = make_delta(StabilityConfig(delta="embedding"), embedder=embedder)
    d, scope = delta(a, none)
    assert d == pytest.approx(emb(a, none)[0]) and scope.startswith("fallback:report")
    assert behaviour_delta(None, None) == 0.0 and behaviour_delta("malignant", None) == 0.5


def test_stability_evidence_agrees_with_the_number(delta, extractor) -> None:
    orig, reword, flip = (_a(t, extractor) for t in (ORIGINAL, REWORDED, BENIGN_FLIP))
    s = stability_score(original=orig, augmented=reword, attacked=flip, delta=delta)
    ev = s.evidence
    assert ev["delta"] == "dx" and ev["delta_aug"] == 0.0 and ev["delta_attack"] > 0.9
    assert s.value == pytest.approx(1 - 0.5 * ev["delta_attack"])
    aug = FindingChanges.from_dict(ev["changes_aug"])
    att = FindingChanges.from_dict(ev["changes_attack"])
    assert aug.diagnosis_changed is False and aug.diagnoses_added == ()
    assert att.diagnosis_changed is True
    assert att.diagnoses_removed == ("invasive ductal carcinoma",)
    assert (att.behaviour_before, att.behaviour_after) == ("malignant", "benign_neoplasm")
