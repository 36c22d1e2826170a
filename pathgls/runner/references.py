"""A run's reference reports: recorded in its config, checked against its items.

The references file decides two modules of a card (HARE and the report-side score), so a run
stores it in ``config.toml`` as an absolute path (``[run] references``) and its SHA-256 in
``manifest.json``: a run repeated from that config reads the same references, and a file that
changed since is visible. References whose ids match no item are named on the console and in the
manifest; references that match no item at all stop the run (it would score nothing against
them).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any

from pathgls.config import PathGLSConfig
from pathgls.errors import ConfigError
from pathgls.runner.items import WorkItem, read_references

#: Ids named in a warning before "and N more".
SHOWN_IDS = 10


def with_references(
    config: PathGLSConfig, references: str | os.PathLike[str] | None
) -> tuple[PathGLSConfig, dict[str, str] | None]:
    """The config with the run's references file recorded (absolute path), and its reports.

    ``references`` (the command line's) wins over ``config.run.references``; neither: no
    references.

    Raises:
        ConfigError: the file cannot be read as a references table.
    """
    chosen = references if references is not None else config.run.references
    if chosen is None:
        return config, None
    path = Path(chosen).expanduser().resolve()
    refs = read_references(path)
    run = dataclasses.replace(config.run, references=str(path))
    return dataclasses.replace(config, run=run), refs


def reference_notes(
    refs: dict[str, str] | None, items: list[WorkItem], *, path: str | None
) -> list[str]:
    """Warnings about references that match no item (naming them).

    Raises:
        ConfigError: no reference matches any item (nothing would be scored against them).
    """
    if refs is None:
        return []
    ids = {i.item_id for i in items}
    unknown = sorted(set(refs) - ids)
    if not unknown:
        return []
    if len(unknown) == len(refs):
        raise ConfigError(
            f"{path}: none of its {len(refs)} references matches an item of the run (ids "
            f"{_named(unknown)}; the items are {_named(sorted(ids))}): item ids are the slide "
            "file names without their suffix"
        )
    return [
        f"{path}: {len(unknown)} of {len(refs)} references match no item and are ignored: "
        f"{_named(unknown)}"
    ]


def references_record(path: str | None) -> dict[str, Any] | None:
    """``{path, sha256}`` of the references file for the manifest (None: none)."""
    if path is None:
        return None
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as e:  # read a moment ago; the manifest still names the file
        digest = f"unreadable: {e.strerror or e}"
    return {"path": path, "sha256": digest}


def _named(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


__all__ = ["reference_notes", "references_record", "with_references"]
