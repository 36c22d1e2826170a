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
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pathgls.errors import ConfigError
from pathgls.errors import ReplayFileError as ReplayFileError  # re-exported
from pathgls.io.replay_file import ReplayRecords as ReplayRecords  # re-exported
from pathgls.io.replay_file import read_replay_file
from pathgls.subjects.base import SubjectConfig, SubjectError, register_subject

_SCHEME = "replay"


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
