"""Tests of pathgls.runner.summary: bootstrap CIs, the per-subject table, files, plots, console."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from rich.console import Console
from scipy import stats

from pathgls.errors import ConfigError, PathGLSError
from pathgls.runner.summary import (
    METRICS,
    bootstrap_ci,
    plot_modules,
    plot_subjects,
    print_summary,
    summarise,
    write_summary,
)
from pathgls.types import GateDecision, ModuleScore, ScoreCard

EXPECTED_COLUMNS = (
    [
        "subject",
        "n_items",
        "n_ok",
        "n_partial",
        "n_failed",
        "deploy",
        "review",
        "reject",
    ]
    + [f"{m}_{s}" for m in (*METRICS, "coverage") for s in ("n", "mean", "ci_low", "ci_high")]
    + ["tier"]
    + [f"matched_trust_{s}" for s in ("n", "mean", "ci_low", "ci_high")]
    + ["matched_on", "rank"]
)


def _module(name: str, value: float | None) -> ModuleScore:
    return ModuleScore(name=name, value=value, missing_reason=None if value is not None else "n/a")


def _card(
    item: str,
    subject: str,
    *,
    status: str = "ok",
    trust: float | None = None,
    route: str | None = None,
    **modules: float | None,
) -> ScoreCard:
    card = ScoreCard(
        item_id=item,
        subject=subject,
        modules={k: _module(k, v) for k, v in modules.items()},
        trust=trust,
        decision=GateDecision(route=route) if route else None,  # type: ignore[arg-type]
    )
    # set afterwards: a failed card with a trust score (stray values) can only exist in
    # memory, the reader rejects it, and summarise must still ignore its values
    card.status = status  # type: ignore[assignment]
    return card


@pytest.fixture
def cards() -> list[ScoreCard]:
    """Two subjects; "zeta" is listed first to check the row order."""
    return [
        _card("s1", "zeta", trust=0.8, route="deploy", grounding=0.6, logic=1.0),
        _card("s2", "zeta", status="failed"),
        _card("s1", "captioner", trust=0.2, route="reject", grounding=0.1, logic=None),
        _card("s2", "captioner", trust=0.4, route="review", grounding=0.3, logic=0.5),
        _card("s3", "captioner", status="partial", trust=0.9, route="deploy", grounding=0.5),
        # a failed card with stray values must not contribute any of them
        _card("s4", "captioner", status="failed", trust=0.0, grounding=0.0, logic=0.0),
        _card("s5", "captioner", trust=float("nan"), grounding=float("inf"), stability=0.7),
    ]


# --- bootstrap_ci -------------------------------------------------------------------------


def test_bootstrap_ci_matches_scipy_and_contains_mean() -> None:
    x = np.random.default_rng(42).beta(2.0, 3.0, size=40)
    low, high = bootstrap_ci(x, n_boot=5000, confidence=0.95, seed=0)
    ref = stats.bootstrap(
        (x,),
        np.mean,
        method="percentile",
        confidence_level=0.95,
        n_resamples=20000,
        random_state=0,
    ).confidence_interval
    assert low == pytest.approx(ref.low, abs=0.02)
    assert high == pytest.approx(ref.high, abs=0.02)
    assert low < x.mean() < high
    # the width is that of a real 95% interval: about 2 × 1.96 standard errors
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert high - low == pytest.approx(2 * 1.96 * se, rel=0.2)


def test_bootstrap_ci_deterministic_and_seed_dependent() -> None:
    x = np.linspace(0.0, 1.0, 25) ** 2
    a = bootstrap_ci(x, seed=3)
    assert a == bootstrap_ci(list(x), seed=3)
    assert a != bootstrap_ci(x, seed=4)


def test_bootstrap_ci_narrower_at_lower_confidence() -> None:
    x = np.random.default_rng(1).uniform(size=30)
    lo90, hi90 = bootstrap_ci(x, confidence=0.9)
    lo99, hi99 = bootstrap_ci(x, confidence=0.99)
    assert lo99 < lo90 < hi90 < hi99


def test_bootstrap_ci_blocks_large_inputs() -> None:
    # 2000 × 5000 indices exceed the block limit: resampling goes in blocks, result still sane.
    x = np.random.default_rng(2).normal(0.5, 0.1, size=5000)
    low, high = bootstrap_ci(x, n_boot=2000, seed=0)
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert low < x.mean() < high
    assert high - low == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert (low, high) == bootstrap_ci(x, n_boot=2000, seed=0)


def test_bootstrap_ci_too_few_values() -> None:
    for values in ([], [0.5], [0.5, float("nan")]):
        low, high = bootstrap_ci(values)
        assert math.isnan(low) and math.isnan(high)


def test_bootstrap_ci_constant_sample() -> None:
    assert bootstrap_ci([0.3] * 10) == pytest.approx((0.3, 0.3))


@pytest.mark.parametrize(
    "kwargs",
    [{"n_boot": 99}, {"n_boot": 0}, {"confidence": 0.0}, {"confidence": 1.0}, {"confidence": 1.5}],
)
def test_bootstrap_ci_rejects_bad_arguments(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        bootstrap_ci([0.1, 0.2, 0.3], **kwargs)


# --- summarise ----------------------------------------------------------------------------


def test_summarise_counts_and_order(cards: list[ScoreCard]) -> None:
    table = summarise(cards, n_boot=500)
    assert list(table.columns) == EXPECTED_COLUMNS
    # best rank first: on s1, the one item both completed, zeta was scored on grounding and
    # logic (70% of the weight), captioner on grounding alone (40%)
    assert list(table["subject"]) == ["zeta", "captioner"]
    assert list(table["rank"]) == [1, 2] and list(table["tier"]) == [1, 2]
    cap = table.iloc[1]
    assert (cap["n_items"], cap["n_ok"], cap["n_partial"], cap["n_failed"]) == (5, 3, 1, 1)
    assert (cap["deploy"], cap["review"], cap["reject"]) == (1, 1, 1)
    zeta = table.iloc[0]
    assert (zeta["n_items"], zeta["n_ok"], zeta["n_partial"], zeta["n_failed"]) == (2, 1, 0, 1)
    assert (zeta["deploy"], zeta["review"], zeta["reject"]) == (1, 0, 0)


def test_summarise_metric_values(cards: list[ScoreCard]) -> None:
    table = summarise(cards, n_boot=500).set_index("subject")
    cap = table.loc["captioner"]
    # trust: 0.2, 0.4, 0.9 (NaN skipped, failed card's 0.0 excluded)
    assert cap["trust_n"] == 3
    assert cap["trust_mean"] == pytest.approx(0.5)
    assert 0.2 <= cap["trust_ci_low"] <= 0.5 <= cap["trust_ci_high"] <= 0.9
    # grounding: 0.1, 0.3, 0.5 (inf skipped)
    assert cap["grounding_n"] == 3
    assert cap["grounding_mean"] == pytest.approx(0.3)
    # logic: a single value (None skipped) -> mean but no interval
    assert cap["logic_n"] == 1
    assert cap["logic_mean"] == pytest.approx(0.5)
    assert math.isnan(cap["logic_ci_low"]) and math.isnan(cap["logic_ci_high"])
    assert cap["stability_n"] == 1 and cap["stability_mean"] == pytest.approx(0.7)
    # hare is missing everywhere
    for subject in ("captioner", "zeta"):
        row = table.loc[subject]
        assert row["hare_n"] == 0
        assert math.isnan(row["hare_mean"])
        assert math.isnan(row["hare_ci_low"]) and math.isnan(row["hare_ci_high"])
    zeta = table.loc["zeta"]
    assert (zeta["trust_n"], zeta["trust_mean"]) == (1, pytest.approx(0.8))
    # zeta's one trust (0.8) lies inside captioner's CI, but on s1 (the item both completed)
    # zeta was scored on more of the weight: rank 1 and 2 in two coverage tiers
    assert cap["trust_ci_high"] >= 0.8 and (cap["rank"], zeta["rank"]) == (2, 1)
    assert zeta["stability_n"] == 0
    # coverage over each subject's completed items: s1 0.4, s2 0.7, s3 0.4, s5 0.3
    assert cap["coverage_n"] == 4 and cap["coverage_mean"] == pytest.approx(0.45)
    assert (zeta["coverage_n"], zeta["coverage_mean"]) == (1, pytest.approx(0.7))
    # each tier's matched trust: its own modules on s1 (one subject per tier)
    assert zeta["matched_on"] == "grounding+logic (1 item)"
    assert zeta["matched_trust_mean"] == pytest.approx((0.4 * 0.6 + 0.3 * 1.0) / 0.7)
    assert cap["matched_on"] == "grounding (1 item)"
    assert cap["matched_trust_mean"] == pytest.approx(0.1)


def test_summarise_ci_matches_bootstrap_ci(cards: list[ScoreCard]) -> None:
    table = summarise(cards, n_boot=300, seed=7).set_index("subject")
    low, high = bootstrap_ci([0.2, 0.4, 0.9], n_boot=300, seed=7)
    assert table.loc["captioner", "trust_ci_low"] == low
    assert table.loc["captioner", "trust_ci_high"] == high
    pd.testing.assert_frame_equal(summarise(cards, n_boot=300, seed=7).set_index("subject"), table)


def test_summarise_empty_and_bad_arguments() -> None:
    table = summarise([])
    assert list(table.columns) == EXPECTED_COLUMNS
    assert len(table) == 0
    with pytest.raises(ConfigError):
        summarise([], n_boot=10)


def test_summarise_accepts_generator(cards: list[ScoreCard]) -> None:
    pd.testing.assert_frame_equal(summarise(iter(cards), n_boot=200), summarise(cards, n_boot=200))


# --- write_summary ------------------------------------------------------------------------


def test_write_summary_round_trips(cards: list[ScoreCard], tmp_path: Path) -> None:
    table = summarise(cards, n_boot=200)
    out = tmp_path / "run"
    paths = write_summary(table, out_dir=out)
    assert paths == {"csv": out / "summary.csv", "parquet": out / "summary.parquet"}
    pd.testing.assert_frame_equal(pd.read_csv(paths["csv"]), table, check_dtype=False)
    pd.testing.assert_frame_equal(pd.read_parquet(paths["parquet"]), table, check_dtype=False)
    assert sorted(p.name for p in out.iterdir()) == ["summary.csv", "summary.parquet"]
    # overwriting works and still leaves no temporary file
    write_summary(table.iloc[:1], out_dir=out)
    assert len(pd.read_parquet(paths["parquet"])) == 1
    assert sorted(p.name for p in out.iterdir()) == ["summary.csv", "summary.parquet"]


def test_without_pyarrow_only_the_csv_is_written(
    cards: list[ScoreCard], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    import logging

    import pathgls.runner.summary as summary

    monkeypatch.setattr(summary, "parquet_available", lambda: False)
    with caplog.at_level(logging.INFO, logger="pathgls.runner.summary"):
        paths = write_summary(summarise(cards, n_boot=200), out_dir=tmp_path)
    assert paths == {"csv": tmp_path / "summary.csv"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.csv"]
    assert "pip install 'pathgls[parquet]'" in caplog.text


def test_write_summary_empty_table(tmp_path: Path) -> None:
    paths = write_summary(summarise([]), out_dir=tmp_path)
    assert list(pd.read_parquet(paths["parquet"]).columns) == EXPECTED_COLUMNS


def test_write_summary_error_names_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(PathGLSError, match="file") as info:
        write_summary(summarise([]), out_dir=blocker / "sub")
    assert isinstance(info.value.__cause__, OSError)


# --- plots --------------------------------------------------------------------------------


def _assert_png(path: Path, *, min_width: int = 200) -> tuple[int, int]:
    assert path.is_file()
    assert path.read_bytes()[:4] == b"\x89PNG"
    with Image.open(path) as im:
        im.load()
        assert im.format == "PNG"
        width, height = im.size
    assert min_width <= width <= 10_000 and 150 <= height <= 5_000
    return width, height


def test_plot_modules(cards: list[ScoreCard], tmp_path: Path) -> None:
    path = plot_modules(cards, path=tmp_path / "plots" / "modules.png")
    assert path == tmp_path / "plots" / "modules.png"
    width, _ = _assert_png(path)
    # four panels (hare has no value) are wider than a single one
    single = plot_modules([_card("a", "x", trust=0.5)], path=tmp_path / "one.png")
    assert width > _assert_png(single)[0]
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_plot_modules_is_reproducible(cards: list[ScoreCard], tmp_path: Path) -> None:
    a = plot_modules(cards, path=tmp_path / "a.png").read_bytes()
    b = plot_modules(cards, path=tmp_path / "b.png").read_bytes()
    assert a == b


def test_plot_modules_nothing_to_plot(tmp_path: Path) -> None:
    _assert_png(plot_modules([], path=tmp_path / "empty.png"))
    failed = [_card("a", "x", status="failed"), _card("b", "y", grounding=None)]
    _assert_png(plot_modules(failed, path=tmp_path / "failed.png"))


def test_plot_subjects(cards: list[ScoreCard], tmp_path: Path) -> None:
    table = summarise(cards, n_boot=200)
    _assert_png(plot_subjects(table, path=tmp_path / "subjects.png"))
    # a subject whose metrics are all missing must not break the plot
    only_failed = summarise([*cards, _card("z", "ghost", status="failed")], n_boot=200)
    _assert_png(plot_subjects(only_failed, path=tmp_path / "ghost.png"))


def test_plots_name_missing_modules_shorten_specs_and_mark_random_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathgls.runner import summary

    figures = []
    monkeypatch.setattr(summary, "_save_figure", lambda fig, path: figures.append(fig) or path)
    spec = "openai:http://a-very-long-host.example.org:8000/v1#llava-med-v1.5-mistral-7b"
    random_card = _card("a", spec, trust=0.6, logic=0.7, stability=0.5, grounding=0.4)
    random_card.modules["grounding"].random_weights = True  # the flag marks it, not a text
    cards = [random_card, _card("a", "captioner", trust=0.5, stability=0.5)]
    note = summary.random_note(cards)
    assert note is not None and note.startswith("RANDOM WEIGHTS: grounding")
    assert summary.random_note(cards[1:]) is None
    plot_subjects(summarise(cards, n_boot=200), path=tmp_path / "s.png", random_note=note)
    plot_modules(cards, path=tmp_path / "m.png")
    subjects_fig, modules_fig = figures
    ax = subjects_fig.axes[0]
    # captioner has no grounding, logic: each slot says "missing"; hare (no subject has it)
    # and report get no group
    assert sum(t.get_text() == "missing" for t in ax.texts) == 2
    assert "hare" not in [t.get_text() for t in ax.get_xticklabels()]
    legend = ax.get_legend()
    assert legend.get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1  # beside the bars
    labels = [t.get_text().split("\n")[0] for t in legend.get_texts()]
    # rank order: the openai subject was scored on all three modules, captioner on stability
    assert labels[1] == "#2 captioner" and all(len(t) <= 44 for t in labels)
    (openai,) = [t for t in labels if t.startswith("#1 openai:")]
    assert openai.endswith("mistral-7b") and "…" in openai
    # the first groups are the numbers the subjects are ranked on
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[:3] == ["coverage\n(tier)", "matched trust\n(ranked within tier)", "full trust"]
    ticks = [t.get_text() for t in modules_fig.axes[0].get_xticklabels()]
    assert all(len(t) <= 24 for t in ticks) and any(t.startswith("openai") for t in ticks)
    for fig in figures:
        assert fig._suptitle is not None and "RANDOM WEIGHTS" in fig._suptitle.get_text()


def test_plot_subjects_empty_and_bad_table(tmp_path: Path) -> None:
    _assert_png(plot_subjects(summarise([]), path=tmp_path / "empty.png"))
    with pytest.raises(ConfigError):
        plot_subjects(pd.DataFrame({"subject": ["a"]}), path=tmp_path / "bad.png")


# --- print_summary ------------------------------------------------------------------------


def test_print_summary(cards: list[ScoreCard]) -> None:
    table = summarise([*cards, _card("q", "[bold]odd", trust=0.25)], n_boot=500)
    console = Console(record=True, width=200)
    print_summary(table, console=console)
    text = console.export_text()
    cap = table.set_index("subject").loc["captioner"]
    expected = f"0.500 [{cap['trust_ci_low']:.2f}, {cap['trust_ci_high']:.2f}] (n=3)"
    assert "captioner" in text and "zeta" in text
    assert expected in text
    # hare is missing for every subject: no column, named in the caption
    assert "missing for every subject: hare" in text
    assert "0.500 (n=1)" in text  # captioner logic: one value, no interval
    assert "[bold]odd" in text  # escaped, shown literally


def test_print_summary_lists_subjects_in_rank_order() -> None:
    full = ("grounding", "logic", "stability")
    cards = [
        _card(f"i{i}", subject, trust=t + i / 1000, **dict.fromkeys(full, t + i / 1000))
        for subject, t in (("middle", 0.5), ("best", 0.95), ("aaa-worst", 0.05))
        for i in range(3)
    ]
    cards.append(_card("i0", "zz-failed", status="failed"))
    table = summarise(cards, n_boot=500)
    console = Console(record=True, width=200)
    print_summary(table.sort_values("subject"), console=console)  # whatever the table's order
    lines = console.export_text().splitlines()
    row_of = {
        s: next(i for i, line in enumerate(lines) if f" {s} " in line) for s in table["subject"]
    }
    shown = sorted(row_of, key=row_of.__getitem__)
    ranks = table.set_index("subject")["rank"]
    assert (ranks["best"], ranks["middle"], ranks["aaa-worst"]) == (1, 2, 3)
    # rank order, not the table's (by name); the unranked subject last
    assert shown == ["best", "middle", "aaa-worst", "zz-failed"]


def test_print_summary_empty() -> None:
    console = Console(record=True, width=200)
    print_summary(summarise([]), console=console)
    assert "trust" in console.export_text()
