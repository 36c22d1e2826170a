"""Acceptable / unacceptable labels from reviewers or from expert scores.

Two sources, one result (:class:`Labels`: id → 1.0 acceptable / 0.0 unacceptable):

* :func:`read_review_labels` — the ``labels.tsv`` that ``pathgls review`` appends to (columns
  ``card_id, label, reviewer, time, note``; label ``acceptable``, ``unacceptable`` or ``skip``).
  The file is a log: a card labelled twice keeps its **last** label (a reviewer who changes
  their mind), and a ``skip`` after a label withdraws it. Both are counted and reported.
* :func:`expert_labels` — any TSV/CSV with an expert score column and a cut-off: acceptable =
  score ≥ cut-off. The id is the ``id_columns`` joined with ``/`` (for the HARE expert table,
  ``case_id/candidate_slot``).

May import: core, :mod:`pathgls.io`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pathgls.errors import CalibrationError, TableError
from pathgls.io.tables import read_table

#: The columns of a review labels file, in order.
REVIEW_COLUMNS = ("card_id", "label", "reviewer", "time", "note")
#: Review label words → the 0/1 a calibration reads (skip: no label).
REVIEW_LABELS = {"acceptable": 1.0, "unacceptable": 0.0, "skip": None}


@dataclass(frozen=True)
class Labels:
    """0/1 labels by id, and what was noticed reading them."""

    values: dict[str, float]  # id → 1.0 acceptable, 0.0 unacceptable
    relabelled: tuple[str, ...] = ()  # ids labelled more than once (the last label counts)
    skipped: tuple[str, ...] = ()  # ids whose last word was skip
    source: str = ""  # how the labels were made, for the certificate

    def notes(self) -> list[str]:
        """One line per thing a user should know."""
        out = []
        if self.relabelled:
            out.append(
                f"{len(self.relabelled)} card(s) labelled more than once; the last label counts: "
                + ", ".join(self.relabelled[:5])
                + (" …" if len(self.relabelled) > 5 else "")
            )
        if self.skipped:
            out.append(f"{len(self.skipped)} card(s) skipped (no label)")
        return out


def is_review_table(path: str | os.PathLike[str]) -> bool:
    """True when the table's header has ``card_id`` (a ``pathgls review`` labels file)."""
    try:
        return "card_id" in read_table(Path(path), what="labels").columns
    except TableError:
        return False


def read_review_labels(path: str | os.PathLike[str]) -> Labels:
    """The labels of a ``pathgls review`` labels file (last label of a card wins).

    Raises:
        CalibrationError: unreadable file, missing columns, or a label word other than
            acceptable / unacceptable / skip (the line is named).
    """
    p = Path(path)
    try:
        table = read_table(p, required=("card_id", "label"), what="review labels")
    except TableError as e:
        raise CalibrationError(str(e)) from e
    last: dict[str, float | None] = {}
    seen: dict[str, int] = {}
    for line, row in zip(table.lines, table.rows, strict=True):
        card, word = (row["card_id"] or "").strip(), (row["label"] or "").strip().lower()
        if not card:
            raise CalibrationError(f"{p}: line {line}: empty card_id")
        if word not in REVIEW_LABELS:
            raise CalibrationError(
                f"{p}: line {line}: label {word!r} is not one of {', '.join(REVIEW_LABELS)}"
            )
        last[card] = REVIEW_LABELS[word]
        seen[card] = seen.get(card, 0) + 1
    return Labels(
        values={c: v for c, v in last.items() if v is not None},
        relabelled=tuple(c for c, k in seen.items() if k > 1),
        skipped=tuple(c for c, v in last.items() if v is None),
        source=f"review labels {p.name}",
    )


def expert_labels(
    path: str | os.PathLike[str],
    *,
    cutoff: float,
    score_column: str = "expert_score",
    id_columns: Sequence[str] = ("case_id", "candidate_slot"),
) -> Labels:
    """Acceptable (1.0) where the expert score is ≥ ``cutoff``, else unacceptable (0.0).

    Id columns missing from the header are left out of the id (the line number stands in when
    none is there). A row without a numeric score is left out.

    Raises:
        CalibrationError: unreadable file, no score column, no numeric score, or one id twice.
    """
    p = Path(path)
    if not math.isfinite(cutoff):
        raise CalibrationError(f"the cut-off must be a number; got {cutoff}")
    try:
        table = read_table(p, required=(score_column,), what="expert scores")
    except TableError as e:
        raise CalibrationError(str(e)) from e
    ids = [c for c in id_columns if c in table.columns]
    values: dict[str, float] = {}
    for line, row in zip(table.lines, table.rows, strict=True):
        try:
            score = float(row[score_column] or "")
        except ValueError:
            continue
        if not math.isfinite(score):
            continue
        key = "/".join((row[c] or "").strip() for c in ids) if ids else f"line{line}"
        if key in values:
            raise CalibrationError(f"{p}: line {line}: a second score for {key}")
        values[key] = 1.0 if score >= cutoff else 0.0
    if not values:
        raise CalibrationError(f"{p}: no numeric {score_column!r}")
    return Labels(values=values, source=f"{p.name}: {score_column} ≥ {cutoff:g}")
