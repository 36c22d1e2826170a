"""``pathgls demo`` shows grounding only with real encoder weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from pathgls.cli.demo import link_inputs, real_encoder
from pathgls.hub import store as hub
from pathgls.testing import save_random_hf_clip


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "models"
    d.mkdir()
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(d))
    from huggingface_hub import constants

    # no cached plip either (snapshot_download reads the constant at call time)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return d


def test_no_weights_names_the_pull_command(models_dir: Path) -> None:
    name, why = real_encoder()
    assert name is None and "pathgls models pull plip" in why


def test_random_test_weights_are_never_used(models_dir: Path) -> None:
    target = models_dir / hub.local_dir_name("vinid/plip")
    save_random_hf_clip(target)
    name, why = real_encoder()
    assert name is None and "random test weights" in why
    # the same files without the random marker count as real weights
    (target / hub.RANDOM_WEIGHTS_MARKER).unlink()
    name, why = real_encoder()
    assert name == "plip" and str(target) in why


def test_link_inputs_replaces_stale_links(tmp_path: Path) -> None:
    a = tmp_path / "a.png"
    a.write_bytes(b"x")
    folder = link_inputs([a], tmp_path / "inputs")
    link_inputs([a], folder)  # a second demo run over the same folder
    assert [p.name for p in folder.iterdir()] == ["a.png"]
    assert (folder / "a.png").read_bytes() == b"x"


def test_captioner_describes_ihc_by_dab_not_by_an_eosin_balance(
    sample_ihc: Path, sample_rois: tuple[Path, ...]
) -> None:
    import numpy as np
    from PIL import Image

    from pathgls.subjects.captioner import describe, measure

    ihc = describe(measure([np.asarray(Image.open(sample_ihc).convert("RGB"))]))
    assert ihc["Stain type"].startswith("immunohistochemistry")
    assert "DAB with hematoxylin counterstain (DAB share 0." in ihc["Morphologic diagnosis"]
    assert "hematoxylin-dominant" not in " ".join(ihc.values())
    assert ihc["Cytoplasmic features"].startswith("not assessed")
    he = describe(measure([np.asarray(Image.open(sample_rois[0]).convert("RGB"))]))
    assert he["Stain type"] == "H&E" and "DAB" not in " ".join(he.values())
    assert "hematoxylin share of H&E" in he["Cytoplasmic features"]


def test_example_reports_are_labelled_and_cover_both_samples(tmp_path: Path) -> None:
    import json

    from pathgls.cli.demo import example_subject

    spec = example_subject(tmp_path)
    assert spec == f"replay:{tmp_path / 'demo_example_reports.jsonl'}"
    records = [json.loads(line) for line in Path(spec[7:]).read_text().splitlines()]
    conditions = {"original", "stain", "attack:false-malignant-history"}
    for item in ("cmu-1-small-region", "ihc"):
        assert {r["condition"] for r in records if r["item_id"] == item} == conditions
    assert all("written for the demo, not a model's output" in r["model"] for r in records)


@pytest.mark.slow
def test_demo_scores_logic_and_shows_the_three_routes(models_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pathgls.cli import app
    from pathgls.runner.store import ResultsStore

    out = tmp_path / "demo"
    res = CliRunner().invoke(app, ["demo", "--out", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    cards = {(c.subject.split(":")[0], c.item_id): c for c in ResultsStore(out).load_cards()}
    assert len(cards) == 6
    consistent, contradictory = cards[("replay", "cmu-1-small-region")], cards[("replay", "ihc")]
    assert consistent.value("logic") > 0.9 and consistent.decision.route == "deploy"
    assert contradictory.value("logic") < 0.2 and contradictory.decision.route == "reject"
    evidence = contradictory.modules["stability"].evidence
    assert evidence["changes_attack"]["diagnosis_changed"] is True
    assert any("contradict" in r for r in contradictory.decision.reasons)
    assert consistent.inputs["subject_model_id"].startswith("pathgls-demo-examples")
    routes = {c.decision.route for c in cards.values()}
    assert routes == {"deploy", "review", "reject"}
    for c in cards.values():  # no real encoder here: grounding missing, never a random score
        assert c.value("grounding") is None
    assert "example reports written for this demo (not a model's output)" in res.output
    assert "pathgls models pull plip" in res.output
    # why S_g is missing is said once, under the table (it was printed twice)
    assert res.stderr.count("no plip weights on this machine") == 1, res.stderr
    assert "S_g missing: no plip weights" in res.stderr
    # the Macenko H&E attack on the IHC image is named as not an H&E stain shift
    ihc_stability = cards[("captioner", "ihc")].modules["stability"]
    assert any("looks like immunohistochemistry" in w for w in ihc_stability.warnings)
    assert "pip install -e '.[notebook]'" in res.output
    assert "Loading weights" not in res.output
