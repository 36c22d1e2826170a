"""Reading a replay file (``replay:<file.jsonl>``): JSON lines of recorded reports.

The one parser of the format (see :mod:`pathgls.subjects.replay`); it imports nothing heavy, so
a command checks a replay file against its items before it loads any model.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathgls.errors import ReplayFileError
from pathgls.jsontext import JSONTextError, loads_strict


@dataclass(frozen=True)
class ReplayRecords:
    """The contents of a replay file."""

    path: Path
    # (item_id, condition) → recorded report.
    reports: dict[tuple[str, str], str]
    # The one model the records name, or None (none named, or several).
    model: str | None
    # SHA-256 of the file's bytes, hex.
    sha256: str


def _text_field(record: dict[str, Any], key: str, *, path: Path, line: int) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    # an item id may be written as a number (a case number); a report never is
    allowed = str | int if key == "item_id" else str
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise ReplayFileError(
            f"{path}, line {line}: {key!r} must be a string, got {type(value).__name__} "
            f"{json.dumps(value)[:40]}",
            path=path,
            line=line,
        )
    return str(value)


def _parse_line(raw: str, *, path: Path, line: int) -> tuple[str, str, str, str | None]:
    """``(item_id, condition, report, model)`` of one line."""
    try:
        record = loads_strict(raw)
    except JSONTextError as e:  # invalid, a key given twice, nested too deeply
        why = "JSON nested too deeply to read" if "deep" in str(e) else f"invalid JSON ({e})"
        raise ReplayFileError(f"{path}, line {line}: {why}", path=path, line=line) from e
    if not isinstance(record, dict):
        raise ReplayFileError(
            f"{path}, line {line}: expected a JSON object, got {type(record).__name__}",
            path=path,
            line=line,
        )
    item_id = _text_field(record, "item_id", path=path, line=line)
    condition = _text_field(record, "condition", path=path, line=line)
    report = _text_field(record, "report", path=path, line=line)
    alias = _text_field(record, "text", path=path, line=line)
    if report is not None and alias is not None and report != alias:
        raise ReplayFileError(
            f"{path}, line {line}: 'report' and 'text' differ; give one of them",
            path=path,
            line=line,
        )
    report = report if report is not None else alias
    if item_id is None or condition is None or report is None:
        fields = (("item_id", item_id), ("condition", condition), ("report", report))
        missing = [k for k, v in fields if v is None]
        raise ReplayFileError(
            f"{path}, line {line}: missing key(s) {', '.join(missing)} "
            "(each record needs item_id, condition and report or text)",
            path=path,
            line=line,
        )
    model = _text_field(record, "model", path=path, line=line)
    if model is None:
        model = _text_field(record, "subject", path=path, line=line)
    return item_id, condition, report, model


def read_replay_file(*, path: str | Path) -> ReplayRecords:
    """Read and check a replay file (JSON lines; see the module docstring).

    Raises:
        ReplayFileError: the file is missing or unreadable, a line is not a JSON object, a
            record lacks a key, or two records for the same (item id, condition) differ.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ReplayFileError(f"replay file not found: {p}", path=p)
    try:
        data = p.read_bytes()
        text = data.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ReplayFileError(f"cannot read replay file {p}: {e}", path=p) from e
    reports: dict[tuple[str, str], str] = {}
    first_line: dict[tuple[str, str], int] = {}
    models: set[str] = set()
    # JSON Lines are separated by "\n" only: str.splitlines() also splits on \x1c-\x1e, \x85,
    # \u2028 ... inside a line and would misnumber the lines after it
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        item_id, condition, report, model = _parse_line(raw, path=p, line=number)
        key = (item_id, condition)
        if key in reports and reports[key] != report:
            raise ReplayFileError(
                f"{p}, line {number}: item {item_id!r} under condition {condition!r} was "
                f"already recorded on line {first_line[key]} with a different report",
                path=p,
                line=number,
            )
        reports.setdefault(key, report)
        first_line.setdefault(key, number)
        if model is not None:
            models.add(model)
    if not reports:
        raise ReplayFileError(f"replay file {p} holds no records", path=p)
    model_name = next(iter(models)) if len(models) == 1 else None
    return ReplayRecords(
        path=p, reports=reports, model=model_name, sha256=hashlib.sha256(data).hexdigest()
    )


__all__ = ["ReplayRecords", "read_replay_file"]
