"""The report-side component: fused with a reference, absent without one; calibrate searches it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from pathgls.baselines.report_side import (
    REPORT_SIDE,
    DxAlignScorer,
    ReportModels,
    build_report_scorer,
)
from pathgls.config import (
    REPORT_BACKENDS,
    FusionConfig,
    GateConfig,
    ReportConfig,
    load_config,
)
from pathgls.errors import ConfigError
from pathgls.evidence import ReportEvidence
from pathgls.fusion import fuse, gate_scorecard
from pathgls.meta.calibrate import ValidationRow, weight_search
from pathgls.runner.run import run_benchmark
from pathgls.runner.store import ResultsStore
from pathgls.types import ModuleScore, ScoreCard

PATHGLS_ONLY = FusionConfig(weights={"grounding": 0.4, "logic": 0.3, "stability": 0.3})


def _card(**values: float | None) -> ScoreCard:
    modules = {
        n: ModuleScore(name=n, value=v, missing_reason=None if v is not None else "not run")
        for n, v in values.items()
    }
    return ScoreCard(item_id="x", subject="s", modules=modules)


# --- fusion ------------------------------------------------------------------------------------


def test_without_a_reference_trust_and_gate_are_exactly_as_before() -> None:
    card = _card(grounding=0.8, logic=0.6, stability=0.5)
    new = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())
    old = gate_scorecard(card, fusion=PATHGLS_ONLY, gate=GateConfig())
    assert new.trust == pytest.approx(0.4 * 0.8 + 0.3 * 0.6 + 0.3 * 0.5, abs=1e-12)  # 0.65
    assert new.trust == old.trust and new.decision == old.decision
    fused = fuse(modules=card.modules, config=FusionConfig())
    assert fused.absent == ("report",) and "report" not in fused.missing
    # a floor on the report side does not block an item that cannot have one
    floored = GateConfig(deploy=0.6, floors={"report": 0.5})
    assert gate_scorecard(card, fusion=FusionConfig(), gate=floored).decision.route == "deploy"
    # grounding missing: logic + stability carry 0.6 of 1.0, enough coverage to deploy once
    # the image requirement is lifted (by default deploy needs grounding)
    card2 = _card(grounding=None, logic=0.9, stability=0.9)
    no_image = GateConfig(required=[])
    got = gate_scorecard(card2, fusion=FusionConfig(), gate=no_image)
    assert got.trust == pytest.approx(0.9) and got.decision.route == "deploy"
    assert got.decision == gate_scorecard(card2, fusion=PATHGLS_ONLY, gate=no_image).decision


def test_with_a_reference_the_report_side_is_fused_with_its_weight() -> None:
    card = _card(grounding=0.8, logic=0.6, stability=0.5, report=0.9)
    got = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())
    expected = (0.4 * 0.8 + 0.3 * 0.6 + 0.3 * 0.5 + 0.4 * 0.9) / 1.4  # 1.01 / 1.4
    assert got.trust == pytest.approx(expected, abs=1e-12)
    assert got.trust == pytest.approx(0.7214285714285714, abs=1e-12)
    assert got.decision.route == "review"  # 0.721 < 0.75
    named = [r for r in got.decision.reasons if r.startswith("report ")]
    assert named == ["report 0.900 (lowered the trust by 0.029; 29% of the weight)"]
    # a poor report side pulls the same item down: 0.65 without a reference, 0.493 with 0.1
    low = gate_scorecard(
        _card(grounding=0.8, logic=0.6, stability=0.5, report=0.1),
        fusion=FusionConfig(),
        gate=GateConfig(),
    )
    assert low.trust == pytest.approx((0.65 + 0.04) / 1.4, abs=1e-12)
    assert low.decision.route == "reject"


def test_a_reference_whose_report_side_failed_is_missing_not_absent() -> None:
    # grounding and report missing: logic + stability carry 0.6 of 1.4 = 43 % < 60 %
    card = _card(grounding=None, logic=0.9, stability=0.9, report=None)
    got = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())
    fused = fuse(modules=card.modules, config=FusionConfig())
    assert fused.missing == {"grounding": "not run", "report": "not run"} and fused.absent == ()
    assert got.trust == pytest.approx(0.9)
    assert got.decision.route == "review"
    assert any("only 42.9% of the fusion weight" in r for r in got.decision.reasons)


def test_the_gate_reasons_name_the_report_side_and_its_evidence() -> None:
    ev = ReportEvidence(
        backend="dxalign", version="dxalign 1", raw=0.8, candidate_dx="adenocarcinoma"
    )
    card = _card(grounding=0.2, logic=0.3, stability=0.4)
    card.modules["report"] = ModuleScore(name="report", value=0.5, evidence=ev.to_dict())
    got = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())
    assert got.decision.route == "reject"
    text = "\n".join(got.decision.reasons)
    assert (
        "report 0.500 (lowered the trust by 0.143; 29% of the weight): dxalign against the "
        "reference; raw 0.800" in text
    )
    assert "report's diagnosis 'adenocarcinoma'" in text


# --- backends ----------------------------------------------------------------------------------


def test_the_backend_registry_matches_the_config_choices() -> None:
    assert REPORT_SIDE.names() == tuple(sorted(REPORT_BACKENDS))
    with pytest.raises(ConfigError, match="backend must be one of dxalign, hare"):
        ReportConfig(backend="bleu")
    with pytest.raises(ConfigError, match="needs HARE's models"):
        build_report_scorer(
            config=ReportConfig(backend="hare"), models=ReportModels(extractor=None, embedder=None)
        )


@pytest.fixture(scope="module")
def dxalign() -> DxAlignScorer:
    from pathgls.text import build_extractor
    from pathgls.text.embedders import build_embedder

    scorer = build_report_scorer(
        config=ReportConfig(),
        models=ReportModels(
            extractor=build_extractor("lexicon"), embedder=build_embedder("minilm")
        ),
    )
    assert isinstance(scorer, DxAlignScorer)
    return scorer


def test_dxalign_backend_maps_dxalign_to_unit_range(dxalign: DxAlignScorer) -> None:
    # (raw − 0.36) / (1.1 − 0.36), clipped
    assert dxalign.calibrate(0.36) == 0.0 and dxalign.calibrate(1.1) == pytest.approx(1.0)
    assert dxalign.calibrate(0.73) == pytest.approx(0.5) and dxalign.calibrate(-0.2) == 0.0


@pytest.mark.slow
def test_dxalign_backend_on_expert_pairs(dxalign: DxAlignScorer, shared_data: Path) -> None:
    with open(shared_data / "expert_scores" / "hare_expert_dev.tsv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    # the first 12 pairs the pathologists scored ≥ 3 and the first 12 they scored 0, in file order
    right_rows = [r for r in rows if float(r["expert_score"]) >= 3][:12]
    wrong_rows = [r for r in rows if float(r["expert_score"]) == 0][:12]
    scored = []
    for r in (*right_rows, *wrong_rows):
        m = dxalign.score(reference=r["reference"], candidate=r["candidate"])
        scored.append((float(r["expert_score"]), m))
    for _, m in scored:
        ev = ReportEvidence.from_dict(m.evidence)
        assert ev.backend == "dxalign" and ev.version.startswith("dxalign 1 (behaviour weight")
        assert "minilm" in ev.version.lower()
        assert m.value == pytest.approx(dxalign.calibrate(ev.raw)) and 0.0 <= m.value <= 1.0
    right = [m.value for e, m in scored if e >= 3]
    wrong = [m.value for e, m in scored if e == 0]
    assert len(right) == len(wrong) == 12
    assert np.mean(right) > np.mean(wrong) + 0.1  # the pathologists' right diagnoses score higher
    empty = dxalign.score(reference="  ", candidate=rows[0]["candidate"])
    assert empty.value is None and empty.missing_reason == "the reference report is empty"


def test_hare_backend_scores_in_unit_range_and_names_its_models() -> None:
    from pathgls.hare.models import build_hare_models

    models = ReportModels(extractor=None, embedder=None, hare=build_hare_models())
    scorer = build_report_scorer(config=ReportConfig(backend="hare"), models=models)
    ref = "Diagnosis: invasive ductal carcinoma of the left breast, grade 2."
    same = scorer.score(reference=ref, candidate=ref)
    other = scorer.score(reference=ref, candidate="Benign colonic mucosa. No dysplasia.")
    ev = ReportEvidence.from_dict(same.evidence)
    assert ev.backend == "hare" and "ner lexicon" in ev.version and "relations graph" in ev.version
    assert same.value == pytest.approx(ev.raw) and same.value == pytest.approx(1.0)
    assert 0.0 <= other.value < 0.5
    assert ev.entity_f1 == pytest.approx(1.0)


# --- calibrate ---------------------------------------------------------------------------------


def test_calibrate_finds_a_planted_report_weight() -> None:
    rng = np.random.default_rng(7)
    planted = {"grounding": 0.2, "logic": 0.1, "stability": 0.1, "report": 0.6}
    rows = []
    for i in range(300):
        s = {m: float(rng.uniform()) for m in planted}
        if i % 3 == 0:  # no reference: the label follows the renormalised rest
            s["report"] = None
        used = {m: w for m, w in planted.items() if s[m] is not None}
        label = sum(w * s[m] for m, w in used.items()) / sum(used.values())
        rows.append(ValidationRow(f"r{i}", s, label))
    res = weight_search(rows=rows, step=0.1)
    assert res.weights == planted
    assert res.spearman == pytest.approx(1.0)
    assert res.default_spearman < 0.99  # the defaults do not explain it
    # the same rows without the report side: it is not searched (nothing to fit it on)
    no_ref = [ValidationRow(r.item_id, {**r.scores, "report": None}, r.label) for r in rows]
    assert set(weight_search(rows=no_ref, step=0.1).weights) == {"grounding", "logic", "stability"}


def test_calibrate_cli_searches_the_report_column(tmp_path: Path) -> None:
    import tomllib

    from typer.testing import CliRunner

    from pathgls.cli import app

    rng = np.random.default_rng(5)
    lines = ["item_id\tgrounding\tlogic\tstability\treport\tlabel"]
    for i in range(120):
        g, lo, st, rep = rng.uniform(size=4)
        has_ref = i % 2 == 0
        label = (
            4 * (0.1 * g + 0.1 * lo + 0.1 * st + 0.7 * rep) / 1.0
            if has_ref
            else 4 * (g + lo + st) / 3
        )
        cell = f"{rep:.4f}" if has_ref else ""
        lines.append(f"it{i}\t{g:.4f}\t{lo:.4f}\t{st:.4f}\t{cell}\t{label:.4f}")
    table = tmp_path / "val.tsv"
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "fusion.toml"
    res = CliRunner().invoke(app, ["calibrate", str(table), "--step", "0.1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    weights = tomllib.loads(out.read_text(encoding="utf-8"))["fusion"]["weights"]
    assert weights == {"grounding": 0.1, "logic": 0.1, "stability": 0.1, "report": 0.7}


# --- a run with and without references ---------------------------------------------------------


@pytest.mark.slow
def test_a_run_fuses_the_report_side_only_for_items_with_a_reference(
    tmp_path: Path, tiles_dir: Path
) -> None:
    rois = [
        tiles_dir / "tissue-level0-7352-11762-7864-12274.png",
        tiles_dir / "high-nuclei-score-level0.png",
    ]
    src = tmp_path / "slides"
    src.mkdir()
    for r in rois:
        (src / r.name).symlink_to(r)
    report = "Microscopic: atypical glands infiltrating the stroma.\nDiagnosis: adenocarcinoma."
    records = [
        {"item_id": r.stem, "condition": c, "report": report}
        for r in rois
        for c in ("original", "stain", "attack:false-malignant-history")
    ]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("\n".join(json.dumps(r) for r in records))
    refs = tmp_path / "refs.tsv"
    refs.write_text(f"item_id\treference\n{rois[0].stem}\tColon, biopsy: adenocarcinoma.\n")
    config = load_config(run={"subjects": (f"replay:{replay}",), "hare": False})
    out = tmp_path / "run"
    run_benchmark(source=src, config=config, out=out, references=refs, plots=False)
    cards = {c.item_id: c for c in ResultsStore(out).load_cards()}
    with_ref, without = cards[rois[0].stem], cards[rois[1].stem]
    assert "report" not in without.modules
    pathgls_only = fuse(modules=without.modules, config=PATHGLS_ONLY)
    assert without.trust == pytest.approx(pathgls_only.trust, abs=1e-12)
    rep = with_ref.modules["report"]
    ev = ReportEvidence.from_dict(rep.evidence)
    assert ev.backend == "dxalign" and ev.candidate_dx == "adenocarcinoma"
    assert with_ref.inputs["models"]["report"] == {"backend": "dxalign", "version": ev.version}
    grounding, logic, stability = (with_ref.value(m) for m in ("grounding", "logic", "stability"))
    assert grounding is None  # no encoder
    expected = (0.3 * logic + 0.3 * stability + 0.4 * rep.value) / 1.0
    assert with_ref.trust == pytest.approx(expected, abs=1e-12)
    assert any(
        r.startswith("report ") and "40% of the weight" in r for r in with_ref.decision.reasons
    )
