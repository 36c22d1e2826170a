"""Checks of what a run's subjects will be asked, made before any model is built.

A replay subject answers from a file of recorded reports, looked up by item id: a file that
records none of the run's items, or only empty reports for them, would fail every card after
the models have loaded. Here the file is read (standard library and :mod:`pathgls.io`) and
compared with the items' ids the run will find (file stems, as :mod:`pathgls.runner.items`
names them): no usable record at all is an error; items without a record, or with an empty
one, are a warning that names them (their cards fail, the others are scored).
"""

from __future__ import annotations

import os
from pathlib import Path

from pathgls.cli.preflight import SLIDE_SUFFIXES
from pathgls.errors import ConfigError, ReplayFileError

#: Ids named in a message before "and N more".
SHOWN = 8


def source_item_ids(source: str | os.PathLike[str]) -> list[str]:
    """The item ids a run of ``source`` evaluates (slide and image file stems), sorted."""
    p = Path(source)
    if p.is_file():
        return [p.stem]
    ids = set()
    for _, _, files in os.walk(p):
        for f in files:
            if not f.startswith(".") and Path(f).suffix.lower() in SLIDE_SUFFIXES:
                ids.add(Path(f).stem)
    return sorted(ids)


def check_replay_subjects(
    *, source: str | os.PathLike[str], subjects: tuple[str, ...] | list[str]
) -> list[str]:
    """Check each ``replay:<file>`` subject's records against the run's items.

    Returns:
        Warnings naming the items without a usable (non-empty, original-condition) record.

    Raises:
        ReplayFileError: the file cannot be read as a replay file, or records no usable
            original report for any item of the run.
    """
    from pathgls.io.replay_file import read_replay_file
    from pathgls.registry import parse_spec

    warnings: list[str] = []
    ids = source_item_ids(source)
    for text in subjects:
        try:
            spec = parse_spec(text, what="subject")
        except ConfigError:
            continue  # the subject registry says what is wrong with it
        if spec.kind.lower() != "replay" or not spec.arg:
            continue
        records = read_replay_file(path=spec.arg)
        recorded = {i for i, c in records.reports if c == "original"}
        empty = {
            i for (i, c), text in records.reports.items() if c == "original" and not text.strip()
        }
        usable = [i for i in ids if i in recorded and i not in empty]
        missing = [i for i in ids if i not in recorded]
        blank = [i for i in ids if i in empty]
        if not usable:
            why = (
                f"its original reports for {_named(blank)} are empty"
                if blank and not missing
                else f"it records no original report for the run's items {_named(ids)} (it "
                f"records {_named(sorted(recorded))})"
            )
            raise ReplayFileError(
                f"subject {spec!r}: {why}; every card would fail. Item ids are the slide file "
                "names without their suffix.",
                path=records.path,
            )
        if missing:
            warnings.append(
                f"subject {spec!r}: no original report recorded for {len(missing)} of "
                f"{len(ids)} items ({_named(missing)}): their cards will fail"
            )
        if blank:
            warnings.append(
                f"subject {spec!r}: empty original report recorded for {_named(blank)}: their "
                "cards will fail"
            )
    return warnings


def _named(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


__all__ = ["check_replay_subjects", "source_item_ids"]
