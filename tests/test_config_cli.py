"""Config files on the command line: a run repeats itself from its own config.toml; options given
on the command line win over the file, options left out never do."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.cli.benchmark import build_run_config
from pathgls.config import load_config, save_config
from pathgls.errors import ConfigError
from pathgls.fusion import fuse
from pathgls.runner.manifest import read_manifest
from pathgls.runner.store import ResultsStore
from pathgls.types import ModuleScore, ScoreCard

SUBJECTS = ("captioner", "captioner-obedient")


@pytest.fixture(scope="module")
def ROIS(sample_rois: tuple[Path, ...]) -> tuple[Path, Path]:
    """Two real H&E ROIs cut from the sample slide (fast: no slide, no bag)."""
    return sample_rois[:2]


def link(folder: Path, *files: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        (folder / f.name).symlink_to(f.resolve())
    return folder


def invoke(*args: object) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.output


def cards(run_dir: Path) -> dict[tuple[str, str], dict]:
    """Every card's JSON without what legitimately differs between runs (timings, paths)."""
    root = str(run_dir.resolve())
    out = {}
    for path in sorted((run_dir / "scorecards").rglob("*.json")):
        text = path.read_text(encoding="utf-8").replace(root, "RUN_DIR")
        data = json.loads(text)
        data.pop("timings")
        out[(data["subject"], data["item_id"])] = data
    return out


def saved_config(run_dir: Path) -> dict:
    return tomllib.loads((run_dir / "config.toml").read_text(encoding="utf-8"))


def test_a_benchmark_repeats_itself_from_its_config_toml(tmp_path: Path, ROIS) -> None:
    src = link(tmp_path / "rois", *ROIS)
    run, again = tmp_path / "run", tmp_path / "again"
    invoke("benchmark", src, *(a for s in SUBJECTS for a in ("--subject", s)), "--out", run)
    # the run directory holds the complete effective config: every section, defaults included
    first = saved_config(run)
    assert first["run"]["subjects"] == list(SUBJECTS)
    assert first["logic"]["top_k_fraction"] == 0.3 and "weights" in first["fusion"]
    assert "name" not in first["encoder"]  # no encoder: None is left out, and loads as None
    manifest = read_manifest(run)
    assert manifest.config["run"]["subjects"] == list(SUBJECTS)
    assert manifest.config["encoder"]["name"] is None
    # the run log says what ran, each card's outcome and how the run ended (it was 0 bytes)
    (log,) = (run / "logs").glob("benchmark-*.log")
    text = log.read_text(encoding="utf-8")
    assert "pathgls " in text.splitlines()[0] and "benchmark" in text.splitlines()[0]
    for roi in ROIS:
        for subject in SUBJECTS:
            assert f"{roi.stem} · {subject}: ok, trust " in text
    assert text.splitlines()[-1].endswith("s") and "benchmark finished in" in text

    invoke("benchmark", src, "--config", run / "config.toml", "--out", again)
    assert saved_config(again) == first
    expected = cards(run)
    assert len(expected) == len(ROIS) * len(SUBJECTS)
    assert cards(again) == expected
    obedient = expected[("captioner-obedient", ROIS[0].stem)]
    assert obedient["modules"]["stability"]["value"] == pytest.approx(0.5)  # real numbers


def test_values_set_in_a_file_are_honoured_and_recorded(tmp_path: Path, ROIS) -> None:
    src = link(tmp_path / "rois", ROIS[0])
    item = ROIS[0].stem
    attack = "false-benign-history"
    original = (
        "Microscopic: sheets of atypical cells with necrosis; no lymphovascular invasion.\n"
        "Diagnosis: benign fibroadenoma. Invasive ductal carcinoma."
    )
    replay = tmp_path / "replay.jsonl"
    replay.write_text(
        "\n".join(
            json.dumps({"item_id": item, "condition": c, "report": original})
            for c in ("original", "stain", f"attack:{attack}")
        )
    )
    subjects = ["captioner", f"replay:{replay}"]
    custom = tmp_path / "custom.toml"
    custom.write_text(
        f"[run]\nsubjects = {json.dumps(subjects)}\nattack = {json.dumps(attack)}\nseed = 3\n"
        "[logic]\ntop_k_fraction = 1.0\n"
        "[fusion.weights]\ngrounding = 0.2\nlogic = 0.1\nstability = 0.7\n"
        "[gate]\ndeploy = 0.7\nrequired = []\n",
        encoding="utf-8",
    )
    run, again = tmp_path / "run", tmp_path / "again"
    invoke("benchmark", src, "--config", custom, "--seed", "5", "--out", run)
    saved = saved_config(run)
    assert saved["run"]["subjects"] == subjects and saved["run"]["attack"] == attack
    assert saved["run"]["seed"] == 5  # the option given wins over the file's 3
    assert saved["logic"]["top_k_fraction"] == 1.0 and saved["gate"]["deploy"] == 0.7
    assert saved["gate"]["required"] == []  # deploy without the image, as the file says
    assert saved["fusion"]["weights"] == {"grounding": 0.2, "logic": 0.1, "stability": 0.7}

    invoke("benchmark", src, "--config", run / "config.toml", "--out", again)
    assert saved_config(again) == saved
    assert cards(again) == cards(run)

    config = load_config(run / "config.toml")
    by_subject = {c.subject: c for c in ResultsStore(again).load_cards()}
    for card in by_subject.values():
        assert card.inputs["attack"] == attack and card.inputs["seed"] == 5
        assert f"attack:{attack}" in card.reports
    # the file's logic.top_k_fraction = 1: K is every pair (the default 0.3 would take fewer)
    logic = by_subject[f"replay:{replay}"].modules["logic"]
    n_pairs = logic.evidence["n_pairs"]
    assert logic.value is not None and math.ceil(0.3 * n_pairs) < n_pairs
    assert logic.evidence["k"] == n_pairs
    # the file's fusion weights made the trust score ...
    replayed = by_subject[f"replay:{replay}"]
    custom_trust = fuse(modules=replayed.modules, config=config.fusion).trust
    default_trust = fuse(modules=replayed.modules, config=load_config().fusion).trust
    assert replayed.trust == pytest.approx(custom_trust)
    assert custom_trust != pytest.approx(default_trust)
    # ... and the gate: stability alone carries 0.7 ≥ min_coverage of the weight and the file
    # requires no module, so the captioner's stable report reaches the file's deploy threshold
    # (default weights and requirements: review)
    plain = by_subject["captioner"]
    assert plain.modules["stability"].value >= 0.7
    assert plain.decision.route == "deploy", plain.decision.reasons


def test_benchmark_options_override_only_what_is_given(tmp_path: Path) -> None:
    f = tmp_path / "run.toml"
    f.write_text(
        '[run]\nsubjects = ["captioner"]\nattack = "leading-question"\nseed = 3\n'
        '[encoder]\nname = "plip"\n[view]\nkind = "montage"\n'
        "[subject]\ntimeout_s = 30.0\nmax_retries = 1\n",
        encoding="utf-8",
    )
    c = build_run_config(config=f)  # no option given: the file, then the defaults
    assert (c.run.subjects, c.run.attack, c.run.seed) == (("captioner",), "leading-question", 3)
    assert (c.encoder.name, c.view.kind, c.models.nli) == ("plip", "montage", "rules")
    assert (c.subject.timeout_s, c.subject.max_retries) == (30.0, 1)
    c = build_run_config(
        config=f,
        subjects=["captioner-obedient", "captioner"],
        seed=0,  # a given value equal to the default still wins over the file
        nli="hf:/models/nli",
        subject_retries=0,
    )
    assert c.run.subjects == ("captioner-obedient", "captioner")  # replaced, not appended
    assert (c.run.seed, c.run.attack, c.models.nli) == (0, "leading-question", "hf:/models/nli")
    assert (c.subject.timeout_s, c.subject.max_retries) == (30.0, 0)
    # --encoder none drops the file's encoder; the file's montage view then cannot run
    with pytest.raises(ConfigError, match="montage view picks patches"):
        build_run_config(config=f, encoder="none")
    c = build_run_config(config=f, encoder="none", view="thumbnail")
    assert c.encoder.name is None and c.view.kind == "thumbnail"
    with pytest.raises(ConfigError, match="at least one subject"):
        build_run_config()
    with pytest.raises(ConfigError, match=r"run\.subjects: captioner given twice"):
        build_run_config(subjects=["captioner", "captioner"])


def test_benchmark_cli_config_errors_exit_two(tmp_path: Path, ROIS) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[logic]\ntop_k_fraction = 3\n", encoding="utf-8")
    out = tmp_path / "o"
    args = ["benchmark", str(ROIS[0]), "--subject", "captioner", "--config", str(bad)]
    res = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert res.exit_code == 2 and "logic.top_k_fraction must be in (0, 1]" in res.output
    assert str(bad) in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, ["benchmark", str(ROIS[0]), "--out", str(out)])
    assert res.exit_code == 2 and "at least one subject" in res.output
    assert not (out / "scorecards").exists()


def test_logic_and_gate_read_the_same_file_format(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text(  # one contradiction (necrosis) among several pairs
        "Microscopic: tumour necrosis is present. Lymphovascular invasion is present.\n"
        "Lymph nodes: metastatic carcinoma in 2 of 14 lymph nodes.\n"
        "Comment: no tumour necrosis. Lymph node metastasis is present.\n"
        "Diagnosis: invasive ductal carcinoma, grade 2. Ductal carcinoma in situ.\n",
        encoding="utf-8",
    )
    default = json.loads(invoke("logic", report, "--json"))
    n_pairs = default["evidence"]["n_pairs"]
    assert default["evidence"]["k"] == math.ceil(0.3 * n_pairs) < n_pairs
    # a complete config file (as a run saves it) with one value changed
    f = save_config(
        load_config(logic={"top_k_fraction": 1.0}, gate={"deploy": 0.65}), tmp_path / "c.toml"
    )
    every = json.loads(invoke("logic", report, "--json", "--config", f))
    assert every["evidence"]["k"] == n_pairs and every["logic"] > default["logic"]

    run = tmp_path / "run"
    modules = {m: ModuleScore(name=m, value=0.7) for m in ("grounding", "logic", "stability")}
    ResultsStore(run).write_card(ScoreCard(item_id="a", subject="s", status="ok", modules=modules))
    assert "0 deploy, 1 review" in invoke("gate", run)  # trust 0.7 < the default 0.75
    assert "1 deploy, 0 review" in invoke("gate", run, "--config", f)
    assert "0 deploy, 1 review" in invoke("gate", run, "--config", f, "--deploy", "0.75")
