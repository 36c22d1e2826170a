"""The Ray executor: the same run spread over a Ray cluster (or a local Ray instance).

Each worker is a Ray actor that loads the run's models once (encoder, extractor, NLI,
embedder, subjects) and evaluates whole items — a slide's bag is built once and every subject
is scored on it. When the cluster has GPUs and the run has an encoder, each actor asks for one
GPU, so encoders run as GPU actors. The driver receives every item's ScoreCards as plain dicts
and writes them itself, atomically, as they arrive: killing the driver loses only the items
in flight, and the stored cards are the same files the local executor writes.

Workers must reach the slides and the run directory by the same paths (one machine, or a
shared file system) and have pathgls installed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from pathgls.errors import ConfigError, PathGLSError
from pathgls.runner.config import RunConfig
from pathgls.runner.local import ResultFn, Task
from pathgls.runner.store import ResultsStore
from pathgls.types import ScoreCard

log = logging.getLogger(__name__)


class _Worker:
    """A Ray actor: the run's models, loaded once, and one item at a time."""

    def __init__(self, config: RunConfig, run_dir: str, hare: bool) -> None:
        from pathgls.runner.pipeline import load_models

        self.config = config
        self.store = ResultsStore(run_dir)
        self.models = load_models(config, hare=hare)

    def describe(self) -> dict[str, Any]:
        return self.models.describe()

    def evaluate(self, task: Task) -> tuple[str, list[dict[str, Any]]]:
        from pathgls.runner.pipeline import evaluate_item

        item, subjects = task
        cards = evaluate_item(
            item=item, models=self.models, config=self.config, store=self.store, subjects=subjects
        )
        return item.item_id, [c.to_dict() for c in cards]


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ConfigError(
            "the Ray executor needs Ray: pip install 'pathgls[ray]' (or use --executor local)"
        ) from e
    return ray


def run_ray(
    *,
    tasks: Sequence[Task],
    config: RunConfig,
    store: ResultsStore,
    on_result: ResultFn,
    address: str | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """Evaluate ``tasks`` on Ray actors; returns the models' description (for the manifest).

    Args:
        tasks: Items and the subjects still to do on each.
        config: The run's settings (shipped to every actor).
        store: The run directory (workers write bags, caches and grounding maps there).
        on_result: Called in the driver with each item's ScoreCards, as they finish.
        address: A running cluster (``ray://host:10001``, ``auto``); None starts a local Ray
            instance for this run and stops it afterwards.
        workers: Number of actors (default: the cluster's CPUs, or GPUs when encoding on GPUs,
            at most the number of tasks).

    Raises:
        ConfigError: Ray is not installed, or the cluster cannot be reached.
        PathGLSError: a worker could not load the models.
    """
    ray = _import_ray()
    if not tasks:
        return {}
    started_here = not ray.is_initialized() and address is None
    if not ray.is_initialized():
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                logging_level=logging.WARNING,
                log_to_driver=False,
                # workers import the same pathgls as the driver (editable installs included)
                runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}},
            )
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ConfigError(f"cannot start or reach Ray at {address or 'local'}: {e}") from e
    try:
        return _run(ray, tasks, config, store, on_result, workers)
    finally:
        if started_here:
            ray.shutdown()


def _run(
    ray: Any,
    tasks: Sequence[Task],
    config: RunConfig,
    store: ResultsStore,
    on_result: ResultFn,
    workers: int | None,
) -> dict[str, Any]:
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0)) if config.encoder is not None else 0
    cpus = max(1, int(resources.get("CPU", os.cpu_count() or 1)))
    n = workers or (gpus if gpus else cpus)
    n = max(1, min(n, len(tasks)))
    actor_cls = ray.remote(num_cpus=1, num_gpus=1 if gpus else 0)(_Worker)
    hare = any(item.reference is not None for item, _ in tasks)
    actors = [actor_cls.remote(config, str(store.root), hare) for _ in range(n)]
    try:
        description = ray.get(actors[0].describe.remote())
    except ray.exceptions.RayActorError as e:
        raise PathGLSError(f"a Ray worker could not load the run's models: {e}") from e
    by_id = {item.item_id: item for item, _ in tasks}
    pool = ray.util.ActorPool(actors)
    for item_id, cards in pool.map_unordered(lambda a, t: a.evaluate.remote(t), list(tasks)):
        on_result(by_id[item_id], [ScoreCard.from_dict(c) for c in cards])
    for a in actors:
        ray.kill(a)
    return description
