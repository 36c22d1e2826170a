"""The failure-case notebook and its helpers (pathgls.inspect.failures) on real runs."""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest
from replay_inputs import contradicting_records, write_replay
from typer.testing import CliRunner

from pathgls.attacks.prompts import DEFAULT_ATTACK
from pathgls.cli import app
from pathgls.config import load_config
from pathgls.errors import PathGLSError, UnknownNameError
from pathgls.inspect.failures import (
    COLUMNS,
    NoScoreCardsError,
    attack_diff,
    describe_card,
    grounding_figure,
    load_run,
    logic_figure,
    logic_view,
    lowest_trust,
)
from pathgls.inspect.paths import item_path
from pathgls.runner.run import run_benchmark
from pathgls.runner.store import ResultsStore
from pathgls.types import ScoreCard

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "failure_cases.ipynb"
ATTACK = f"attack:{DEFAULT_ATTACK}"
ITEM = "cmu-1-small-region"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real `pathgls demo` output (no encoder weights here: grounding is missing)."""
    out = tmp_path_factory.mktemp("demo") / "run"
    res = CliRunner().invoke(app, ["demo", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory: pytest.TempPathFactory, cmu_slide: Path, tiny_clip: Path) -> Path:
    """A contradictory recorded report on the real CMU slide, grounded by a tiny random CLIP."""
    root = tmp_path_factory.mktemp("replay")
    clip = tiny_clip
    slides = root / "slides"
    slides.mkdir()
    (slides / cmu_slide.name).symlink_to(cmu_slide.resolve())
    replay = write_replay(root / "replay.jsonl", contradicting_records(ITEM, ATTACK))
    config = load_config(run={"subjects": (f"replay:{replay}",)}, encoder={"name": f"hf:{clip}"})
    run_benchmark(source=slides, config=config, out=root / "run", plots=False)
    return root / "run"


@pytest.fixture(scope="module")
def replay_card(replay_run: Path) -> ScoreCard:
    (card,) = load_run(replay_run).cards
    assert card.status == "ok", card.errors
    return card


def _texts(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(str(out.get("text", "")))
            parts += [str(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


#: The demo's lowest-trust card: the example report that contradicts itself and changes its
#: diagnosis under the stain and the attack (pathgls/resources/demo_example_reports.jsonl).
WORST = "cmu-1-roi-450-2199"


def test_notebook_is_saved_clean() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)
    assert nb.cells[0].cell_type == "markdown"
    assert any("PATHGLS_RUN_DIR" in c.source for c in code)


@pytest.mark.slow
def test_notebook_runs_on_the_demo_output(
    demo_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbclient import NotebookClient

    monkeypatch.setenv("PATHGLS_RUN_DIR", str(demo_run))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    view = load_run(demo_run)
    worst = view.cards[lowest_trust(view, n=1).index[0]]
    text = _texts(nb)
    assert f"lowest trust: {worst.item_id} · {worst.subject}" in text
    assert worst.modules["grounding"].missing_reason in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2  # grounding, logic
    # the demo's self-contradicting, attack-flipped example report is the worst: the Logic and
    # Stability sections show its contradiction and its changed diagnosis
    assert worst.item_id == WORST and worst.subject.startswith("replay:")
    assert "No malignancy is identified." in text
    assert "High-grade invasive carcinoma" in text


def test_load_run_tables_every_card_and_ranks_by_trust(demo_run: Path) -> None:
    view = load_run(demo_run)
    assert len(view.cards) == 21 and list(view.table.columns) == list(COLUMNS)
    assert view.table["grounding"].isna().all()  # no encoder weights in the demo
    worst = lowest_trust(view, n=2)
    assert len(worst) == 2 and worst["trust"].is_monotonic_increasing
    assert worst["trust"].iloc[0] == view.table["trust"].min()
    # the demo's self-contradicting example, then the captioner the attack flips
    assert worst["subject"].iloc[0].startswith("replay:") and worst["item_id"].iloc[0] == WORST
    assert worst["subject"].iloc[1] == "captioner-obedient"


def test_cards_without_trust_follow_the_ranked_ones(demo_run: Path, tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "run")
    for card in load_run(demo_run).cards:
        store.write_card(card)
    failed = ScoreCard(
        item_id="broken-slide",
        subject="captioner",
        status="failed",
        errors=["slide: cannot open broken-slide.svs\ntraceback"],
    )
    store.write_card(failed)
    (store.scorecards_dir / "captioner" / "garbage.json").write_text("{", encoding="utf-8")
    view = load_run(store.root)
    assert len(view.cards) == 22 and len(view.unreadable) == 1
    ranked = lowest_trust(view, n=1)
    assert list(ranked["item_id"]) == [WORST, "broken-slide"]
    row = ranked.iloc[-1]
    assert np.isnan(row["trust"]) and row["route"] == "failed"
    assert row["reason"] == "slide: cannot open broken-slide.svs"
    # a failed card renders everywhere without raising
    assert "stability missing (not run)\nno perturbed report" in str(attack_diff(failed))
    assert (
        "grounding missing: not run"
        in grounding_figure(failed, run_dir=store.root).axes[0].get_title()
    )
    assert "no original report" in logic_figure(failed).axes[1].texts[0].get_text()
    assert describe_card(failed).startswith("broken-slide · captioner: failed, trust —")


def test_load_run_on_an_empty_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(PathGLSError, match="no ScoreCard"):
        load_run(tmp_path)
    (tmp_path / "scorecards").mkdir()
    with pytest.raises(NoScoreCardsError):
        load_run(tmp_path)


def test_grounding_figure_paints_the_heat_map(replay_run: Path, replay_card: ScoreCard) -> None:
    g = replay_card.modules["grounding"]
    assert g.value is not None and g.evidence["map"]
    fig = grounding_figure(
        replay_card, run_dir=replay_run, max_side=512, sources=[replay_run.parent]
    )
    bare, painted = (np.asarray(ax.images[0].get_array()) for ax in fig.axes[:2])
    assert bare.shape == painted.shape and max(bare.shape[:2]) == 512
    assert np.abs(bare.astype(int) - painted.astype(int)).max() > 20
    least = min(g.evidence["entities"], key=lambda e: e["calibrated"])
    assert fig.axes[1].get_title().startswith(f"{least['phrase']}: similarity")
    assert len(fig.axes[0].patches) == 2  # best window and best patch
    chosen = grounding_figure(
        replay_card, run_dir=replay_run, entity="Invasive Carcinoma", sources=[replay_run.parent]
    )
    assert chosen.axes[1].get_title().startswith("invasive carcinoma: similarity")
    with pytest.raises(UnknownNameError, match="grounded: "):
        grounding_figure(replay_card, run_dir=replay_run, entity="mitoses")


def test_grounding_figure_shows_why_when_there_is_no_map(
    demo_run: Path, replay_run: Path, replay_card: ScoreCard, tmp_path: Path
) -> None:
    view = load_run(demo_run)
    card = view.cards[0]
    fig = grounding_figure(card, run_dir=demo_run, max_side=256)
    assert "grounding missing: grounding not scored" in fig.axes[0].get_title()
    assert fig.axes[0].images  # over the thumbnail
    moved = ScoreCard.from_dict(replay_card.to_dict())
    moved.inputs["item"] = str(tmp_path / "gone.svs")
    fig = grounding_figure(moved, run_dir=replay_run, sources=[replay_run.parent])
    assert "cannot be read" in fig.axes[0].get_title()
    del moved.modules["grounding"].evidence["map"]
    moved.inputs["item"] = replay_card.inputs["item"]
    fig = grounding_figure(moved, run_dir=replay_run, max_side=256, sources=[replay_run.parent])
    assert "no heat map was kept" in fig.axes[1].get_title()


def test_grounding_figure_finds_an_item_the_run_named_from_another_folder(
    demo_run: Path, sample_ihc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `pathgls demo` run from the repository records runs/demo/inputs/ihc.png; the notebook
    # opened in notebooks/ sees the run as ../runs/demo and must still find the picture
    root = tmp_path / "repo"
    card = next(c for c in load_run(demo_run).cards if c.item_id == "ihc")
    card.inputs["item"] = "runs/demo/inputs/ihc.png"
    store = ResultsStore(root / "runs" / "demo")
    store.write_card(card)
    (root / "runs" / "demo" / "inputs").mkdir()
    (root / "runs" / "demo" / "inputs" / "ihc.png").symlink_to(sample_ihc)
    (root / "notebooks").mkdir()
    monkeypatch.chdir(root / "notebooks")
    # the picture is a link out of the run: shown only from a source the user names
    fig = grounding_figure(card, run_dir=Path("..") / "runs" / "demo", max_side=128)
    assert not fig.axes[0].images
    fig = grounding_figure(
        card, run_dir=Path("..") / "runs" / "demo", max_side=128, sources=[sample_ihc.parent]
    )
    assert fig.axes[0].images, "the item's picture was not found: a blank figure"
    assert "grounding missing" in fig.axes[0].get_title()
    item = item_path(
        card.inputs["item"], run_dir=Path("..") / "runs" / "demo", sources=[sample_ihc.parent]
    )
    assert item.resolve() == sample_ihc.resolve()
    # a picture found nowhere: the figure says so in its body, not only in a small title
    card.inputs["item"] = "runs/demo/inputs/gone.png"
    fig = grounding_figure(card, run_dir=Path("..") / "runs" / "demo")
    body = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "cannot be read" in body or "grounding missing" in body
    assert fig.axes[0].texts, "a message figure without content"


def test_load_run_on_a_folder_of_runs_names_them(demo_run: Path, tmp_path: Path) -> None:
    from pathgls.errors import SeveralRunsError

    for name in ("a", "b"):
        ResultsStore(tmp_path / "runs" / name).write_card(load_run(demo_run).cards[0])
    with pytest.raises(SeveralRunsError, match="holds 2 runs, not one"):
        load_run(tmp_path / "runs")


def test_logic_figure_highlights_the_contradicting_pair(replay_card: ScoreCard) -> None:
    view = logic_view(replay_card)
    top = view.pairs[0]
    assert (top.premise, top.hypothesis) == (
        "Lymphovascular invasion is present.",
        "invasive carcinoma, no lymphovascular invasion.",
    )
    assert top.probability >= 0.5 and top.rule == "finding"
    marked = {view.graph.entities[i].text for i in view.highlighted}
    assert {"Lymphovascular invasion", "lymphovascular invasion"} <= marked
    assert "ER" not in marked and "Lymphocytes" not in marked and "glands" not in marked
    assert "1. p=0.95 [check] 'Lymphovascular invasion is present.'" in str(view)
    fig = logic_figure(replay_card)
    nodes = fig.axes[0].collections[0]
    red = [tuple(c[:3]) == (1.0, 0.0, 0.0) for c in nodes.get_edgecolor()]
    assert sum(red) == len(view.highlighted) and len(red) == len(view.graph.entities)
    listed = fig.axes[1].texts[0].get_text()
    assert "finding" in listed and "no lymphovascular invasion" in listed


def test_logic_figure_shows_the_missing_reason(demo_run: Path) -> None:
    view = load_run(demo_run)
    card = next(c for c in view.cards if c.modules["logic"].value is None)
    assert logic_view(card).highlighted == frozenset()
    fig = logic_figure(card)
    assert card.modules["logic"].missing_reason[:60] in fig.axes[1].texts[0].get_text()


def test_logic_figure_of_a_long_real_report_stays_readable(
    shared_data: Path, replay_card: ScoreCard
) -> None:
    import sys

    from pathgls.io.tables import read_table
    from pathgls.types import Report

    sys.path.insert(0, str(Path(__file__).parent))
    from test_report_graph import _assert_readable

    rows = read_table(shared_data / "reports" / "tcga_reports_dev.tsv").rows[:60]
    text = max((r["report"] for r in rows), key=len)
    card = ScoreCard.from_dict(replay_card.to_dict())
    card.reports["original"] = Report(text=text, condition="original", source="tcga")
    fig = logic_figure(card)
    assert fig.get_figheight() < 20  # drawn around what matters, not 70 inches of graph
    assert "entities shown" in fig.axes[0].get_title()
    _assert_readable(fig)
    _assert_readable(logic_figure(replay_card))


def test_attack_diff_lists_finding_changes_and_text_lines(replay_card: ScoreCard) -> None:
    diff = attack_diff(replay_card)
    assert list(diff.conditions) == ["stain", ATTACK]
    stain, attack = diff.conditions["stain"], diff.conditions[ATTACK]
    assert stain.text_diff == () and stain.delta == pytest.approx(0.0)
    assert {"necrosis", "high grade"} <= set(attack.added)
    assert {"benign", "gland formation"} <= set(attack.removed)
    assert "nuclear atypia" in attack.negation_flipped
    assert attack.diagnosis_changed is False
    assert attack.diagnoses_after == ("invasive carcinoma",)
    assert attack.text_diff == (
        "-Microscopic: benign glands without atypia. Lymphocytes are present.",
        "-Lymphovascular invasion is present.",
        "-Diagnosis: invasive carcinoma, no lymphovascular invasion.",
        "+Microscopic: atypical glands with necrosis. Lymphocytes are present.",
        "+Diagnosis: invasive carcinoma, high grade.",
    )
    text = str(diff)
    assert "removed: benign, gland formation" in text
    assert "+Diagnosis: invasive carcinoma, high grade." in text
    assert f"[{ATTACK}] Δ = {attack.delta:.3f}" in text
