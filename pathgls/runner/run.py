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
from pathgls.errors import ConfigError
from pathgls.io.atomic import remove_stale_temporaries
from pathgls.runner.items import WorkItem, discover, read_references
from pathgls.runner.local import Task, run_local
from pathgls.runner.manifest import new_manifest, now, write_manifest
from pathgls.runner.store import ResultsStore
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

    Raises:
        NoSlidesFoundError: nothing to evaluate under ``source``.
        ConfigError: the config cannot run (:func:`~pathgls.config.validate_run`), a bad
            references file, Ray missing.
        ModelNotFoundError: a model of the run is not available locally.
    """
    if not isinstance(config, PathGLSConfig):
        raise TypeError(f"config must be a PathGLSConfig, got {type(config).__name__}")
    validate_run(config)
    executor, address = config.run.executor, config.run.address
    refs = read_references(references) if references is not None else None
    items = discover(source, references=refs)
    if refs is not None:
        unknown = sorted(set(refs) - {i.item_id for i in items})
        if unknown:
            log.warning("references for unknown items ignored: %s", ", ".join(unknown[:20]))
    store = ResultsStore(out)
    store.root.mkdir(parents=True, exist_ok=True)
    for stale in remove_stale_temporaries(store.root):  # a killed run's half-written files
        log.info("removed %s, left by a killed writer", stale)
    _warn_if_config_changed(store.root, config)
    save_effective_config(config, store.root)
    tasks = plan_tasks(items, config, store)
    planned = len(items) * len(config.run.subjects)
    todo = sum(len(s) for _, s in tasks)
    manifest = new_manifest(source=str(source), config=config, executor=executor, address=address)
    manifest["counts"] = {"items": len(items), "planned": planned, "skipped": planned - todo}
    write_manifest(store.root, manifest)
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
                    card.subject,
                    card.status,
                    "; ".join(e.splitlines()[0] for e in card.errors),
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
    except BaseException:
        manifest.update(status="interrupted", finished=now())
        manifest["counts"]["evaluated"] = done
        write_manifest(store.root, manifest)
        raise
    manifest["counts"]["evaluated"] = done
    result = finish(store, items=items, config=config, manifest=manifest, plots=plots)
    result.skipped = planned - todo
    return result


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

    wanted = {(s, i.item_id) for i in items for s in config.run.subjects}
    cards = [c for c in store.load_cards() if (c.subject, c.item_id) in wanted]
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
    write_manifest(store.root, manifest)
    return RunResult(
        run_dir=store.root,
        planned=len(wanted),
        skipped=0,
        counts=counts,
        summary=table,
        files=files,
    )


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
