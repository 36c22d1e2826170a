"""``pathgls judge``: the learned contradiction judge — retrain it, or say what is installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError

Opt = typer.Option

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command("train")
def train(
    reports: Annotated[
        Path, Opt(help="TSV of real reports (columns id, organ, report), e.g. the TCGA dev split.")
    ],
    out: Annotated[Path, Opt(help="Directory to write judge.safetensors and judge.json into.")],
    expert: Annotated[
        Path | None, Opt(help="Expert-scored TSV whose `reference` column adds reports.")
    ] = None,
    heldout: Annotated[
        Path | None,
        Opt(help="Ids never trained on (default: the shipped list of evaluation rows)."),
    ] = None,
    steps: Annotated[int, Opt(help="Optimisation steps.")] = 1200,
    batch_size: Annotated[int, Opt(help="Pairs per step.")] = 32,
    seed: Annotated[int, Opt(help="Seed of data, order and initial head.")] = 0,
    threshold: Annotated[
        float | None,
        Opt(
            help="Decision threshold to record (default: the shipped judge's, chosen on dev data)."
        ),
    ] = None,
    pairs: Annotated[
        Path | None,
        Opt(
            help="JSON-lines file of extra labelled pairs (premise, hypothesis, label, source), "
            "e.g. the blind sets' dev halves from benchmarks/data/blind_pairs.py."
        ),
    ] = None,
    pairs_repeat: Annotated[int, Opt(help="Times each extra pair is repeated.")] = 1,
    neighbours: Annotated[
        int,
        Opt(help="Each unit's N nearest units (judge embedding) added as consistent pairs."),
    ] = 0,
    siblings: Annotated[
        bool,
        Opt(help="Add sibling pairs: one slot of two different targets (consistent)."),
    ] = False,
    workers: Annotated[int, Opt(help="Processes reading the reports.")] = 2,
    limit: Annotated[int, Opt(help="Train on the first N reports only (0: all).")] = 0,
) -> None:
    """Retrain the judge from real reports (about 25 min on 2 CPUs with the defaults)."""
    console = Console(stderr=True)
    from pathgls.nli.judge import META, SHIPPED_DIR
    from pathgls.nli.judge_recipe import HELDOUT, retrain
    from pathgls.nli.judge_train import TrainConfig

    for p in (reports, expert, heldout, pairs):
        if p is not None and not p.is_file():
            fail(console, PathGLSError(f"{p}: no such file"))
    from pathgls.nli.judge_data import read_pairs

    try:
        extra = read_pairs(pairs) if pairs is not None else []
    except PathGLSError as e:  # too large, or an endless stream
        fail(console, e)
    except (ValueError, OSError) as e:
        fail(console, PathGLSError(str(e)))
    try:
        cfg = TrainConfig(steps=steps, batch_size=batch_size, seed=seed)
    except ValueError as e:
        fail(console, PathGLSError(str(e)))
    if threshold is None:
        threshold = json.loads((SHIPPED_DIR / META).read_text(encoding="utf-8"))["threshold"]
    result = retrain(
        reports=reports,
        out=out,
        expert=expert,
        heldout=heldout or HELDOUT,
        config=cfg,
        threshold=threshold,
        workers=workers,
        limit=limit or None,
        extra_pairs=extra,
        extra_repeat=pairs_repeat,
        neighbours=neighbours,
        siblings=siblings,
        log=lambda s: console.print(escape(s)),
    )
    console.print(
        f"trained on {result.n_reports} reports, {result.n_pairs} pairs "
        f"({result.positives} contradictions); loss {result.first_loss:.3f} → "
        f"{result.final_loss:.3f}; written to {escape(str(result.out))}"
    )
    console.print(f"use it with: pathgls logic REPORT --nli judge:{escape(str(result.out))}")


@app.command("info")
def info(
    directory: Annotated[
        Path | None, typer.Argument(help="A trained judge directory (default: the shipped one).")
    ] = None,
) -> None:
    """What the installed judge is: its data, training, threshold and figures; loads it."""
    console = Console()
    from pathgls.nli.judge import load_judge

    try:
        judge = load_judge(directory)
    except PathGLSError as e:
        fail(Console(stderr=True), e)
    raw = judge.meta.raw
    console.print(f"judge: {escape(str(directory or 'shipped'))}")
    console.print(f"  base MiniLM sha256: {raw['base_sha256']}")
    console.print(f"  threshold: {raw['threshold']}  frozen layers: {raw['n_bottom']}")
    console.print(f"  training: {escape(json.dumps(raw.get('train', {})))}")
    console.print(f"  data: {escape(json.dumps(raw.get('data', {})))}")
