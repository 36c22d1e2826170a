"""``pathgls compare RUN``: paired comparison of the subjects of a run.

The statistics are :func:`pathgls.meta.compare.compare_subjects`; this module reads the run's
ScoreCards and prints (or writes as JSON) what it returns.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.errors import NoScoreCardsError, PathGLSError
from pathgls.io.outputs import write_run_text
from pathgls.io.rundirs import check_run_dir
from pathgls.io.sanitize import markup_text as escape

Arg = typer.Argument
Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``compare`` to ``app``."""
    app.command("compare")(compare)


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.0%}"


def _num(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.3f}"


def print_comparison(result: Any, console: Console) -> None:
    """One row per pair (on trust: the matched trust, with the full trust and coverage beside
    it), then what each pair was compared on and its items of largest disagreement."""
    cfg = result.config
    matched = result.metric == "trust"
    what = "matched trust (the modules both were scored on)" if matched else result.metric
    table = Table(
        title=f"Paired comparison on {what}: A − B over the items both completed",
        caption=f"CI: paired bootstrap {cfg.confidence:.0%} ({cfg.n_boot} resamples); p: "
        "two-sided sign-flip permutation, Holm across pairs; Wilcoxon signed-rank beside it"
        + ("; full trust and coverage: each subject's own, over the same items" if matched else ""),
    )
    cols = ["A", "B", "n", "mean A", "mean B", "A − B", "CI", "p", "p Holm", "p Wilcoxon"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("A", "B") else "right", overflow="fold")
    table.add_column("win/tie/loss", justify="right")
    if matched:
        table.add_column("full trust A/B", justify="right")
        table.add_column("coverage A/B", justify="right")
    for p in result.pairs:
        wil = "–" if p.p_wilcoxon is None else f"{p.p_wilcoxon:.3g}"
        beside = []
        if matched:
            beside = [
                f"{_num(p.trust_a)} / {_num(p.trust_b)}",
                f"{_pct(p.coverage_a)} / {_pct(p.coverage_b)}",
            ]
        table.add_row(
            escape(p.a),
            escape(p.b),
            str(p.n),
            f"{p.mean_a:.3f}",
            f"{p.mean_b:.3f}",
            f"{p.mean_difference:+.3f}",
            f"[{p.ci_low:+.3f}, {p.ci_high:+.3f}]",
            f"{p.p_permutation:.3g}",
            f"{p.p_holm:.3g}",
            wil,
            f"{p.wins}/{p.ties}/{p.losses}",
            *beside,
        )
    console.print(table)
    for p in result.pairs:
        if matched:
            console.print(
                f"{escape(p.a)} vs {escape(p.b)}: compared on {escape(p.matched_on)}",
                soft_wrap=True,
            )
        if p.note:
            console.print(f"  [yellow]note:[/] {escape(p.note)}", soft_wrap=True)
        if not p.disagreements:
            continue
        console.print(f"largest disagreements, {escape(p.a)} vs {escape(p.b)}:")
        for d in p.disagreements:
            console.print(
                f"  {escape(d.item_id)}: {d.a:.3f} vs {d.b:.3f} ({d.difference:+.3f})",
                soft_wrap=True,
            )


def compare(
    run: Annotated[Path, Arg(help="Run directory (of `pathgls benchmark`).")],
    subjects: Annotated[
        str | None,
        Opt(help="Comma-separated subjects to compare pairwise (default: all of the run's)."),
    ] = None,
    module: Annotated[str, Opt(help="trust, grounding, logic, stability or report.")] = "trust",
    min_items: Annotated[
        int, Opt(help="Refuse pairs that share fewer completed items than this.")
    ] = 5,
    top: Annotated[int, Opt(help="Items of largest disagreement listed per pair.")] = 5,
    seed: Annotated[int, Opt(help="Seed of the bootstrap and the permutations.")] = 0,
    json_out: Annotated[
        Path | None, Opt("--json", help="Also write the comparison as JSON to this file.")
    ] = None,
) -> None:
    """Is subject A better than B on the same items, by how much, and more than noise?

    On trust, each pair is compared on the modules both subjects were scored on, item by item
    (the matched trust, named for each pair), with each one's full trust and coverage beside.
    """
    console = Console(stderr=True)
    try:
        check_run_dir(run)
    except PathGLSError as e:
        fail(console, e)
    from pathgls.meta.compare import CompareConfig, compare_subjects
    from pathgls.runner.store import ResultsStore

    try:
        store = ResultsStore(run)
        cards = store.load_cards()
        if not cards:
            raise NoScoreCardsError(f"{run}: no readable ScoreCard under scorecards/")
        fusion = store.fusion_config()
        names = None if subjects is None else [s.strip() for s in subjects.split(",") if s.strip()]
        result = compare_subjects(
            cards=cards,
            subjects=names,
            metric=module,
            config=CompareConfig(min_items=min_items, top=top, seed=seed),
            fusion=fusion,
        )
    except PathGLSError as e:
        fail(console, e)
    print_comparison(result, Console())
    if json_out is not None:
        data = dataclasses.asdict(result)
        try:
            write_run_text(json_out, json.dumps(data, indent=2))
        except PathGLSError as e:
            fail(console, e)
        console.print(f"wrote {escape(str(json_out))}", soft_wrap=True)
