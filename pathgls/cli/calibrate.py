"""``pathgls calibrate``: module weights, deploy threshold and ablation from labelled data."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.errors import CalibrationError, ConfigError, PathGLSError
from pathgls.io.rundirs import check_run_dir
from pathgls.io.sanitize import markup_text as escape

if TYPE_CHECKING:  # pathgls.meta imports scipy.stats (~1 s): only when the command runs
    from pathgls.meta.calibrate import (
        AblationRow,
        ThresholdResult,
        ValidationRow,
        WeightSearchResult,
    )

Arg = typer.Argument
Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``calibrate`` to ``app``."""
    app.command("calibrate")(calibrate)


def _list(names: tuple[str, ...], limit: int = 5) -> str:
    more = f", … (+{len(names) - limit})" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def load_rows(source: Path, *, labels: Path | None, console: Console) -> list[ValidationRow]:
    """Validation rows from a table file, or from a run directory's ScoreCards and ``labels``.

    Cards left out (failed, unlabelled, unreadable) are counted in a warning on ``console``.

    Raises:
        CalibrationError: the source or labels cannot be read, a run directory without
            ``--labels`` or without cards, a table with ``--labels``, or no labelled card.
    """
    from pathgls.meta.calibrate import read_labels, read_validation_table, rows_from_cards

    if source.is_file():
        if labels is not None:
            raise CalibrationError(f"--labels goes with a run directory; {source} is a table")
        return read_validation_table(source)
    if not source.is_dir():
        raise CalibrationError(f"{source}: no such file or directory")
    check_run_dir(source)
    if labels is None:
        raise CalibrationError(
            f"{source} is a run directory: pass --labels (TSV with item_id, label[, subject])"
        )
    from pathgls.runner.store import ResultsStore

    store = ResultsStore(source)
    found = list(store.iter_cards())
    cards = [card for _, card, _ in found if card is not None]
    unreadable = tuple(path.name for path, card, _ in found if card is None)
    if not cards:
        raise CalibrationError(
            f"{source}: no readable ScoreCard under {store.scorecards_dir}"
            + (f" ({len(unreadable)} unreadable)" if unreadable else "")
        )
    joined = rows_from_cards(cards=cards, labels=read_labels(labels))
    for what, names in (
        ("failed (no report)", joined.failed),
        ("without a label", joined.unlabelled),
        ("unreadable", unreadable),
    ):
        if names:
            console.print(
                f"[yellow]warning:[/] skipped {len(names)} card(s) {what}: {escape(_list(names))}",
                soft_wrap=True,
            )
    if not joined.rows:
        raise CalibrationError(
            f"no card of {source} has a label in {labels} (labels match on item_id, and on "
            "subject where the labels have a subject column)"
        )
    return joined.rows


def _check_source(source: Path, *, labels: Path | None) -> None:
    """The table, or the run directory and its labels, exist and are what they should be."""
    from pathgls.cli.preflight import text_file

    if source.is_file():
        text_file(source, what="validation table")
    elif source.is_dir():
        check_run_dir(source)
    else:
        raise CalibrationError(f"{source}: no such file or directory")
    if labels is not None:
        text_file(labels, what="labels table")


def _num(x: float | None, fmt: str = ".3f") -> str:
    return "—" if x is None or math.isnan(x) else format(x, fmt)


def print_search(search: WeightSearchResult, console: Console) -> None:
    """Best weights against the defaults, then the top grid points."""
    mods = list(search.weights)
    table = Table(
        title=f"Module weights — {search.n_rows} labelled row(s)",
        caption="best ρ with its 95% CI (Fisher z); chosen on these rows, so optimistic",
    )
    for col in ("weights", *mods, "Spearman ρ"):
        table.add_column(col)
    ci = search.spearman_ci
    best = _num(search.spearman) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else " [no CI]")
    table.add_row("best", *(f"{search.weights[m]:.2f}" for m in mods), best)
    table.add_row(
        "default",
        *(f"{search.default_weights[m]:.2f}" for m in mods),
        _num(search.default_spearman),
    )
    console.print(table)
    top = Table(title=f"Top grid points (of {search.n_points})")
    for col in ("rank", *mods, "Spearman ρ"):
        top.add_column(col)
    for i, point in enumerate(search.top, start=1):
        top.add_row(str(i), *(f"{point.weights[m]:.2f}" for m in mods), _num(point.spearman))
    console.print(top)


def print_ablation(rows: list[AblationRow], console: Console) -> None:
    """ρ with all modules, then with each one dropped, and the change Δ."""
    table = Table(title="Ablation (best weights, renormalised after a drop)")
    for col in ("dropped", "weights", "n", "Spearman ρ", "Δ", "note"):
        table.add_column(col)
    for r in rows:
        weights = ", ".join(f"{m}={w:.2f}" for m, w in r.weights.items())
        table.add_row(
            r.dropped or "none",
            weights or "—",
            str(r.n),
            _num(r.spearman),
            _num(r.delta, "+.3f"),
            escape("; ".join(r.warnings)),
        )
    console.print(table)


def print_threshold(res: ThresholdResult, *, acceptable: float, console: Console) -> None:
    """The deploy threshold for the target precision, or why there is none."""
    head = f"Deploy threshold for precision ≥ {res.target_precision:g} (label ≥ {acceptable:g})"
    if res.threshold is None:
        console.print(f"{head}: [red]unreachable[/] — {escape(res.reason or '')}", soft_wrap=True)
        return
    console.print(
        f"{head}: [green]{res.threshold:.4f}[/] — precision {res.precision:.3f}, "
        f"recall {res.recall:.3f}, {res.n_deployed}/{res.n} deployed",
        soft_wrap=True,
    )


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def fusion_weights(search: WeightSearchResult) -> dict[str, float]:
    """The searched weights and the default weight of every module not searched, summing to 1.

    A module the rows never scored (the report side, when no item had a reference) keeps its
    default weight relative to the searched ones (report : PathGLS modules = 0.4 : 1), so it
    is still fused where a later run has it. Weights are relative (the trust renormalises
    them over the modules an item has), so they are written scaled to sum to 1 (they once
    summed to 1.4, which read as a bug).
    """
    from pathgls.config import default_weights

    defaults = default_weights()
    searched = dict(search.weights)
    base = sum(defaults[m] for m in searched)
    scale = sum(searched.values()) / base if base > 0 else 1.0
    rest = {m: w * scale for m, w in defaults.items() if m not in searched}
    weights = searched | rest
    total = sum(weights.values())
    return {m: round(w / total, 6) for m, w in weights.items()}


def _weight_notes(weights: dict[str, float]) -> list[str]:
    """Comment lines: each module's share of the trust without and with a reference."""
    from pathgls.config import default_reference_modules

    references = default_reference_modules()
    base = {m: w for m, w in weights.items() if m not in references}
    total = sum(base.values())
    lines = ["weights are relative: an item's trust renormalises them over the modules it has"]
    if total > 0:
        shares = ", ".join(f"{m} {w / total:.2f}" for m, w in base.items())
        lines.append(f"without a reference report: {shares}")
    for m in references:
        if weights.get(m):
            lines.append(f"with one, {m} carries {weights[m] / sum(weights.values()):.2f}")
    return lines


def calibration_toml(
    *,
    search: WeightSearchResult,
    threshold: ThresholdResult,
    review: float | None,
    acceptable: float,
    source: Path,
) -> str:
    """The TOML ``pathgls gate --config`` reads: ``[fusion]``, ``[gate]`` and ``[calibration]``.

    It is a pathgls config file (``[calibration]`` is a note table loaders skip), so
    ``pathgls benchmark --config`` can use it too.

    ``[fusion.weights]`` holds :func:`fusion_weights` (summing to 1; comment lines give each
    module's share of the trust without and with a reference).

    ``[gate]`` holds ``deploy`` when the target precision is reachable (rounded down to 6
    decimals, so the item at the threshold still deploys whatever the float rounding of the
    gate's trust) and ``review`` when given; ``[calibration]`` records where the values came from
    (``gate`` ignores it).

    Raises:
        ConfigError: the deploy threshold is below the review threshold (given or default).
    """
    import tomli_w

    from pathgls.config import config_from_dict

    weights = fusion_weights(search)
    gate: dict[str, float] = {}
    if threshold.threshold is not None:
        gate["deploy"] = math.floor(threshold.threshold * 1e6) / 1e6
    if review is not None:
        gate["review"] = review
    try:  # the file is a pathgls config: it must load as one
        config_from_dict({"fusion": {"weights": weights}, "gate": gate})
    except ConfigError as e:
        raise ConfigError(f"cannot write this gate: {e}; pass --review at or below it") from e
    provenance: dict[str, Any] = {
        "source": str(source),
        "n_rows": search.n_rows,
        "spearman": search.spearman,
        "default_spearman": search.default_spearman,
        "target_precision": threshold.target_precision,
        "acceptable_label": acceptable,
    }
    if threshold.threshold is not None:
        provenance.update(precision=threshold.precision, recall=threshold.recall)
    data: dict[str, Any] = {"fusion": {"weights": weights}}
    if gate:
        data["gate"] = gate
    data["calibration"] = {k: v for k, v in provenance.items() if not _nan(v)}
    header = ["written by pathgls calibrate; use with: pathgls gate RUN_DIR --config FILE"]
    notes = "".join(f"# {line}\n" for line in (*header, *_weight_notes(weights)))
    return notes + tomli_w.dumps(data)


def _certified(*, config: Path | None, console: Console, **kw: Any) -> None:
    """``calibrate --risk``: see :mod:`pathgls.cli.certified`."""
    from pathgls.cli.certified import run_certified
    from pathgls.config import load_config

    try:
        if kw["source"].exists():
            _check_source(kw["source"], labels=kw["labels"])
        weights = dict(load_config(config).fusion.weights)
        run_certified(weights=weights, console=console, **kw)
    except PathGLSError as e:
        fail(console, e)
    except OSError as e:
        fail(console, f"cannot write {kw['out']}: {e}")


def calibrate(
    source: Annotated[
        Path,
        Arg(
            help="Validation table (TSV/CSV: item_id, grounding, logic, stability, label) or a "
            "run directory (with --labels)."
        ),
    ],
    labels: Annotated[
        Path | None,
        Opt(help="For a run directory: TSV/CSV with item_id, label and optionally subject."),
    ] = None,
    step: Annotated[float, Opt(help="Grid spacing of the weight simplex.")] = 0.05,
    min_weight: Annotated[float, Opt(help="Lower bound of every weight.")] = 0.0,
    precision: Annotated[float, Opt(help="Target precision of the deploy threshold.")] = 0.9,
    acceptable: Annotated[
        float, Opt(help="Labels at or above this are acceptable (use 1 for 0/1 labels).")
    ] = 3.0,
    review: Annotated[
        float | None, Opt(help="Review threshold to write to --out (default: the gate's 0.5).")
    ] = None,
    out: Annotated[
        Path | None,
        Opt(help="Write the weights and deploy threshold to this TOML (for gate --config)."),
    ] = None,
    risk: Annotated[
        float | None,
        Opt(
            help="Certify: the deploy threshold keeps the share of unacceptable deployed "
            "reports ≤ this (with --confidence), instead of the precision target."
        ),
    ] = None,
    confidence: Annotated[
        float, Opt(help="With --risk: probability 1−δ that the share stays ≤ --risk.")
    ] = 0.9,
    batch: Annotated[
        int | None,
        Opt(
            help="With --risk: guarantee the realised share among the deployed reports of the "
            "next batch of this many reports, not the population risk (stricter).",
            min=1,
        ),
    ] = None,
    reject_risk: Annotated[
        float | None,
        Opt(help="With --risk: also certify a reject threshold (acceptable among rejected ≤ β)."),
    ] = None,
    for_run: Annotated[
        Path | None,
        Opt(
            help="With --risk: certify for this run's reports (their trust is known): the "
            "realised share among its deployed reports ≤ --risk. The gate warns on another run."
        ),
    ] = None,
    cutoff: Annotated[
        float | None,
        Opt(help="Expert scores as labels: acceptable = score ≥ this (expert table or --labels)."),
    ] = None,
    score_column: Annotated[
        str, Opt(help="The expert score column of an expert-scored table.")
    ] = "expert_score",
    config: Annotated[
        Path | None,
        Opt(help="With --risk: the fusion weights of the trust (default 0.4/0.3/0.3/0.4)."),
    ] = None,
) -> None:
    """Fit module weights and the deploy threshold to labels; print the ablation.

    Weights maximise Spearman ρ(trust, label) on a simplex grid; the deploy threshold is the
    lowest trust (under those weights) whose deployed items reach the target precision.
    With --risk the thresholds are certified instead (Learn-then-Test, exact binomial bound)
    under fixed weights, and their certificate is written into --out.
    """
    console = Console(stderr=True)
    if batch is not None and risk is None:
        fail(console, CalibrationError("--batch goes with --risk (a certified gate)"))
    if for_run is not None and risk is None:
        fail(console, CalibrationError("--for-run goes with --risk (a certified gate)"))
    if for_run is not None and batch is not None:
        fail(console, CalibrationError("--for-run certifies for a known run; drop --batch"))
    if risk is not None:
        _certified(
            source=source,
            labels=labels,
            cutoff=cutoff,
            score_column=score_column,
            acceptable=acceptable,
            risk=risk,
            confidence=confidence,
            batch=batch,
            reject_risk=reject_risk,
            for_run=for_run,
            config=config,
            out=out,
            console=console,
        )
        return
    try:  # before scipy & co are imported: a bad source fails at once
        _check_source(source, labels=labels)
    except PathGLSError as e:
        fail(console, e)
    from pathgls.meta.calibrate import (
        ablation,
        thresholds_for_precision,
        trust_scores,
        weight_search,
    )

    try:
        rows = load_rows(source, labels=labels, console=console)
        search = weight_search(rows=rows, step=step, min_weight=min_weight)
        abl = ablation(rows=rows, weights=search.weights)
        trust, y = trust_scores(rows=rows, weights=search.weights)
        threshold = thresholds_for_precision(
            trust=trust, acceptable=y >= acceptable, target_precision=precision
        )
    except PathGLSError as e:
        fail(console, e)
    for note in (*search.warnings, *threshold.warnings):
        console.print(f"[yellow]warning:[/] {escape(note)}", soft_wrap=True)
    stdout = Console()
    print_search(search, stdout)
    print_ablation(abl, stdout)
    print_threshold(threshold, acceptable=acceptable, console=stdout)
    if threshold.threshold is None and not (y >= acceptable).any():
        console.print(
            f"[yellow]hint:[/] no label is ≥ {acceptable:g}; for 0/1 labels pass --acceptable 1"
        )
    if out is None:
        return
    from pathgls.io.atomic import write_text_atomic

    try:
        text = calibration_toml(
            search=search, threshold=threshold, review=review, acceptable=acceptable, source=source
        )
        write_text_atomic(out, text)
    except ConfigError as e:
        fail(console, e)
    except OSError as e:
        fail(console, f"cannot write {out}: {e}")
    if threshold.threshold is None:
        console.print("[yellow]warning:[/] no deploy threshold written (target unreachable)")
    console.print(f"wrote {escape(str(out))}", soft_wrap=True)
