"""The local executor: one process, models loaded once, items one after another."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pathgls.config import PathGLSConfig, validate_run
from pathgls.runner.breaker import SubjectBreaker
from pathgls.runner.items import WorkItem
from pathgls.runner.store import ResultsStore
from pathgls.types import ScoreCard

#: One unit of work: an item and the subjects still to do on it.
Task = tuple[WorkItem, list[str]]
#: Called in the driver with each finished item's ScoreCards (it writes them).
ResultFn = Callable[[WorkItem, list[ScoreCard]], None]


def run_local(
    *, tasks: Sequence[Task], config: PathGLSConfig, store: ResultsStore, on_result: ResultFn
) -> dict[str, Any]:
    """Evaluate ``tasks`` in this process; returns the models' description (for the manifest)
    with ``load_seconds``, how long each model took to load.

    Raises:
        ConfigError: the config cannot run (:func:`~pathgls.config.validate_run`).
        ModelNotFoundError, ConfigError: a model of the run cannot be loaded (before any item).
    """
    from pathgls.runner.models import load_models
    from pathgls.runner.pipeline import evaluate_item

    validate_run(config)
    hare = config.run.hare and any(item.reference is not None for item, _ in tasks)
    models = load_models(config, hare=hare)
    breaker = SubjectBreaker(config.run.subject_failure_limit)
    for item, subjects in tasks:
        cards = evaluate_item(
            item=item,
            models=models,
            config=config,
            store=store,
            subjects=subjects,
            breaker=breaker,
        )
        on_result(item, cards)
    return models.describe() | {"load_seconds": dict(models.load_seconds)}
