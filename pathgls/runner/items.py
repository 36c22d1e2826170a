"""What a benchmark run does: slides (or ROIs) × subjects, with stable ids and file names."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pathgls.errors import ConfigError, TableError
from pathgls.io.names import name_collisions, unique_ids
from pathgls.io.tables import read_table
from pathgls.tiling.readers import IMAGE_EXTENSIONS
from pathgls.tiling.slides import find_slides

#: Plain images are evaluated as ROIs (patch level); TIFFs and slide formats as whole slides.
ROI_EXTENSIONS = frozenset(s for s in IMAGE_EXTENSIONS if s not in (".tif", ".tiff"))


def slug(text: str) -> str:
    """A file-name-safe form of ``text`` (lossy: use :func:`~pathgls.io.names.safe_stem` for
    file names, which stays unique)."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return out or "item"


@dataclass(frozen=True)
class WorkItem:
    """One slide or ROI of the run, evaluated with every subject."""

    item_id: str  # unique in the run: the file stem, or the relative path (with extension)
    # when another input has the same stem; its files are named by ``safe_stem(item_id)``
    path: str  # the slide or image file
    kind: str  # "slide" or "roi"
    reference: str | None = None  # reference report (HARE), when one was given
    # what the plan found out about the item and its cards say (a slide changed since its
    # earlier cards were made)
    notes: tuple[str, ...] = ()


def plan_items(
    slides: Sequence[Path], *, root: Path | None = None, references: dict[str, str] | None = None
) -> list[WorkItem]:
    """Work items for ``slides``; ids from :func:`~pathgls.io.names.unique_ids`.

    A reference is looked up by the item id, then by the path below ``root`` without its
    extension (the id an earlier version gave when stems collided).

    Raises:
        ConfigError: two inputs would still share a file name (ids equal but for case, or
            equal once non-UTF-8 bytes are escaped).
    """
    ids = unique_ids(slides, root=root)
    clashes = name_collisions(ids)
    if clashes:
        raise ConfigError(
            "these inputs would share result files (names equal but for case, or equal once "
            "bytes that are not UTF-8 are written as \\xNN escapes): "
            + "; ".join(f"{a!r} and {b!r}" for a, b in clashes[:10])
            + "; rename one of each pair"
        )
    refs = references or {}
    items = []
    for p, item_id in zip(slides, ids, strict=True):
        kind = "roi" if p.suffix.lower() in ROI_EXTENSIONS else "slide"
        ref = refs.get(item_id)
        if ref is None and item_id != p.stem:
            ref = refs.get(Path(item_id).with_suffix("").as_posix())
        items.append(WorkItem(item_id=item_id, path=str(p), kind=kind, reference=ref))
    return items


def discover(
    path: str | os.PathLike[str], *, references: dict[str, str] | None = None
) -> list[WorkItem]:
    """Work items for a slide/ROI file or every slide under a directory.

    Raises:
        NoSlidesFoundError: nothing to evaluate.
    """
    root = Path(path)
    return plan_items(
        find_slides(root), root=root if root.is_dir() else None, references=references
    )


def read_references(path: str | os.PathLike[str]) -> dict[str, str]:
    """Reference reports from a TSV with the columns ``item_id`` and ``reference``, or a
    headerless TSV of exactly two columns (item id, reference).

    ``item_id`` is the slide's file stem (or ``slide``/``case_id`` as the column name).
    Escaped ``\\n`` in a reference become line breaks.

    Raises:
        ConfigError: unreadable file (:func:`~pathgls.io.tables.read_table`), missing columns,
            duplicate or empty ids.
    """
    p = Path(path)
    try:
        table = read_table(p, delimiter="\t", what="references")
    except TableError as e:
        raise ConfigError(str(e)) from e
    id_col = next((c for c in ("item_id", "slide", "case_id") if c in table.columns), None)
    if id_col is None and "reference" not in table.columns and len(table.columns) == 2:
        # headerless: two columns, item id then reference; the first line is a row
        c0, c1 = table.columns
        pairs = [(1, c0, c1)] + [
            (line, row.get(c0) or "", row.get(c1) or "")
            for line, row in zip(table.lines, table.rows, strict=True)
        ]
        return _references(p, pairs, "item id")
    if not table.rows:
        raise ConfigError(f"{p}: no reference rows (need a header with item_id and reference)")
    if id_col is None or "reference" not in table.columns:
        raise ConfigError(
            f"{p}: need the columns item_id (or slide, case_id) and reference, or exactly two "
            "columns without a header (id, reference); found "
            f"{', '.join(k for k in table.columns if k)}"
        )
    pairs = [
        (line, row.get(id_col) or "", row.get("reference") or "")
        for line, row in zip(table.lines, table.rows, strict=True)
    ]
    return _references(p, pairs, id_col)


def _references(p: Path, pairs: list[tuple[int, str, str]], id_name: str) -> dict[str, str]:
    """``{id: reference}`` from (line, id, reference) rows; refuses empty and repeated ids."""
    out: dict[str, str] = {}
    for line, raw_key, text in pairs:
        key = raw_key.strip()
        if not key:
            raise ConfigError(f"{p}:{line}: empty {id_name}")
        if key in out:
            raise ConfigError(f"{p}:{line}: {id_name} {key!r} appears twice")
        out[key] = text.replace("\\n", "\n")
    return out
