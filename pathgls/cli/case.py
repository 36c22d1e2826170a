"""``pathgls case``: the typed case model Logic reads — parts → lesions → slots — and its checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError
from pathgls.io.sanitize import markup_text as escape

Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``case`` to ``app``."""
    app.command("case")(case)


def case(
    report: Annotated[Path, typer.Argument(help="A report file (.txt/.md).")],
    as_json: Annotated[
        bool, Opt("--json", help="Print the case model and the checks as JSON.")
    ] = False,
    show_all: Annotated[
        bool, Opt("--all", help="Also list the hedged, gross and other facts no check reads.")
    ] = False,
) -> None:
    """The case model of a report: its parts, lesions, typed slot facts and fired checks.

    Logic (``pathgls logic``) compares only facts of the same target (the tumour of one part, a
    margin by name, a node group by station, a cell population); this command shows what it
    read, which statements it set aside (legends, forms, history, hedges) and why it stayed
    silent where it did.
    """
    from pathgls.logic.checks import run_checks
    from pathgls.logic.score import check_evidence
    from pathgls.text.case import build_case

    console = Console(stderr=True)
    try:
        if not report.is_file():
            raise PathGLSError(f"{report}: no such file")
        model = build_case(report.read_bytes())
    except PathGLSError as e:
        fail(console, e)
    conflicts = [c for c in run_checks(model) if c.conflict]
    if as_json:
        data = model.to_dict()
        data["checks"] = [check_evidence(model, c).to_dict() for c in conflicts]
        typer.echo(json.dumps(data, indent=2))
        return
    out = Console()
    for w in model.document.warnings:
        out.print(f"[yellow]warning:[/] {escape(w)}", soft_wrap=True)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(model.document.kinds().items()))
    out.print(f"[bold]{escape(report.name)}[/]: statements — {escape(kinds)}", soft_wrap=True)
    for label, part in model.parts.items():
        facts = [f for f in model.facts if f.target.part == label and (f.certain or show_all)]
        if not facts and label is not None:
            continue
        name = f"part {label}" if label else "case (outside any part)"
        title = f" — {part.title}" if part.title else ""
        main = f"; tumour: {part.main}" if part.main else ""
        organ = f"; organ: {part.organ}" if part.organ else ""
        amb = (
            " [yellow](several tumours: 'the tumour' is not compared)[/]" if part.ambiguous else ""
        )
        table = Table(title=escape(f"{name}{title}{main}{organ}") + amb, title_justify="left")
        for col in ("target", "slot", "value", "note", "evidence"):
            table.add_column(col)
        for f in facts:
            target = f.target.kind + (f" {f.target.name}" if f.target.name else "")
            slot = f.slot + (f" {f.key}" if f.key else "")
            value = str(f.value) + ("" if f.certain else " (not certain)")
            table.add_row(
                escape(target),
                escape(slot),
                escape(value),
                escape(f.note),
                escape(" ".join(model.evidence(f).split())[:60]),
            )
        out.print(table)
    for note in model.notes:
        out.print(f"[yellow]silent:[/] {escape(note)}", soft_wrap=True)
    if not conflicts:
        out.print("no check fired")
    for c in conflicts:
        ev = check_evidence(model, c)
        out.print(
            f"[red]{escape(c.rule)}[/] p={c.probability:.2f}: {escape(c.explanation)}",
            soft_wrap=True,
        )
        for side in (ev.first, ev.second):
            out.print("    " + escape(f"[{side.scope}] {side.sentence}"), soft_wrap=True)
