"""``pathgls models``: list the registered encoders and pull their weights."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.encoders import list_encoders
from pathgls.errors import PathGLSError
from pathgls.hub import store as hub

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

ModelsDirOption = Annotated[
    Path | None,
    typer.Option(
        "--models-dir",
        help="Models directory (default: $PATHGLS_MODELS_DIR or ~/.cache/pathgls/models).",
    ),
]


@app.command("list")
def list_command(models_dir: ModelsDirOption = None) -> None:
    """List the registered encoders and whether their weights are present locally."""
    console = Console()
    root = hub.get_models_dir(models_dir)
    table = Table(title=f"pathgls encoders (models dir: {escape(str(root))})")
    for column in ("name", "backend", "repo id", "local copy", "description"):
        table.add_column(column)
    for info in list_encoders():
        found = hub.find_model(info.repo_id, models_dir=root)
        present = f"[green]{escape(str(found))}[/green]" if found else "[yellow]missing[/yellow]"
        table.add_row(info.name, info.backend, info.repo_id, present, info.description)
    console.print(table)
    console.print(
        "Other encoders: hf:<repo-or-dir>, open_clip:hf-hub:<repo>, open_clip:<dir>, "
        "open_clip:<arch>:<tag-or-weights-file>."
    )


@app.command("pull")
def pull_command(
    name: Annotated[
        str, typer.Argument(help="Registered name (plip, quiltnet, conch) or hf:<org>/<name>.")
    ],
    models_dir: ModelsDirOption = None,
    revision: Annotated[
        str | None, typer.Option("--revision", help="Branch, tag or commit (default: main).")
    ] = None,
    token_env: Annotated[
        str,
        typer.Option(
            "--token-env", help="Environment variable with a Hugging Face token (gated repos)."
        ),
    ] = "HF_TOKEN",
) -> None:
    """Download a model's weights into the models directory (the only way pathgls downloads)."""
    try:
        target = hub.pull(name, models_dir=models_dir, token_env=token_env, revision=revision)
    except PathGLSError as e:
        fail(Console(stderr=True), e)
    Console().print(f"[green]pulled[/green] {escape(name)} → {escape(str(target))}")
