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


def test_example_reports_are_labelled_and_cover_every_demo_item(tmp_path: Path) -> None:
    import json

    from pathgls.cli.demo import DEMO_CROPS, crop_name, example_labels, example_subject

    spec = example_subject(tmp_path)
    assert spec == f"replay:{tmp_path / 'demo_example_reports.jsonl'}"
    records = [json.loads(line) for line in Path(spec[7:]).read_text().splitlines()]
    conditions = {"original", "stain", "attack:false-malignant-history"}
    items = ["cmu-1-small-region", "ihc", *(crop_name(x, y) for x, y in DEMO_CROPS)]
    assert len(items) >= 6  # enough for `pathgls compare` (5 shared items) to run
    for item in items:
        assert {r["condition"] for r in records if r["item_id"] == item} == conditions, item
    assert {r["item_id"] for r in records} == set(items)
    assert all("written for the demo, not a model's output" in r["model"] for r in records)
    labels = example_labels(Path(spec[7:]))
    assert sum(len(v) for v in labels.values()) == len(items)  # each item says what it shows
    # the example reports describe their images: skin on the CMU-1 slide and its crops,
    # colonic glands on the IHC image — except the one planted about the wrong tissue
    for r in records:
        if r["condition"] != "original":
            continue
        text = r["report"].lower()
        if r["item_id"] == "ihc":
            assert "colonic" in text and "breast" not in text
        elif "wrong tissue" in r["example"]:
            assert "breast" in text
        else:
            assert "squamous" in text or "skin" in text or "epiderm" in text, r["item_id"]
            assert "breast" not in text and "colon" not in text


def test_demo_crops_are_real_tissue_of_the_sample_slide(sample_slide: Path, tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    from pathgls.cli.demo import CROP_SIDE, DEMO_CROPS, crop_name, write_crops
    from pathgls.subjects.captioner import measure

    paths = write_crops(sample_slide, tmp_path)
    assert [p.name for p in paths] == [f"{crop_name(x, y)}.png" for x, y in DEMO_CROPS]
    arrays = [np.asarray(Image.open(p).convert("RGB")) for p in paths]
    for p, rgb in zip(paths, arrays, strict=True):
        assert rgb.shape == (CROP_SIDE, CROP_SIDE, 3)
        assert measure([rgb]).tissue_fraction > 0.3, p.name  # tissue, not glass
    # five different fields, and written again identically
    assert len({a.tobytes() for a in arrays}) == len(arrays)
    again = write_crops(sample_slide, tmp_path)
    assert [
        np.array_equal(np.asarray(Image.open(p).convert("RGB")), a)
        for p, a in zip(again, arrays, strict=True)
    ] == [True] * len(arrays)


# --- a demo run, and what the docs say about it ---------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
#: Where statements about the demo may live: the README and every page under docs/.
STATEMENT_FILES = ("README.md", "docs/*.md")


def statement_tables(marker: str) -> list[tuple[str, list[dict[str, str]]]]:
    """Every markdown table between ``<!-- marker -->`` and ``<!-- /marker -->`` in the README
    and docs/, as ``(file, rows)``, each row a dict by header."""
    import re

    pattern = re.compile(
        rf"<!-- {re.escape(marker)} -->\s*\n(.*?)<!-- /{re.escape(marker)} -->", re.S
    )
    found = []
    for glob in STATEMENT_FILES:
        for path in sorted(ROOT.glob(glob)):
            for m in pattern.finditer(path.read_text(encoding="utf-8")):
                lines = [ln.strip() for ln in m.group(1).splitlines() if ln.strip().startswith("|")]
                cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
                header, body = cells[0], cells[2:]  # cells[1] is the |---| line
                found.append(
                    (
                        path.relative_to(ROOT).as_posix(),
                        [dict(zip(header, r, strict=True)) for r in body],
                    )
                )
    return found


def _subject_name(subject: str) -> str:
    """The demo's subjects as the docs name them."""
    return "demo examples" if subject.startswith("replay:") else subject


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One `pathgls demo` run (no encoder weights: grounding is missing, as in CI)."""
    from huggingface_hub import constants
    from typer.testing import CliRunner

    from pathgls.cli import app

    tmp = tmp_path_factory.mktemp("demo")
    models = tmp / "models"
    models.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATHGLS_MODELS_DIR", str(models))
        mp.setattr(constants, "HF_HUB_CACHE", str(tmp / "hf-cache"))
        mp.setenv("HF_HUB_OFFLINE", "1")
        out = tmp / "demo"
        res = CliRunner().invoke(app, ["demo", "--out", str(out)], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    return out, res.output


@pytest.mark.slow
def test_demo_scores_logic_and_gates_without_the_image(demo_run: tuple[Path, str]) -> None:
    from pathgls.runner.store import ResultsStore

    out, output = demo_run
    cards = {(c.subject.split(":")[0], c.item_id): c for c in ResultsStore(out).load_cards()}
    assert len(cards) == 3 * 7
    consistent = cards[("replay", "cmu-1-small-region")]
    contradictory = cards[("replay", "cmu-1-roi-450-2199")]
    wrong_tissue = cards[("replay", "cmu-1-roi-650-1750")]
    assert consistent.value("logic") > 0.9 and consistent.trust > 0.75
    # deploy-level trust, but never checked against the image: review, and the reason says so
    for card in (consistent, wrong_tissue):
        assert card.decision.route == "review"
        assert "deploy needs grounding scored" in card.decision.reasons[0]
        assert "pathgls models pull plip" in card.decision.reasons[0]
    assert contradictory.value("logic") < 0.2 and contradictory.decision.route == "reject"
    evidence = contradictory.modules["stability"].evidence
    assert evidence["changes_attack"]["diagnosis_changed"] is True
    assert contradictory.decision.reasons[1].startswith("logic ")  # it lowered the trust most
    assert "contradict" in contradictory.decision.reasons[1]
    assert consistent.inputs["subject_model_id"].startswith("pathgls-demo-examples")
    for c in cards.values():  # no real encoder here: grounding missing, never a random score
        assert c.value("grounding") is None
        assert c.decision.route != "deploy"
    assert "example reports written for this demo (not a model's output)" in output
    assert "pathgls models pull plip" in output
    assert "pip install -e '.[notebook]'" in output
    assert f"pathgls compare {out}" in output
    # why S_g is missing is said once, under the table (it was printed twice)
    assert output.count("no plip weights on this machine") == 1, output
    assert "S_g missing: no plip weights" in output
    # the Macenko H&E attack on the IHC image is named as not an H&E stain shift
    ihc_stability = cards[("captioner", "ihc")].modules["stability"]
    assert any("looks like immunohistochemistry" in w for w in ihc_stability.warnings)
    assert "Loading weights" not in output
    assert "no run report" not in output and (out / "report.html").is_file()


@pytest.mark.slow
def test_the_docs_statements_about_the_demo_routes_match_a_demo_run(
    demo_run: tuple[Path, str],
) -> None:
    from pathgls.runner.store import ResultsStore

    out, _ = demo_run
    cards = ResultsStore(out).load_cards()
    tables = statement_tables("demo-routes")
    assert tables, "no <!-- demo-routes --> table in the README or docs/"
    for where, rows in tables:
        said: dict[tuple[str, str], str] = {}
        for row in rows:
            subject = row["subject"]
            mine = [c for c in cards if _subject_name(c.subject) == subject]
            assert mine, f"{where}: no demo subject {subject!r}"
            items = (
                [c.item_id for c in mine]
                if row["items"] == "all"
                else [i.strip() for i in row["items"].split(",")]
            )
            for item in items:
                assert (subject, item) not in said, f"{where}: {subject} · {item} twice"
                said[(subject, item)] = row["route"]
        got = {(_subject_name(c.subject), c.item_id): c.decision.route for c in cards}
        assert said == got, where


@pytest.mark.slow
def test_the_docs_ranking_of_the_demo_matches_a_demo_run(demo_run: tuple[Path, str]) -> None:
    import pandas as pd

    out, _ = demo_run
    table = pd.read_csv(out / "summary.csv")
    got = {_subject_name(s): int(r) for s, r in zip(table["subject"], table["rank"], strict=True)}
    tables = statement_tables("demo-ranking")
    assert tables, "no <!-- demo-ranking --> table in the README or docs/"
    for where, rows in tables:
        assert {r["subject"]: int(r["rank"]) for r in rows} == got, where
    # the silent captioner has the higher full trust, and still ranks below the examples
    by = table.assign(name=[_subject_name(s) for s in table["subject"]]).set_index("name")
    assert by.loc["captioner", "trust_mean"] > by.loc["demo examples", "trust_mean"]
    assert by.loc["captioner", "coverage_mean"] < by.loc["demo examples", "coverage_mean"]


@pytest.mark.slow
def test_the_demo_cards_reach_compare_and_the_report(demo_run: tuple[Path, str]) -> None:
    from typer.testing import CliRunner

    from pathgls.cli import app
    from pathgls.inspect.run_report import report_context

    out, _ = demo_run
    res = CliRunner().invoke(app, ["compare", str(out)], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "compared on stability (7 items)" in res.output
    assert "scored on less of the trust's weight" in res.output
    ctx = report_context(run_dir=out)
    assert len(ctx["comparisons"]) == 3
    assert all(c["refused"] is None and c["n"] == 7 for c in ctx["comparisons"])
    # the gate on the demo run: every module column, the coverage, exit 1 (one reject)
    res = CliRunner().invoke(app, ["gate", str(out)], env={"COLUMNS": "250"})
    assert res.exit_code == 1, res.output
    header = (out / "gate.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == (
        "file,item_id,subject,grounding,logic,stability,report,hare,trust,coverage,route,reasons"
    )
