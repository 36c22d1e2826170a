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
from rich.markup import escape
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.registry import Registry, RegistryEntry


def registries() -> dict[str, Registry[Any]]:
    """Every registry of pathgls by kind, in pipeline order (imports their backends)."""
    from pathgls.baselines.report_side import REPORT_SIDE
    from pathgls.encoders import ENCODERS
    from pathgls.hare.models import HARE_EMBEDDERS, HARE_RELATIONS
    from pathgls.meta.metrics import METRICS
    from pathgls.nli import NLI_BACKENDS
    from pathgls.stability.delta import DELTA_BACKENDS
    from pathgls.subjects import SUBJECTS
    from pathgls.text import EXTRACTORS
    from pathgls.text.embedders import EMBEDDERS

    ordered = (
        ENCODERS,
        EXTRACTORS,
        NLI_BACKENDS,
        EMBEDDERS,
        SUBJECTS,
        DELTA_BACKENDS,
        HARE_RELATIONS,
        HARE_EMBEDDERS,
        REPORT_SIDE,
        METRICS,
    )
    return {r.kind: r for r in ordered}


def all_entries(kind: str | None = None) -> list[RegistryEntry[Any]]:
    """The entries of every registry (or of ``kind``), grouped by registry.

    Raises:
        ValueError: an unknown kind (the message lists the kinds).
    """
    found = registries()
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
    try:
        entries = all_entries(kind)
    except ValueError as e:
        fail(Console(stderr=True), str(e))
    if as_json:
        typer.echo(json.dumps([e.to_dict() for e in entries], indent=2))
        return
    table = Table(title="pathgls registries (spec: name[:argument])")
    table.add_column("kind", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("argument", overflow="fold")
    table.add_column("description", overflow="fold")
    for e in entries:
        table.add_row(e.kind, e.name, escape(e.argument), escape(e.description))
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``list`` to ``app``."""
    app.command("list")(list_command)
