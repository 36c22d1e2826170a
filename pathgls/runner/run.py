"""``run_benchmark``: plan a run, skip what is done, execute, summarise, record the manifest."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathgls.config import PathGLSConfig, save_effective_config, validate_run
from pathgls.errors import ConfigError, PathGLSError, RunIntegrityError
from pathgls.io.atomic import describe_os_error, remove_stale_temporaries
from pathgls.io.lock import RUN_LOCK, locked
from pathgls.io.names import name_collisions
from pathgls.io.redact import redact, refuse_masked_secrets
from pathgls.io.rundir import check_out_dir, refuse_files, refuse_links
from pathgls.runner.items import WorkItem, discover
from pathgls.runner.local import Task, run_local
from pathgls.runner.manifest import (
    Manifest,
    ModelsRecord,
    new_manifest,
    now,
    write_manifest,
)
from pathgls.runner.plan import RunPlan as RunPlan  # re-exported
from pathgls.runner.plan import plan_run, stored_card
from pathgls.runner.plan import plan_tasks as plan_tasks  # re-exported
from pathgls.runner.references import reference_notes, references_record, with_references
from pathgls.runner.runlog import RunTimings
from pathgls.runner.store import OWN_ENTRIES, OWN_FOLDERS, ResultsStore, subject_dir_name
from pathgls.types import STATUSES, ScoreCard

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

#: Called after each finished item with (item, its cards, pairs done so far, pairs to do).
ProgressFn = Callable[[WorkItem, list[ScoreCard], int, int], None]


@dataclass
class RunResult:
    """What a run did."""

    run_dir: Path
    planned: int  # (item, subject) pairs in the run
    skipped: int  # already finished by an earlier run
    counts: dict[str, int] = field(default_factory=dict)  # ok / partial / failed over all pairs
    summary: pd.DataFrame | None = None
    files: dict[str, Path] = field(default_factory=dict)
    cards: list[ScoreCard] = field(default_factory=list)  # the plan's cards, as stored
    timings: RunTimings = field(default_factory=RunTimings)
    # what the user must see beside the table (references that matched no item, ...)
    warnings: list[str] = field(default_factory=list)


def run_benchmark(
    *,
    source: str | os.PathLike[str],
    config: PathGLSConfig,
    out: str | os.PathLike[str],
    references: str | os.PathLike[str] | None = None,
    progress: ProgressFn | None = None,
    plots: bool = True,
    wait_s: float | None = 0.0,
) -> RunResult:
    """Evaluate every slide/ROI under ``source`` with every subject into the run directory ``out``.

    Finished ScoreCards of an earlier run in ``out`` are kept and skipped; failed and partial
    ones are redone (the subjects' earlier answers come from the cache). The complete effective
    ``config`` is written to ``out/config.toml`` (and copied into ``manifest.json``): a run
    from that file (``pathgls benchmark SOURCE --config OUT/config.toml``) repeats this one.

    Args:
        source: A slide/ROI file or a folder searched recursively.
        config: The whole configuration; ``config.run`` names the subjects and the executor
            (``executor``, ``workers``, ``address``).
        out: The run directory (created; a rerun resumes it).
        references: TSV ``item_id<TAB>reference``: HARE against these reports.
        progress: Called after each finished item.
        plots: Draw the summary plots.
        wait_s: When another process holds the run directory's lock: 0 refuse at once, a
            number wait that many seconds, None wait until it is free. A lock left by a
            killed run is taken over at once.

    Raises:
        LockedError: another live run holds ``out`` (the message names its pid, host, start).
        RunDirError: ``out`` is a file, lies inside the ``source`` folder, or holds a symbolic
            link where the run writes its own files (lock, logs, cards, ...).
        RunIntegrityError: the run's ScoreCards do not number items × subjects.
        NoSlidesFoundError: nothing to evaluate under ``source``.
        ConfigError: the config cannot run (:func:`~pathgls.config.validate_run`), a bad
            references file, Ray missing.
        ModelNotFoundError: a model of the run is not available locally.
    """
    if not isinstance(config, PathGLSConfig):
        raise TypeError(f"config must be a PathGLSConfig, got {type(config).__name__}")
    validate_run(config)
    refuse_masked_secrets(subjects=config.run.subjects, address=config.run.address)
    config, refs = with_references(config, references)
    items = discover(source, references=refs)
    notes = reference_notes(refs, items, path=config.run.references)
    subject_dirs = name_collisions([subject_dir_name(x) for x in config.run.subjects])
    if subject_dirs:
        raise ConfigError(
            "these subjects would share one results folder (they differ only in secrets or in "
            f"characters a file name cannot hold): {subject_dirs[0][0]!r} and "
            f"{subject_dirs[0][1]!r}"
        )
    store = ResultsStore(check_out_dir(out, inputs=[source]))
    try:
        store.root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PathGLSError(
            f"cannot create the run directory {store.root}: {describe_os_error(e)}"
        ) from e
    what = f"run directory {store.root}"
    refuse_links(store.root, OWN_ENTRIES, what=what)
    refuse_files(store.root, OWN_FOLDERS, what=what)
    hint = "rerun with `pathgls benchmark --wait` to wait for it, or use another --out"
    with locked(store.root / RUN_LOCK, what=what, wait_s=wait_s, hint=hint):
        return _run_locked(
            source=source,
            config=config,
            store=store,
            items=items,
            progress=progress,
            plots=plots,
            notes=notes,
        )


def _run_locked(
    *,
    source: str | os.PathLike[str],
    config: PathGLSConfig,
    store: ResultsStore,
    items: list[WorkItem],
    progress: ProgressFn | None,
    plots: bool,
    notes: list[str] | None = None,
) -> RunResult:
    executor, address = config.run.executor, config.run.address
    timings = RunTimings()
    for stale in remove_stale_temporaries(store.root):  # a killed run's half-written files
        log.info("removed %s, left by a killed writer", stale)
    shown = redacted_config(config)  # what is stored: subject URLs without their secrets
    _warn_if_config_changed(store.root, shown)
    try:
        save_effective_config(shown, store.root)
    except OSError as e:
        raise _write_error(store.root, e) from e
    with timings.phase("planning"):
        plan = plan_run(items, config, store)
    tasks = plan.tasks
    planned = len(items) * len(config.run.subjects)
    todo = sum(len(s) for _, s in tasks)
    log.info(
        "run %s: %d items × %d subjects = %d pairs; %d finished earlier, %d to evaluate (%s)",
        store.root,
        len(items),
        len(config.run.subjects),
        planned,
        planned - todo,
        todo,
        executor,
    )
    manifest = new_manifest(
        source=redact(str(source)), config=shown, executor=executor, address=address
    )
    manifest.counts.items, manifest.counts.planned = len(items), planned
    manifest.references = references_record(config.run.references)
    manifest.warnings = list(notes or [])
    manifest.counts.skipped = planned - todo
    _write_manifest_or_raise(store.root, manifest)
    before = _card_stamps(store, tasks)
    done = 0
    new_cards: list[ScoreCard] = []

    def on_result(item: WorkItem, cards: list[ScoreCard]) -> None:
        nonlocal done
        with timings.phase("writing cards"):
            for card in cards:
                new_cards.append(store.write_card_stored(card))
                if card.status != "ok":
                    store.log_error(
                        item_id=item.item_id,
                        subject=card.subject,
                        status=card.status,
                        errors=card.errors,
                    )
                    log.warning(
                        "%s · %s: %s: %s",
                        item.item_id,
                        redact(card.subject),
                        card.status,
                        redact("; ".join(e.splitlines()[0] for e in card.errors if e)),
                    )
        timings.add_item(item.item_id, new_cards[-len(cards) :] if cards else [])
        done += len(cards)
        if progress is not None:
            progress(item, cards, done, todo)

    try:
        with timings.phase("items"):
            if executor == "ray" and tasks:
                from pathgls.runner.ray_executor import run_ray

                manifest.models = _models_record(
                    run_ray(tasks=tasks, config=config, store=store, on_result=on_result)
                )
            elif tasks:
                manifest.models = _models_record(
                    run_local(tasks=tasks, config=config, store=store, on_result=on_result)
                )
        if manifest.models is not None:
            timings.add_models(manifest.models.load_seconds)
        manifest.counts.evaluated = done
        with timings.phase("summary"):
            result = finish(
                store,
                items=items,
                config=config,
                manifest=manifest,
                plots=plots,
                cards=[*plan.done, *new_cards],
                foreign=plan.foreign,
                evaluated=done,
                timings=timings,
            )
    except BaseException as e:
        # a signal can land between a card's write and the count: the disk has the last word
        evaluated = max(done, _cards_written(store, tasks, before))
        _record_end(store.root, manifest, error=e, evaluated=evaluated)
        if isinstance(e, OSError):  # a summary, plot or card the disk refused
            raise _write_error(store.root, e) from e
        raise
    timings.log_summary()
    result.skipped = planned - todo
    result.timings = timings
    result.warnings = [*(notes or []), *result.warnings]
    return result


def _card_stamps(store: ResultsStore, tasks: list[Task]) -> dict[Path, int | None]:
    """The modification stamp of every card the tasks will write (None: not there yet)."""
    stamps: dict[Path, int | None] = {}
    for item, subjects in tasks:
        for subject in subjects:
            path = store.card_path(subject, item.item_id)
            try:
                stamps[path] = path.stat().st_mtime_ns
            except OSError:
                stamps[path] = None
    return stamps


def _cards_written(store: ResultsStore, tasks: list[Task], before: dict[Path, int | None]) -> int:
    """How many of the tasks' cards were written since :func:`_card_stamps` took ``before``."""
    written = 0
    for path, stamp in _card_stamps(store, tasks).items():
        if stamp is not None and stamp != before.get(path):
            written += 1
    return written


def _models_record(description: dict[str, Any]) -> ModelsRecord | None:
    """The executor's description of the models it loaded (None: it loaded none)."""
    if not description:
        return None
    return ModelsRecord.from_dict(description)


def _write_error(run_dir: Path, error: OSError) -> PathGLSError:
    """The error of a write in the run directory, naming the file and why (disk full, ...)."""
    where = error.filename or run_dir
    return PathGLSError(f"cannot write {where}: {describe_os_error(error)}")


def redacted_config(config: PathGLSConfig) -> PathGLSConfig:
    """``config`` with the secrets of its subject specs and Ray address masked (stored form).

    A run repeated from the stored ``config.toml`` reads credentials from the environment
    (``subject.api_key_env``); URL credentials must be given again.
    """

    run = dataclasses.replace(
        config.run,
        subjects=tuple(redact(s) for s in config.run.subjects),
        address=redact(config.run.address) if config.run.address else config.run.address,
    )
    return dataclasses.replace(config, run=run)


def _write_manifest_or_raise(run_dir: Path, manifest: Manifest) -> None:
    try:
        write_manifest(run_dir, manifest)
    except OSError as e:
        raise PathGLSError(
            f"cannot write {run_dir / 'manifest.json'}: {describe_os_error(e)}"
        ) from e


def _record_end(run_dir: Path, manifest: Manifest, *, error: BaseException, evaluated: int) -> None:
    """Mark the manifest ``interrupted`` or ``failed`` with the reason; never raises.

    The handler runs while ``error`` propagates: a second failure here (a read-only or full
    disk) is logged, never allowed to hide the first.
    """
    interrupted = isinstance(error, KeyboardInterrupt | SystemExit | GeneratorExit)
    reason = f"{type(error).__name__}: {error}".strip().rstrip(":")
    manifest.status = "interrupted" if interrupted else "failed"
    manifest.finished = now()
    manifest.reason = redact(reason.splitlines()[0] if reason else type(error).__name__)
    manifest.counts.evaluated = evaluated
    try:
        write_manifest(run_dir, manifest)
    except Exception as e:  # the original error must come through, not this one
        log.error("could not record the run's end in %s: %s", run_dir / "manifest.json", e)


def finish(
    store: ResultsStore,
    *,
    items: list[WorkItem],
    config: PathGLSConfig,
    manifest: Manifest,
    plots: bool = True,
    cards: list[ScoreCard] | None = None,
    foreign: dict[tuple[str, str], str] | None = None,
    evaluated: int | None = None,
    timings: RunTimings | None = None,
) -> RunResult:
    """Summarise the run's cards (this plan's items and subjects), write files and manifest.

    Args:
        store: The run directory.
        items: The plan's items.
        config: The run's settings.
        manifest: The run's manifest (finished here).
        plots: Draw the summary plots (a rerun that evaluated nothing keeps the ones there).
        cards: The plan's cards as stored (kept from planning and written by this run); None
            reads them from the run directory.
        foreign: Pairs whose card file holds another pair's card, with what it holds.
        evaluated: Pairs this run evaluated (None: unknown, plots are redrawn).
        timings: The run's timings (written into the manifest).

    Raises:
        RunIntegrityError: a pair of the plan has no card on disk, or two share a file.
    """
    from pathgls.runner.summary import (
        plot_modules,
        plot_subjects,
        random_note,
        summarise,
        write_summary,
    )

    wanted = {(redact(s), i.item_id) for i in items for s in config.run.subjects}
    foreign = dict(foreign or {})
    if cards is None:
        cards = _read_plan_cards(store, items=items, subjects=config.run.subjects, out=foreign)
    cards = _check_plan_cards(
        store, cards, items=items, subjects=config.run.subjects, foreign=foreign
    )
    counts: dict[str, int] = {s: sum(c.status == s for c in cards) for s in STATUSES}
    table = summarise(cards, fusion=config.fusion)
    files = write_summary(table, out_dir=store.root)
    if plots:
        modules_png = store.root / "plots" / "modules.png"
        subjects_png = store.root / "plots" / "subjects.png"
        if evaluated == 0 and modules_png.is_file() and subjects_png.is_file():
            # nothing evaluated: the plots drawn from these same cards stand
            files.update(modules_plot=modules_png, subjects_plot=subjects_png)
        else:
            files["modules_plot"] = plot_modules(cards, path=modules_png)
            files["subjects_plot"] = plot_subjects(
                table, path=subjects_png, random_note=random_note(cards)
            )
    if manifest.models is None:
        manifest.models = _models_from_cards(cards)
    manifest.counts.ok, manifest.counts.partial = counts["ok"], counts["partial"]
    manifest.counts.failed, manifest.counts.cards = counts["failed"], len(cards)
    if timings is not None:
        manifest.timings = timings.to_dict()
    manifest.status, manifest.finished = "finished", now()
    _write_manifest_or_raise(store.root, manifest)
    return RunResult(
        run_dir=store.root,
        planned=len(wanted),
        skipped=0,
        counts=counts,
        summary=table,
        files=files,
        cards=cards,
    )


def _read_plan_cards(
    store: ResultsStore,
    *,
    items: list[WorkItem],
    subjects: tuple[str, ...],
    out: dict[tuple[str, str], str],
) -> list[ScoreCard]:
    """Every readable card of the plan's pairs, read from the path it belongs to (a file that
    holds another pair's card goes to ``out``)."""
    cards = []
    for item in items:
        for subject in subjects:
            path = store.card_path(subject, item.item_id)
            card = stored_card(path)
            if card is None:
                continue
            if (card.subject, card.item_id) != (redact(subject), item.item_id):
                out[(redact(subject), item.item_id)] = (
                    f"{path.name} holds {card.item_id} · {card.subject}"
                )
                continue
            cards.append(card)
    return cards


def _check_plan_cards(
    store: ResultsStore,
    cards: list[ScoreCard],
    *,
    items: list[WorkItem],
    subjects: tuple[str, ...],
    foreign: dict[tuple[str, str], str],
) -> list[ScoreCard]:
    """The card of every (item, subject) pair of the plan, in plan order.

    Cards of another plan's items are left out. Each pair's card must be on disk at the path
    it belongs to (the cards on disk are the run's record).

    Raises:
        RunIntegrityError: a pair has no card on disk, or its file holds another pair's card
            (cards written ≠ items × subjects).
    """
    by_pair = {(c.subject, c.item_id): c for c in cards}
    out, missing = [], []
    for item in items:
        for subject in subjects:
            pair = (redact(subject), item.item_id)
            if pair in foreign:
                continue
            card = by_pair.get(pair)
            if card is None or not store.card_path(subject, item.item_id).is_file():
                missing.append(f"{item.item_id} · {redact(subject)}")
                continue
            out.append(card)
    if missing or foreign:
        parts = [f"{len(missing)} missing (e.g. {missing[0]})"] if missing else []
        parts += [f"{len(foreign)} overwritten ({next(iter(foreign.values()))})"] if foreign else []
        raise RunIntegrityError(
            f"{store.root}: {len(out)} ScoreCards for {len(items) * len(subjects)} item × "
            f"subject pairs: {'; '.join(parts)}"
        )
    return out


def _models_from_cards(cards: list[ScoreCard]) -> ModelsRecord:
    """Model provenance recorded in the cards (a rerun that had nothing left to evaluate)."""
    subjects = {
        c.subject: {
            "model_id": c.inputs.get("subject_model_id"),
            "revision": c.inputs.get("subject_revision"),
            "learned": c.inputs.get("subject_learned"),
        }
        for c in cards
    }
    encoder = next((c.inputs.get("encoder") for c in cards if c.inputs.get("encoder")), None)
    return ModelsRecord(source="cards", subjects=subjects, encoder=encoder)


def _warn_if_config_changed(run_dir: Path, config: PathGLSConfig) -> None:
    """Log which keys differ from the config an earlier run in ``run_dir`` saved.

    Its finished ScoreCards are kept (they were made with the earlier values); the run's
    ``config.toml`` then holds this run's config.
    """
    from pathgls.config import config_to_dict, load_config

    path = run_dir / "config.toml"
    if not path.is_file():
        return
    try:
        before = config_to_dict(load_config(path))
    except ConfigError as e:
        log.warning("the earlier config of this run directory cannot be read: %s", e)
        return
    changed = _diff(before, config_to_dict(config))
    if changed:
        log.warning(
            "the config differs from the one this run directory was made with (%s); finished "
            "ScoreCards keep the earlier values",
            ", ".join(changed[:20]),
        )


def _diff(a: Any, b: Any, where: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested dicts."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return [] if a == b else [where]
    out: list[str] = []
    for key in sorted(set(a) | set(b)):
        sub = f"{where}.{key}" if where else key
        out += _diff(a.get(key), b.get(key), sub)
    return out
