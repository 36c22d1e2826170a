"""``run_benchmark``: plan a run, skip what is done, execute, summarise, record the manifest."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pathgls.config import PathGLSConfig, save_effective_config, validate_run
from pathgls.errors import ConfigError, PathGLSError, RunIntegrityError, ScoreCardError
from pathgls.io.atomic import describe_os_error, remove_stale_temporaries
from pathgls.io.lock import RUN_LOCK, locked
from pathgls.io.names import name_collisions
from pathgls.io.redact import redact
from pathgls.io.rundir import check_out_dir, refuse_links
from pathgls.runner.items import WorkItem, discover, read_references
from pathgls.runner.local import Task, run_local
from pathgls.runner.manifest import new_manifest, now, write_manifest
from pathgls.runner.store import OWN_ENTRIES, ResultsStore, subject_dir_name
from pathgls.types import STATUSES, ScoreCard

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


def plan_tasks(items: list[WorkItem], config: PathGLSConfig, store: ResultsStore) -> list[Task]:
    """Each item with the subjects that have no finished ScoreCard yet."""
    tasks = []
    for item in items:
        todo = [s for s in config.run.subjects if not store.is_done(s, item.item_id)]
        if todo:
            tasks.append((item, todo))
    return tasks


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
    refs = read_references(references) if references is not None else None
    items = discover(source, references=refs)
    if refs is not None:
        unknown = sorted(set(refs) - {i.item_id for i in items})
        if unknown:
            log.warning("references for unknown items ignored: %s", ", ".join(unknown[:20]))
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
    hint = "rerun with `pathgls benchmark --wait` to wait for it, or use another --out"
    with locked(store.root / RUN_LOCK, what=what, wait_s=wait_s, hint=hint):
        return _run_locked(
            source=source,
            config=config,
            store=store,
            items=items,
            progress=progress,
            plots=plots,
        )


def _run_locked(
    *,
    source: str | os.PathLike[str],
    config: PathGLSConfig,
    store: ResultsStore,
    items: list[WorkItem],
    progress: ProgressFn | None,
    plots: bool,
) -> RunResult:
    executor, address = config.run.executor, config.run.address
    for stale in remove_stale_temporaries(store.root):  # a killed run's half-written files
        log.info("removed %s, left by a killed writer", stale)
    shown = redacted_config(config)  # what is stored: subject URLs without their secrets
    _warn_if_config_changed(store.root, shown)
    try:
        save_effective_config(shown, store.root)
    except OSError as e:
        raise _write_error(store.root, e) from e
    tasks = plan_tasks(items, config, store)
    planned = len(items) * len(config.run.subjects)
    todo = sum(len(s) for _, s in tasks)
    manifest = new_manifest(
        source=redact(str(source)), config=shown, executor=executor, address=address
    )
    manifest["counts"] = {"items": len(items), "planned": planned, "skipped": planned - todo}
    _write_manifest_or_raise(store.root, manifest)
    done = 0

    def on_result(item: WorkItem, cards: list[ScoreCard]) -> None:
        nonlocal done
        for card in cards:
            store.write_card(card)
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
        done += len(cards)
        if progress is not None:
            progress(item, cards, done, todo)

    try:
        if executor == "ray" and tasks:
            from pathgls.runner.ray_executor import run_ray

            manifest["models"] = run_ray(
                tasks=tasks, config=config, store=store, on_result=on_result
            )
        elif tasks:
            manifest["models"] = run_local(
                tasks=tasks, config=config, store=store, on_result=on_result
            )
        manifest["counts"]["evaluated"] = done
        result = finish(store, items=items, config=config, manifest=manifest, plots=plots)
    except BaseException as e:
        _record_end(store.root, manifest, error=e, evaluated=done)
        if isinstance(e, OSError):  # a summary, plot or card the disk refused
            raise _write_error(store.root, e) from e
        raise
    result.skipped = planned - todo
    return result


def _write_error(run_dir: Path, error: OSError) -> PathGLSError:
    """The error of a write in the run directory, naming the file and why (disk full, ...)."""
    where = error.filename or run_dir
    return PathGLSError(f"cannot write {where}: {describe_os_error(error)}")


def redacted_config(config: PathGLSConfig) -> PathGLSConfig:
    """``config`` with the secrets of its subject specs and Ray address masked (stored form).

    A run repeated from the stored ``config.toml`` reads credentials from the environment
    (``subject.api_key_env``); URL credentials must be given again.
    """
    import dataclasses

    run = dataclasses.replace(
        config.run,
        subjects=tuple(redact(s) for s in config.run.subjects),
        address=redact(config.run.address) if config.run.address else config.run.address,
    )
    return dataclasses.replace(config, run=run)


def _write_manifest_or_raise(run_dir: Path, manifest: dict[str, Any]) -> None:
    try:
        write_manifest(run_dir, manifest)
    except OSError as e:
        raise PathGLSError(
            f"cannot write {run_dir / 'manifest.json'}: {describe_os_error(e)}"
        ) from e


def _record_end(
    run_dir: Path, manifest: dict[str, Any], *, error: BaseException, evaluated: int
) -> None:
    """Mark the manifest ``interrupted`` or ``failed`` with the reason; never raises.

    The handler runs while ``error`` propagates: a second failure here (a read-only or full
    disk) is logged, never allowed to hide the first.
    """
    interrupted = isinstance(error, KeyboardInterrupt | SystemExit | GeneratorExit)
    reason = f"{type(error).__name__}: {error}".strip().rstrip(":")
    manifest.update(
        status="interrupted" if interrupted else "failed",
        finished=now(),
        reason=redact(reason.splitlines()[0] if reason else type(error).__name__),
    )
    manifest.setdefault("counts", {})["evaluated"] = evaluated
    try:
        write_manifest(run_dir, manifest)
    except Exception as e:  # the original error must come through, not this one
        log.error("could not record the run's end in %s: %s", run_dir / "manifest.json", e)


def finish(
    store: ResultsStore,
    *,
    items: list[WorkItem],
    config: PathGLSConfig,
    manifest: dict[str, Any],
    plots: bool = True,
) -> RunResult:
    """Summarise the run's cards (this plan's items and subjects), write files and manifest."""
    from pathgls.runner.summary import (
        plot_modules,
        plot_subjects,
        random_note,
        summarise,
        write_summary,
    )

    wanted = {(redact(s), i.item_id) for i in items for s in config.run.subjects}
    cards = _plan_cards(store, items=items, subjects=config.run.subjects)
    counts = {s: sum(c.status == s for c in cards) for s in STATUSES}
    table = summarise(cards)
    files = write_summary(table, out_dir=store.root)
    if plots:
        files["modules_plot"] = plot_modules(cards, path=store.root / "plots" / "modules.png")
        files["subjects_plot"] = plot_subjects(
            table, path=store.root / "plots" / "subjects.png", random_note=random_note(cards)
        )
    if manifest.get("models") is None:
        manifest["models"] = _models_from_cards(cards)
    manifest.setdefault("counts", {}).update(counts, cards=len(cards))
    manifest.update(status="finished", finished=now())
    _write_manifest_or_raise(store.root, manifest)
    return RunResult(
        run_dir=store.root,
        planned=len(wanted),
        skipped=0,
        counts=counts,
        summary=table,
        files=files,
    )


def _plan_cards(
    store: ResultsStore, *, items: list[WorkItem], subjects: tuple[str, ...]
) -> list[ScoreCard]:
    """The card of every (item, subject) pair of the plan, read from the path it belongs to.

    Cards elsewhere under ``scorecards/`` (another plan's items, an earlier version's file
    names) are not this run's and are left out.

    Raises:
        RunIntegrityError: a pair has no readable card, or its file holds another pair's card
            (cards written ≠ items × subjects).
    """
    cards, missing, foreign = [], [], []
    for item in items:
        for subject in subjects:
            path = store.card_path(subject, item.item_id)
            try:
                card = store.read_card(path)
            except (OSError, ScoreCardError):
                missing.append(f"{item.item_id} · {redact(subject)}")
                continue
            if (card.subject, card.item_id) != (redact(subject), item.item_id):
                foreign.append(f"{path.name} holds {card.item_id} · {card.subject}")
                continue
            cards.append(card)
    if missing or foreign:
        parts = [f"{len(missing)} missing (e.g. {missing[0]})"] if missing else []
        parts += [f"{len(foreign)} overwritten ({foreign[0]})"] if foreign else []
        raise RunIntegrityError(
            f"{store.root}: {len(cards)} ScoreCards for {len(items) * len(subjects)} item × "
            f"subject pairs: {'; '.join(parts)}"
        )
    return cards


def _models_from_cards(cards: list[ScoreCard]) -> dict[str, Any]:
    """Model provenance recorded in the cards (a rerun that had nothing left to evaluate)."""
    subjects = {
        c.subject: {
            "model_id": c.inputs.get("subject_model_id"),
            "revision": c.inputs.get("subject_revision"),
        }
        for c in cards
    }
    encoder = next((c.inputs.get("encoder") for c in cards if c.inputs.get("encoder")), None)
    return {"subjects": subjects, "encoder": encoder, "from": "stored ScoreCards"}


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
