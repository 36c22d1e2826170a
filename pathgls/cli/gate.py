"""``pathgls gate``: route every ScoreCard of a run to deploy, review or reject."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli.common import RANDOM_MARK, fail, random_weight_modules
from pathgls.cli.layout import Block, is_compact, print_blocks
from pathgls.errors import ConfigError, PathGLSError, ScoreCardError
from pathgls.io.confine import confined
from pathgls.io.outputs import write_run_csv
from pathgls.io.rundirs import check_run_dir
from pathgls.io.sanitize import markup_text as escape
from pathgls.jsontext import JSONTextError, loads_strict
from pathgls.modules import (
    MODULE_NAMES,
    SCORE_MODULES,
    module_names,
    reference_free_modules,
    score_modules,
)
from pathgls.reasons import IMAGE_UNCHECKED, card_reasons
from pathgls.types import ScoreCard

Arg = typer.Argument
Opt = typer.Option

ROUTES = ("deploy", "review", "reject", "failed")
#: Every built-in module a card can carry, in the gate's column order (report and hare: with a
#: reference); :func:`module_names` includes the plugins (kept for code that imported it).
MODULE_COLUMNS = MODULE_NAMES
#: Console headers of the built-in module columns (:func:`module_headers`: plugins included).
MODULE_HEADERS = {m.name: m.header for m in SCORE_MODULES}


def _csv_columns(modules: tuple[str, ...]) -> tuple[str, ...]:
    return ("file", "item_id", "subject", *modules, "trust", "coverage", "route", "reasons")


def csv_columns() -> tuple[str, ...]:
    """The columns of ``--out-csv``: every module a card can carry, plugins included."""
    return _csv_columns(module_names())


def module_headers() -> dict[str, str]:
    """Console headers of the module columns, plugins included."""
    return {m.name: m.header for m in score_modules()}


#: :func:`csv_columns` of the built-in modules alone (kept for code that imported it).
CSV_COLUMNS = _csv_columns(MODULE_NAMES)


def register(app: typer.Typer) -> None:
    """Add ``gate`` to ``app``."""
    app.command("gate")(gate)


def parse_floors(specs: list[str]) -> dict[str, float]:
    """``["grounding=0.4", ...]`` → ``{"grounding": 0.4}``.

    Raises:
        ConfigError: A spec is not ``module=value`` with a number as value.
    """
    floors: dict[str, float] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError("missing '='" if not sep else "empty module name")
            floors[name.strip()] = float(value)
        except ValueError as e:
            raise ConfigError(f"--floor must be module=value, got {spec!r} ({e})") from e
    return floors


def parse_weights(spec: str) -> dict[str, float]:
    """``"grounding=0.5,logic=0.3,stability=0.2"`` → ``{"grounding": 0.5, ...}``.

    Raises:
        ConfigError: An entry is not ``module=number``, or a module is given twice.
    """
    weights: dict[str, float] = {}
    for part in spec.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        try:
            if not sep or not name:
                raise ValueError("missing '='" if not sep else "empty module name")
            if name in weights:
                raise ValueError(f"{name} given twice")
            weights[name] = float(value)
        except ValueError as e:
            raise ConfigError(f"--weights must be module=weight,..., got {spec!r} ({e})") from e
    return weights


def parse_required(specs: list[str] | None) -> list[str] | None:
    """``--require`` values → ``[gate] required`` (None: keep the config's; ``none``: [])."""
    if not specs:
        return None
    if [s.strip().lower() for s in specs] == ["none"]:
        return []
    return [s.strip() for s in specs]


def _configs(
    *,
    config: Path | None,
    weights: str | None,
    flags: dict[str, float | None],
    floors: list[str],
    reference_penalties: bool = False,
    required: list[str] | None = None,
) -> tuple[Any, Any]:
    """FusionConfig and GateConfig from the config file, overridden by the flags given.

    The file is any pathgls config (``pathgls calibrate --out`` writes one with ``[fusion]``
    and ``[gate]``; a run's ``config.toml`` is one too); ``--floor`` adds to its floors and
    ``--require`` replaces its required modules.
    """
    from pathgls.config import load_config

    file = load_config(config)
    extra_floors = parse_floors(floors)
    cfg = load_config(
        config,
        fusion={
            "weights": parse_weights(weights) if weights is not None else None,
            "reference_penalties": True if reference_penalties else None,
        },
        gate={
            **flags,
            "floors": {**file.gate.floors, **extra_floors} if extra_floors else None,
            "required": parse_required(required),
        },
    )
    return cfg.fusion, cfg.gate


def _load(path: Path) -> ScoreCard:
    try:
        data = loads_strict(path.read_bytes())
    except (OSError, JSONTextError) as e:  # JSONTextError: a key twice, too deep, not UTF-8
        raise PathGLSError(f"unreadable: {e}") from e
    if not isinstance(data, dict) or "item_id" not in data:
        raise PathGLSError("not a ScoreCard (no item_id)")
    try:
        return ScoreCard.from_dict(data)
    except ScoreCardError as e:
        raise PathGLSError(f"not a valid ScoreCard: {e}") from e


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def gate(
    run_dir: Annotated[
        Path, Arg(help="Run directory (its scorecards/), or any folder of ScoreCard *.json.")
    ],
    deploy: Annotated[
        float | None, Opt(help="Trust at or above which a report is deployed (default 0.75).")
    ] = None,
    review: Annotated[
        float | None, Opt(help="Trust at or above which a report is reviewed (default 0.5).")
    ] = None,
    floor: Annotated[
        list[str] | None, Opt(help="Per-module minimum, module=value (repeatable).")
    ] = None,
    min_coverage: Annotated[
        float | None,
        Opt(help="Deploy only when modules carrying this share of the weight ran (default 0.6)."),
    ] = None,
    weights: Annotated[
        str | None,
        Opt(
            help="Fusion weights, e.g. grounding=0.5,logic=0.3,stability=0.2 (default 0.4/0.3/0.3)."
        ),
    ] = None,
    config: Annotated[
        Path | None,
        Opt(
            help="TOML config: its fusion weights and gate thresholds (pathgls calibrate --out, "
            "or a run's config.toml); the flags above override it."
        ),
    ] = None,
    reference_penalties: Annotated[
        bool,
        Opt(
            help="The PathGLS reference code's extra penalties (trust ×0.6 when S_l < 0.5, "
            "×0.8 when S_g < 0.25); not in the paper, off by default."
        ),
    ] = False,
    require: Annotated[
        list[str] | None,
        Opt(
            help="A module deploy needs scored (repeatable; 'grounding|report': either; "
            "'none': no requirement). Replaces [gate] required (default: grounding)."
        ),
    ] = None,
    csv_path: Annotated[
        Path | None, Opt("--csv", help="CSV of the decisions (default RUN_DIR/gate.csv).")
    ] = None,
) -> None:
    """Route each report to deploy / review / reject; exit 1 when any is rejected or failed.

    An item whose report could not be produced (status ``failed`` in a benchmark run) is not
    gated: it is listed as ``failed`` with its error and also makes the exit code 1.
    """
    from pathgls.fusion import fuse, gate_scorecard

    console = Console(stderr=True)
    try:
        if config is not None:
            from pathgls.cli.preflight import config_file

            config_file(config)
        fusion_cfg, gate_cfg = _configs(
            config=config,
            weights=weights,
            flags={"deploy": deploy, "review": review, "min_coverage": min_coverage},
            floors=floor or [],
            reference_penalties=reference_penalties,
            required=require,
        )
        check_run_dir(run_dir, cards_folder=True)
    except PathGLSError as e:
        fail(console, e)
    out_csv = csv_path if csv_path is not None else run_dir / "gate.csv"
    rows: list[dict[str, Any]] = []
    gated: list[ScoreCard] = []  # for the certificate's drift check
    errors = 0
    # a benchmark run keeps its cards in RUN_DIR/scorecards (next to manifest, summary, caches)
    search = run_dir / "scorecards" if (run_dir / "scorecards").is_dir() else run_dir
    for path in sorted(search.rglob("*.json")):
        rel = path.relative_to(run_dir).as_posix()
        try:
            card = _load(confined(path, run_dir=run_dir, what="ScoreCard"))
        except PathGLSError as e:
            errors += 1
            console.print(f"[red]error:[/] {escape(rel)}: {escape(str(e))}", soft_wrap=True)
            continue
        coverage = None
        if card.status != "failed":
            card = gate_scorecard(card, fusion=fusion_cfg, gate=gate_cfg)
            coverage = fuse(modules=card.modules, config=fusion_cfg).coverage
        rows.append(card_row(card, file=rel, coverage=coverage))
        gated.append(card)
    if not rows:
        fail(console, f"{run_dir}: no ScoreCard found ({errors} JSON file(s) skipped)")
    try:
        write_run_csv(out_csv, columns=csv_columns(), rows=rows)
    except PathGLSError as e:
        fail(console, e)
    print_gate_table(rows)
    if config is not None:
        from pathgls.cli.gate_certificate import show_certificates

        show_certificates(config, gated, console)
    counts = {r: sum(row["route"] == r for row in rows) for r in ROUTES}
    console.print(
        f"{counts['deploy']} deploy, {counts['review']} review, {counts['reject']} reject, "
        f"{counts['failed']} failed (no report)"
        f"{f', {errors} error(s)' if errors else ''} → {escape(str(out_csv))}",
        soft_wrap=True,
    )
    unchecked = [r for r in rows if r["route"] == "deploy" and IMAGE_UNCHECKED in r["reasons"]]
    if unchecked:
        console.print(
            f"[yellow]warning:[/] {len(unchecked)} deployed report(s) were never checked against "
            "their image (no grounding score; `--require none` let them through): "
            + escape(", ".join(f"{r['item_id']} · {r['subject']}" for r in unchecked[:10])),
            soft_wrap=True,
        )
    raise typer.Exit(1 if counts["reject"] or counts["failed"] else 0)


def card_row(card: ScoreCard, *, file: str = "", coverage: float | None = None) -> dict[str, Any]:
    """A gated card as a table/CSV row; a card whose report could not be produced is ``failed``.

    Every module a card can carry has a cell (empty: absent or missing); ``coverage`` is the
    share of the fusion weight that was scored (:attr:`pathgls.fusion.FusionResult.coverage`).
    """
    columns = module_names()
    if card.status == "failed" or card.decision is None:
        reasons = [e.splitlines()[0] for e in card.errors] or ["no report"]
        route = "failed"
        values = {m: "" for m in (*columns, "trust", "coverage")}
    else:
        reasons, route = card_reasons(card), card.decision.route
        values = {m: _fmt(card.value(m)) for m in columns}
        values["trust"] = _fmt(card.trust)
        values["coverage"] = _fmt(coverage)
    return {
        "file": file,
        "item_id": card.item_id,
        "subject": card.subject,
        **values,
        "route": route,
        "reasons": " | ".join(reasons),
        "first_reason": reasons[0] if reasons else "",
        # the decision, then the module that lowered the trust most (see fusion.route)
        "top_reasons": reasons[:2],
        # modules the card carries (a column is shown when some card has the module)
        "modules": sorted(card.modules),
        # modules scored with random test weights (marked on the console; not a CSV column)
        "random_weights": random_weight_modules(card),
    }


def _cell(row: dict[str, Any], name: str) -> str:
    """A score cell of the gate table, marked when random test weights made it (or the trust)."""
    random = row.get("random_weights") or ()
    value = row[name] or "—"
    marked = bool(row[name]) and (name in random or (name == "trust" and bool(random)))
    return f"{value} [red]({RANDOM_MARK})[/]" if marked else value


def _coverage_cell(row: dict[str, Any]) -> str:
    return "—" if not row.get("coverage") else f"{float(row['coverage']):.0%}"


def print_gate_table(rows: list[dict[str, Any]]) -> None:
    """The gate's console table: every module some card carries, trust, coverage, route and
    the decision with the module that lowered the trust most."""
    colour = {"deploy": "green", "review": "yellow", "reject": "red", "failed": "magenta"}
    columns, always = module_names(), reference_free_modules()
    carried = {m for r in rows for m in r.get("modules", ())} | {
        m for r in rows for m in columns if r.get(m)
    }
    shown = [m for m in columns if m in always or m in carried]
    console = Console()
    if is_compact(console):  # narrow or not a terminal: one block per card, nothing cut
        print_blocks(console, [_gate_block(r, shown, colour) for r in rows])
        return
    table = Table()
    headers = module_headers()
    for col in ("item", "subject", *(headers.get(m, m) for m in shown), "trust", "cov"):
        table.add_column(col)
    table.add_column("route")
    table.add_column("reasons", ratio=1, overflow="fold")
    for r in rows:
        table.add_row(
            escape(r["item_id"]),
            escape(r["subject"]),
            *(_cell(r, name) for name in (*shown, "trust")),
            _coverage_cell(r),
            f"[{colour[r['route']]}]{r['route']}[/]",
            # the deciding reason and the module that lowered the trust most
            "\n".join(escape(x) for x in r.get("top_reasons") or [r["first_reason"]]),
        )
    console.print(table)


def _gate_block(row: dict[str, Any], shown: list[str], colour: dict[str, str]) -> Block:
    """A card in the compact gate layout: route and trust first, then scores, then reasons."""
    route = row["route"]
    head = (
        f"[{colour[route]}]{route}[/] trust {_cell(row, 'trust')} · "
        f"{escape(row['item_id'])} · {escape(row['subject'])}"
    )
    headers = module_headers()
    fields = [(headers.get(m, m), _cell(row, m)) for m in shown]
    fields.append(("cov", _coverage_cell(row)))
    return Block(head=head, fields=fields, notes=row.get("top_reasons") or [row["first_reason"]])
