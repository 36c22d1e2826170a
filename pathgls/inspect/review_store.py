"""``RUN/labels.tsv``: the labels reviewers give on the review page, appended as they are given.

Each label is one line (card id, label, reviewer, time, note). A line is added under an
exclusive file lock (:func:`pathgls.io.lock.locked`, on ``labels.tsv.lock``) by rewriting the
file to a temporary name and renaming it over the old one (:func:`pathgls.io.atomic.
write_text_atomic`): a closed browser or a killed server leaves the file whole, and two
reviewers labelling at once both keep their lines. The file is a log — a card labelled twice
keeps its last label (:func:`pathgls.meta.labels.read_review_labels`).
"""

from __future__ import annotations

import csv
import io
import os
import time
from pathlib import Path

from pathgls.errors import ReviewError
from pathgls.meta.labels import REVIEW_COLUMNS, REVIEW_LABELS

LABELS_FILE = "labels.tsv"
#: Longest note kept (characters); longer notes are cut.
MAX_NOTE = 2000


def _clean(text: str, limit: int) -> str:
    """One line of TSV-safe text: tabs and line breaks become spaces; cut to ``limit``."""
    return " ".join(str(text).replace("\t", " ").splitlines())[:limit]


def append_label(
    run_dir: str | os.PathLike[str],
    *,
    card_id: str,
    label: str,
    reviewer: str,
    note: str = "",
    known: set[str] | None = None,
) -> Path:
    """Append one label to ``RUN/labels.tsv`` (created with its header), atomically and locked.

    Raises:
        ReviewError: an unknown card id (when ``known`` is given), a label word other than
            acceptable / unacceptable / skip, or the file cannot be written.
    """
    from pathgls.io.atomic import write_text_atomic
    from pathgls.io.lock import locked

    if label not in REVIEW_LABELS:
        raise ReviewError(f"label {label!r} is not one of {', '.join(REVIEW_LABELS)}")
    if known is not None and card_id not in known:
        raise ReviewError(f"no review card {card_id!r} in this run")
    path = Path(run_dir) / LABELS_FILE
    row = [
        _clean(card_id, 500),
        label,
        _clean(reviewer, 100) or "anonymous",
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        _clean(note, MAX_NOTE),
    ]
    buf = io.StringIO()
    csv.writer(buf, delimiter="\t", lineterminator="\n").writerow(row)
    try:
        with locked(path.with_name(LABELS_FILE + ".lock"), what="labels", wait_s=30):
            old = path.read_text(encoding="utf-8") if path.is_file() else ""
            if not old:
                old = "\t".join(REVIEW_COLUMNS) + "\n"
            elif not old.endswith("\n"):
                old += "\n"
            write_text_atomic(path, old + buf.getvalue())
    except OSError as e:
        raise ReviewError(f"cannot write {path}: {e}") from e
    return path


def current_labels(run_dir: str | os.PathLike[str]) -> dict[str, str]:
    """Card id → its last label word in ``RUN/labels.tsv`` (empty when there is no file)."""
    path = Path(run_dir) / LABELS_FILE
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            card, word = (row.get("card_id") or "").strip(), (row.get("label") or "").strip()
            if card and word in REVIEW_LABELS:
                out[card] = word
    return out
