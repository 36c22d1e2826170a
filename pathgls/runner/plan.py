"""The plan of a run: which (item, subject) pairs are finished and which are still to do.

A pair is finished when its stored card is ``ok`` and its input file is the one the card was
made from (:mod:`pathgls.tiling.identity`); nothing here opens a slide or reads a pixel.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

from pathgls.config import PathGLSConfig
from pathgls.errors import PathGLSError, ScoreCardError, SlideError
from pathgls.io.redact import redact
from pathgls.runner.items import WorkItem
from pathgls.runner.local import Task
from pathgls.runner.store import ResultsStore
from pathgls.subjects.replay import replay_revision
from pathgls.tiling.identity import FileIdentity, IdentityCheck, check_identity
from pathgls.types import CardInputs, ScoreCard

log = logging.getLogger("pathgls.runner.run")


@dataclass
class RunPlan:
    """What a run has to do, and the finished cards of earlier runs it keeps."""

    tasks: list[Task]
    done: list[ScoreCard]  # finished cards (ok, their input unchanged), as stored
    # card files holding another pair's card (colliding names): refused, never overwritten
    foreign: dict[tuple[str, str], str] = field(default_factory=dict)


def plan_tasks(items: list[WorkItem], config: PathGLSConfig, store: ResultsStore) -> list[Task]:
    """Each item with the subjects that have no finished ScoreCard yet (see :func:`plan_run`)."""
    return plan_run(items, config, store).tasks


def plan_run(items: list[WorkItem], config: PathGLSConfig, store: ResultsStore) -> RunPlan:
    """Each item with the subjects still to do, and the finished cards that are kept.

    A card is finished when its status is ``ok`` and its input file is the one it was made
    from: its size, mtime and header hash equal the ``slide_identity`` the card stored (a
    touched file — new mtime, same SHA-256 — is hashed once and its cards' identity updated;
    ``run.verify`` hashes every file). An item whose file changed is redone for every subject,
    with a warning on its new cards. Cards of earlier versions without an identity are kept.
    No slide is opened and no pixel is read here.
    """
    tasks: list[Task] = []
    done: list[ScoreCard] = []
    foreign: dict[tuple[str, str], str] = {}
    checks: dict[tuple[str, FileIdentity], IdentityCheck | None] = {}
    # what a subject replays is part of its identity: an edited replay file is evaluated again
    revisions = {s: replay_revision(s) for s in config.run.subjects}
    for item in items:
        kept: list[ScoreCard] = []
        notes: list[str] = []
        for subject in config.run.subjects:
            path = store.card_path(subject, item.item_id)
            card = stored_card(path)
            if card is None or card.status != "ok":
                continue
            if (card.subject, card.item_id) != (redact(subject), item.item_id):
                foreign[(redact(subject), item.item_id)] = (
                    f"{path.name} holds {card.item_id} · {card.subject}"
                )
                continue
            made_by = card.inputs.get("subject_revision")
            if revisions[subject] is not None and made_by not in (None, revisions[subject]):
                continue  # the replayed file changed since this card was made: redone
            stored = FileIdentity.from_dict(card.inputs.get("slide_identity") or {})
            if stored is None:  # a card from before identities were stored
                kept.append(card)
                continue
            key = (item.path, stored)
            if key not in checks:
                checks[key] = _check(item, stored, verify=config.run.verify)
            check = checks[key]
            if check is None or check.status == "same":
                kept.append(card)
            elif check.status == "touched":
                kept.append(_with_identity(store, card, check.current))
            else:
                note = (
                    f"{Path(item.path).name} changed since its earlier ScoreCards were made "
                    f"({check.reason}): recomputed"
                )
                if note not in notes:
                    notes.append(note)
                    log.warning("%s: %s", item.item_id, note)
        finished = {c.subject for c in kept}
        todo = [
            s
            for s in config.run.subjects
            if redact(s) not in finished and (redact(s), item.item_id) not in foreign
        ]
        done += kept
        if todo:
            tasks.append((dataclasses.replace(item, notes=(*item.notes, *notes)), todo))
    return RunPlan(tasks=tasks, done=done, foreign=foreign)


def stored_card(path: Path) -> ScoreCard | None:
    """The card stored at ``path``, or None when there is none or it cannot be read."""
    try:
        return ScoreCard.from_json(path.read_bytes())
    except (OSError, ScoreCardError):
        return None


def _check(item: WorkItem, stored: FileIdentity, *, verify: bool) -> IdentityCheck | None:
    """The item's file against a card's stored identity; None when the file is gone (its
    cards stay the record: a rerun never throws away results for a missing input)."""
    try:
        return check_identity(item.path, stored, verify=verify)
    except SlideError as e:
        log.warning("%s: kept its finished ScoreCards; cannot check its file: %s", item.item_id, e)
        return None


def _with_identity(store: ResultsStore, card: ScoreCard, identity: FileIdentity) -> ScoreCard:
    """``card`` with the file's new identity (same content, new mtime), written back."""
    inputs: CardInputs = {**card.inputs, "slide_identity": identity.to_dict()}
    updated = dataclasses.replace(card, inputs=inputs)
    try:
        return store.write_card_stored(updated)
    except PathGLSError as e:  # the card stays valid; the next run hashes the file again
        log.warning("%s: %s", card.item_id, e)
        return card
