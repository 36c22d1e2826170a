"""The ``replay:<file.jsonl>`` subject: reports recorded earlier, looked up by item and condition.

Each non-blank line of the file is a JSON object with at least ``item_id``, ``condition`` and
``report`` (``text`` is accepted in place of ``report``); an optional ``model`` (or ``subject``)
names the model that wrote it. The file is read once, when the subject is built; images and
prompts are ignored at generation time. The subject's ``model_id`` is the model the records
name when they all name the same one (records naming none are not counted), else the file
name; its ``revision`` is the first 12 hex digits of the file's SHA-256, so caches and score
cards change when the recordings do.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pathgls.errors import ConfigError, ReplayFileError
from pathgls.jsontext import JSONTextError, loads_strict
from pathgls.subjects.base import SubjectConfig, SubjectError, register_subject

_SCHEME = "replay"


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


class ReplaySubject:
    """Reports recorded earlier, returned by (item id, condition).

    Args:
        path: The JSON-lines file.
        name: The spec it was built from (default: ``replay:<path>``).

    Raises:
        ReplayFileError: see :func:`read_replay_file`.
    """

    learned = True  # the records are some model's reports

    def __init__(self, *, path: str | Path, name: str | None = None) -> None:
        self.records = read_replay_file(path=path)
        self.name = name or f"{_SCHEME}:{path}"
        self.model_id = self.records.model or self.records.path.name
        self.revision: str | None = self.records.sha256[:12]

    def __len__(self) -> int:
        return len(self.records.reports)

    def __repr__(self) -> str:
        return f"ReplaySubject(path={str(self.records.path)!r}, records={len(self)})"

    def generate(
        self,
        images: Sequence[np.ndarray],
        prompt: str,
        *,
        seed: int = 0,
        system: str | None = None,
        item_id: str = "",
        condition: str = "original",
    ) -> str:
        """The report recorded for ``(item_id, condition)``; images, prompt and seed are ignored.

        Raises:
            SubjectError: no record, or an empty one, for this item and condition.
        """
        report = self.records.reports.get((item_id, condition))
        if report is None:
            others = sorted(c for i, c in self.records.reports if i == item_id)
            hint = (
                f"; the item is recorded under condition(s) {', '.join(map(repr, others))}"
                if others
                else "; the item is not in the file at all"
            )
            raise SubjectError(
                f"no replay record for item {item_id!r} under condition {condition!r} in "
                f"{self.records.path} ({len(self)} record(s)){hint}"
            )
        if not report.strip():
            raise SubjectError(
                f"the replay record for item {item_id!r} under condition {condition!r} in "
                f"{self.records.path} is empty"
            )
        return report


def replay_revision(spec: str) -> str | None:
    """The ``revision`` a ``replay:<file>`` subject will have (the first 12 hex digits of the
    file's SHA-256), without reading its records; None for another subject or an unreadable
    file. A run compares it with its cards' ``subject_revision``: an edited replay file is
    evaluated again instead of keeping the old recordings' scores."""
    if not spec.startswith(f"{_SCHEME}:"):
        return None
    digest = hashlib.sha256()
    try:
        with open(spec.split(":", 1)[1].strip(), "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()[:12]


@register_subject(
    _SCHEME,
    description="reports recorded earlier, looked up by item id and condition: replay:<file.jsonl>",
    argument="<file.jsonl>",
)
def build_replay_subject(argument: str, config: SubjectConfig) -> ReplaySubject:
    """The subject for ``replay:<argument>`` (``config`` is not used).

    Raises:
        ConfigError: no file named.
        ReplayFileError: see :func:`read_replay_file`.
    """
    del config  # nothing to configure: the reports are fixed
    path = argument.strip()
    if not path:
        raise ConfigError("replay subject names no file: write replay:<file.jsonl>")
    return ReplaySubject(path=path, name=f"{_SCHEME}:{path}")
