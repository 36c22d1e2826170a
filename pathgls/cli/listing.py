"""``pathgls list``: every registry (encoders, NLI, extractors, subjects, ...) in one table.

Each row is a name a spec can start with: ``kind``, ``name``, the ``argument`` that may follow
``name:`` (``[...]`` when optional) and a description. Model weights are listed by ``pathgls
models list``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError
from pathgls.io.sanitize import markup_text as escape
from pathgls.registry import Registry, RegistryEntry


def registries() -> dict[str, Registry[Any]]:
    """Every live registry of pathgls by kind, in pipeline order (imports their backends)."""
    from pathgls.cli.catalog import live_registries

    return live_registries()


def all_entries(
    kind: str | None = None, *, found: dict[str, Registry[Any]] | None = None
) -> list[RegistryEntry[Any]]:
    """The entries of every registry (or of ``kind``), grouped by registry.

    Args:
        kind: One registry's kind (None: all).
        found: The registries to list (default: the live ones, see :func:`registries`).

    Raises:
        ValueError: an unknown kind (the message lists the kinds).
    """
    found = registries() if found is None else found
    if kind is not None and kind not in found:
        raise ValueError(f"unknown registry kind {kind!r}; kinds: {', '.join(found)}")
    chosen = [found[kind]] if kind is not None else list(found.values())
    return [e for r in chosen for e in r.entries()]


def list_command(
    kind: Annotated[
        str | None,
        typer.Argument(help="Only this registry (encoder, nli, extractor, subject, ...)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the entries as JSON.")] = False,
) -> None:
    """List every name a spec can use: encoders, NLI, extractors, subjects, metrics, ...

    A spec is ``name`` or ``name:<argument>`` (the first colon splits). Arguments naming model
    weights are a Hugging Face repo id (``org/name[@revision]``) or a local path (``dir:<path>``
    or starting with /, ./, ../, ~).
    """
    from pathgls.cli.catalog import load_catalog

    try:  # the shipped copy of the registries: no backend (torch, spaCy, ...) is imported
        entries = all_entries(kind, found=load_catalog())
    except ValueError as e:
        fail(Console(stderr=True), str(e))
    except PathGLSError as e:
        fail(Console(stderr=True), e)
    if as_json:
        typer.echo(json.dumps([e.to_dict() for e in entries], indent=2))
        return
    table = Table(title="pathgls registries (spec: name[:argument])")
    table.add_column("kind", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("argument", overflow="fold")
    table.add_column("description", overflow="fold")
    for entry in entries:
        table.add_row(entry.kind, entry.name, escape(entry.argument), escape(entry.description))
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``list`` to ``app``."""
    app.command("list")(list_command)
