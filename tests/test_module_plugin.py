"""A score module added by a plugin, without touching pathgls: scored by the real pipeline and
shown by every table, check and page that lists the modules; broken plugins are refused clearly.

The plugin is a package built at test time: a ``toy_mod.py`` and a ``toy_plugin-0.1.dist-info``
declaring it under the entry-point group ``pathgls.score_modules``, put on ``sys.path``.
"""

from __future__ import annotations

import csv
import math
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import FusionConfig, GateConfig, default_weights, load_config
from pathgls.errors import ConfigError, ScoreModuleError
from pathgls.modules import (
    ENTRY_POINT_GROUP,
    SCORE_MODULES,
    module_names,
    refresh_score_modules,
    score_modules,
    scoring_order,
)
from pathgls.types import ScoreCard

SUBJECTS = ("captioner", "captioner-obedient")

TOY_MOD = '''
from pathgls.evidence import ModuleEvidence
from pathgls.modules import ModuleScorer
from pathgls.types import ModuleScore

TOY = ModuleScorer(
    name="toy",
    header="T",
    weight=0.2,
    models=(),
    enable_hint=("a report of words", "`--toy`"),
    evidence=ModuleEvidence,
    score="toy_mod:score",
    order=60,
)
NOT_A_SCORER = {"name": "toy"}
CLASHING = ModuleScorer(
    name="logic", header="L", weight=None, models=(), enable_hint=None,
    evidence=ModuleEvidence, score="toy_mod:score",
)


FAILING = ModuleScorer(
    name="toy_fail", header="F", weight=0.1, models=(), enable_hint=None,
    evidence=ModuleEvidence, score="toy_mod:fail", order=70,
)
WRONG = ModuleScorer(
    name="toy_wrong", header="W", weight=None, models=(), enable_hint=None,
    evidence=ModuleEvidence, score="toy_mod:wrong", order=80,
)
UNIMPORTABLE = ModuleScorer(
    name="toy_gone", header="G", weight=None, models=(), enable_hint=None,
    evidence=ModuleEvidence, score="toy_mod_gone:score", order=90,
)


def fail(ctx):
    raise RuntimeError("the toy backend is down")


def wrong(ctx):
    return {"value": 0.5}


def value(text):
    """Shorter reports score higher: 1 / (1 + words / 10)."""
    return round(1.0 / (1.0 + len(text.split()) / 10.0), 6)


def score(ctx):
    text = ctx.reports["original"].text
    return ModuleScore(name="toy", value=value(text), evidence={"words": len(text.split())})
'''


def _plugin(root: Path, *entry_points: str) -> Path:
    """A package ``toy_mod`` installed (as metadata) under ``root``, with ``entry_points``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "toy_mod.py").write_text(TOY_MOD, encoding="utf-8")
    info = root / "toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = "\n".join(entry_points)
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}\n", encoding="utf-8")
    return root


@pytest.fixture
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The toy plugin on sys.path for one test, the registry read again before and after."""
    root = _plugin(tmp_path_factory.mktemp("plugin") / "site", "toy = toy_mod:TOY")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        refresh_score_modules()
        yield
    import sys

    sys.modules.pop("toy_mod", None)
    refresh_score_modules()


@pytest.fixture(scope="module")
def toy_run(
    tmp_path_factory: pytest.TempPathFactory, sample_rois: tuple[Path, ...]
) -> Iterator[Path]:
    """A real run (two ROIs, two offline subjects) with the toy plugin installed."""
    from pathgls.runner.run import run_benchmark

    base = tmp_path_factory.mktemp("toy-run")
    root = _plugin(base / "site", "toy = toy_mod:TOY")
    src = base / "rois"
    src.mkdir()
    for roi in sample_rois[:2]:
        (src / roi.name).symlink_to(roi.resolve())
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        refresh_score_modules()
        config = load_config(run={"subjects": SUBJECTS})
        run_benchmark(source=src, config=config, out=base / "run", plots=False)
        yield base / "run"
    import sys

    sys.modules.pop("toy_mod", None)
    refresh_score_modules()


def _toy(text: str) -> float:
    return round(1.0 / (1.0 + len(text.split()) / 10.0), 6)


def _cards(run: Path) -> list[ScoreCard]:
    from pathgls.runner.store import ResultsStore

    return sorted(ResultsStore(run).load_cards(), key=lambda c: (c.subject, c.item_id))


def test_without_plugins_the_registry_is_the_built_ins() -> None:
    refresh_score_modules()
    assert score_modules() == SCORE_MODULES  # the order: tests/test_modules.py


def test_the_registry_is_read_when_asked_not_at_import() -> None:
    import subprocess
    import sys

    code = (
        "import pathgls, pathgls.modules as m\n"
        "from typer.testing import CliRunner\n"
        "from pathgls.cli import app\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "assert CliRunner().invoke(app, ['gate', '--help']).exit_code == 0\n"
        "print(m.score_modules.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_the_toy_module_is_fusable_and_gated_once_installed(installed: None) -> None:
    assert module_names()[-1] == "toy" and [m.name for m in scoring_order()][-1] == "toy"
    # a plugin ordered before every built-in still comes after stability
    import dataclasses

    import toy_mod

    from pathgls import modules

    early = dataclasses.replace(toy_mod.TOY, order=0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(modules, "score_modules", lambda: (*SCORE_MODULES, early))
        assert [m.name for m in modules.scoring_order()][:2] == ["stability", "toy"]
    assert default_weights() == {
        "grounding": 0.4,
        "logic": 0.3,
        "stability": 0.3,
        "report": 0.4,
        "toy": 0.2,
    }
    assert FusionConfig().weights["toy"] == 0.2
    assert GateConfig(floors={"toy": 0.5}, required=("toy",)).floors == {"toy": 0.5}
    # a missing required toy names its hint
    from pathgls.fusion import gate_scorecard
    from pathgls.types import ModuleScore

    card = ScoreCard(
        item_id="x",
        subject="s",
        modules={
            "logic": ModuleScore(name="logic", value=0.9),
            "toy": ModuleScore(name="toy", value=None, missing_reason="no words"),
        },
    )
    gated = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig(required=("toy",)))
    assert any("toy needs a report of words (`--toy`)" in r for r in gated.decision.reasons)


def test_a_plugin_module_is_unknown_once_uninstalled() -> None:
    refresh_score_modules()
    with pytest.raises(ConfigError, match="unknown module 'toy'"):
        FusionConfig(weights={"toy": 1.0})


def test_the_toy_module_runs_and_is_shown_everywhere(toy_run: Path, tmp_path: Path) -> None:
    # the plugin is installed for the whole test (the run fixture's is over)
    root = _plugin(tmp_path / "site", "toy = toy_mod:TOY")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        refresh_score_modules()
        try:
            _check_everywhere(toy_run, tmp_path)
        finally:
            import sys

            sys.modules.pop("toy_mod", None)
            refresh_score_modules()


def _check_everywhere(run: Path, tmp_path: Path) -> None:
    cards = _cards(run)
    assert len(cards) == 4 and all(c.status in ("ok", "partial") for c in cards)
    values = {}
    for c in cards:
        # the card: scored last, by the hook, on the original report; timed
        assert list(c.modules)[-1] == "toy" and next(iter(c.modules)) == "stability"
        expected = _toy(c.reports["original"].text)
        assert c.modules["toy"].value == pytest.approx(expected)
        assert c.modules["toy"].evidence == {"words": len(c.reports["original"].text.split())}
        assert c.timings["toy"] >= 0.0
        # fused with its default weight: the trust is the weighted mean with it
        fused = {m: c.value(m) for m in ("grounding", "logic", "stability", "toy")}
        w = {"grounding": 0.4, "logic": 0.3, "stability": 0.3, "toy": 0.2}
        have = {m: v for m, v in fused.items() if v is not None}
        trust = sum(w[m] * v for m, v in have.items()) / sum(w[m] for m in have)
        assert c.trust == pytest.approx(trust, abs=1e-9)
        values[(c.subject, c.item_id)] = expected
    distinct = {v for v in values.values()}
    assert len(distinct) > 1  # the subjects' reports differ, so do their toy values

    # the summary table: its mean and n per subject
    from pathgls.runner.summary import print_summary, summarise

    table = summarise(cards, n_boot=200).set_index("subject")
    for s in SUBJECTS:
        mine = [v for (subj, _), v in values.items() if subj == s]
        assert table.loc[s, "toy_n"] == 2
        assert table.loc[s, "toy_mean"] == pytest.approx(sum(mine) / 2)
    written = (run / "summary.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert "toy_mean" in written  # the run wrote it too
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    print_summary(table.reset_index(), console=Console(file=buf, width=250), compact=False)
    assert "toy" in buf.getvalue()

    # the gate: CSV column and console header
    out_csv = tmp_path / "gate.csv"
    res = CliRunner().invoke(
        app,
        ["gate", str(run), "--csv", str(out_csv)],
        env={"COLUMNS": "250", "PATHGLS_LAYOUT": "table"},
    )
    assert res.exit_code in (0, 1), res.output
    with out_csv.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [k for k in rows[0]][3:9] == ["grounding", "logic", "stability", "report", "hare", "toy"]
    for r in rows:
        assert r["toy"] == f"{values[(r['subject'], r['item_id'])]:.3f}"
    header = next(line for line in res.output.splitlines() if "S_l" in line)
    assert " T " in header
    assert f"{values[(cards[0].subject, cards[0].item_id)]:.3f}" in res.output
    floor = CliRunner().invoke(
        app, ["gate", str(run), "--floor", "toy=0.99", "--csv", str(out_csv)]
    )
    assert floor.exit_code in (0, 1), floor.output

    # calibrate: the toy module is searched and written with its weight
    labels = tmp_path / "labels.tsv"
    ranked = sorted(values, key=values.__getitem__)  # label: the toy value's rank, 1-4
    labels.write_text(
        "subject\titem_id\tlabel\n"
        + "".join(f"{s}\t{i}\t{ranked.index((s, i)) + 1}\n" for s, i in values),
        encoding="utf-8",
    )
    from pathgls.meta.calibrate import read_labels, rows_from_cards, scored_modules

    got = rows_from_cards(cards=cards, labels=read_labels(labels))
    assert {r.item_id: r.scores["toy"] for r in got.rows} == {
        f"{s}/{i}": pytest.approx(v) for (s, i), v in values.items()
    }
    assert "toy" in scored_modules(got.rows)
    toml_out = tmp_path / "fusion.toml"
    res = CliRunner().invoke(
        app,
        [
            "calibrate",
            str(run),
            "--labels",
            str(labels),
            "--acceptable",
            "3",
            "--review",
            "0.1",
            "--out",
            str(toml_out),
        ],
    )
    assert res.exit_code == 0, res.output
    cfg = tomllib.loads(toml_out.read_text(encoding="utf-8"))
    assert "toy" in cfg["fusion"]["weights"]
    assert math.isclose(sum(cfg["fusion"]["weights"].values()), 1.0, abs_tol=1e-5)

    # compare: the two subjects on the toy module, item by item
    from pathgls.meta.compare import CompareConfig, compare_subjects

    result = compare_subjects(
        cards=cards, metric="toy", config=CompareConfig(min_items=2, n_boot=200)
    )
    (pair,) = result.pairs
    mean = {s: sum(v for (subj, _), v in values.items() if subj == s) / 2 for s in SUBJECTS}
    assert pair.mean_a == pytest.approx(mean[pair.a])
    assert pair.mean_b == pytest.approx(mean[pair.b])
    res = CliRunner().invoke(app, ["compare", str(run), "--module", "toy", "--min-items", "2"])
    assert res.exit_code == 0, res.output
    assert "toy" in res.output

    # the HTML run report: the subject table's column and the cards' values
    from pathgls.inspect.run_report import render_run_report, report_context

    ctx = report_context(run_dir=run)
    assert "toy" in ctx["metrics"]
    for row in ctx["subjects"]:
        mine = [v for (subj, _), v in values.items() if subj == row["subject"]]
        assert row["metrics"]["toy"]["mean"] == f"{sum(mine) / 2:.3f}"
    html = render_run_report(run_dir=run)
    assert "<th>toy</th>" in html

    # the failures table (reference-free modules) has its column
    from pathgls.inspect.failures import load_run

    view = load_run(run)
    assert "toy" in view.table.columns
    for _, r in view.table.iterrows():
        assert r["toy"] == pytest.approx(values[(r["subject"], r["item_id"])])

    # the review page: every card sent to review (deploy needs 1.0) shows its toy value
    from pathgls.inspect.review_page import render_review_page, review_cards

    gate_cfg = tmp_path / "review.toml"
    gate_cfg.write_text("[gate]\ndeploy = 1.0\nreview = 0.0\nrequired = []\n", encoding="utf-8")
    shown = review_cards(run_dir=run, config=gate_cfg)
    assert len(shown) == 4
    for card in shown:
        key = (card["subject"], card["item"])
        assert card["modules"]["toy"] == f"{values[key]:.3f}"
    page = render_review_page(cards=shown, labels={}, title="review", nonce="n")
    for card in shown:
        assert f"<tr><th>toy</th><td>{card['modules']['toy']}</td></tr>" in page


# --- broken plugins ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("toy = toy_mod:NOT_A_SCORER", r"'toy' \(toy_mod:NOT_A_SCORER.*is a dict, not a"),
        ("toy = toy_mod:CLASHING", r"'toy' \(toy_mod:CLASHING.*name 'logic' is a built-in's"),
        ("toy = no_such_module:TOY", r"'toy' \(no_such_module:TOY.*cannot be loaded: Module"),
        ("toy = toy_mod:NOPE", r"'toy' \(toy_mod:NOPE.*cannot be loaded: AttributeError"),
    ],
)
def test_a_broken_plugin_is_refused_naming_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, message: str
) -> None:
    monkeypatch.syspath_prepend(str(_plugin(tmp_path / "site", entry)))
    refresh_score_modules()
    try:
        with pytest.raises(ScoreModuleError, match=message) as info:
            score_modules()
        assert isinstance(info.value, ConfigError)
        assert "pathgls.score_modules" in str(info.value)
        with pytest.raises(ScoreModuleError):  # every reader says so, e.g. a config's check
            FusionConfig(weights={"logic": 1.0})
    finally:
        import sys

        sys.modules.pop("toy_mod", None)
        refresh_score_modules()


def test_two_plugins_of_one_name_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(
        str(_plugin(tmp_path / "site", "toy = toy_mod:TOY", "toy2 = toy_mod:TOY"))
    )
    refresh_score_modules()
    try:
        with pytest.raises(ScoreModuleError, match=r"'toy2'.*also given by entry point 'toy'"):
            score_modules()
    finally:
        import sys

        sys.modules.pop("toy_mod", None)
        refresh_score_modules()


def test_a_hook_that_cannot_be_imported_is_named() -> None:
    from pathgls.evidence import ModuleEvidence
    from pathgls.modules import ModuleScorer

    bad = ModuleScorer(
        name="x",
        header="x",
        weight=None,
        models=(),
        enable_hint=None,
        evidence=ModuleEvidence,
        score="no_such_module:score",
    )
    with pytest.raises(ScoreModuleError, match=r"'x': its score hook 'no_such_module:score'"):
        bad.hook()


def test_a_failing_plugin_costs_its_module_not_the_card(
    tmp_path: Path, sample_rois: tuple[Path, ...]
) -> None:
    """A plugin whose hook raises, returns a dict or cannot be imported: that module is missing
    with the reason (and a card warning); the built-in scores and the toy's are all kept."""
    from pathgls.runner.run import run_benchmark

    entries = (
        "toy = toy_mod:TOY",
        "toy_fail = toy_mod:FAILING",
        "toy_wrong = toy_mod:WRONG",
        "toy_gone = toy_mod:UNIMPORTABLE",
    )
    root = _plugin(tmp_path / "site", *entries)
    src = tmp_path / "rois"
    src.mkdir()
    (src / sample_rois[0].name).symlink_to(sample_rois[0].resolve())
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.syspath_prepend(str(root))
            refresh_score_modules()
            config = load_config(run={"subjects": ["captioner"]})
            run_benchmark(source=src, config=config, out=tmp_path / "run", plots=False)
            (card,) = _cards(tmp_path / "run")
    finally:
        import sys

        sys.modules.pop("toy_mod", None)
        refresh_score_modules()
    assert card.status == "ok" and not card.errors
    assert list(card.modules)[:3] == ["stability", "logic", "grounding"]
    assert card.modules["stability"].value is not None
    assert card.value("toy") == _toy(card.reports["original"].text)
    reasons = {
        "toy_fail": "score module 'toy_fail' failed: RuntimeError: the toy backend is down",
        "toy_wrong": "its hook returned <class 'dict'>, not a ModuleScore named 'toy_wrong'",
        "toy_gone": "its score hook 'toy_mod_gone:score' cannot be imported",
    }
    for name, reason in reasons.items():
        module = card.modules[name]
        assert module.value is None and reason in (module.missing_reason or "")
        assert sum(reason in w for w in card.warnings) == 1
    # the failed module is not invented: the trust fuses what was scored, coverage says so
    assert card.trust is not None and card.value("toy_fail") is None
