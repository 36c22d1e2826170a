"""The Ray executor: the same run spread over a Ray cluster (or a local Ray instance).

Each worker is a Ray actor that loads the run's models once (encoder, extractor, NLI,
embedder, subjects) and evaluates whole items — a slide's bag is built once and every subject
is scored on it. When the cluster has GPUs and the run has an encoder, each actor asks for one
GPU, so encoders run as GPU actors. The driver receives every item's ScoreCards as plain dicts
and writes them itself, atomically, as they arrive: killing the driver loses only the items
in flight, and the stored cards are the same files the local executor writes.

A lost item does not end the run: when a worker dies (killed, out of memory, a crash in a
native library) or a task raises, the item it was evaluating gets ``failed`` ScoreCards with
the reason, a dead worker is replaced (at most as many times as there are workers) and the run
goes on; a rerun redoes those items. A model that cannot be loaded is an error before any item,
raised with its own type, as the local executor raises it.

A lost cluster ends the run: the driver never waits without a deadline. When no result has come
for ``run.ray_health_s`` seconds it asks the cluster for its live nodes (itself under that
deadline); a cluster with no live node, or one that does not answer, for as long again raises
:class:`~pathgls.errors.ClusterError` (a raylet that died left the driver waiting for ever), so
the run ends with a ``failed`` manifest and a rerun resumes it.

Each actor asks for one CPU and computes on one thread (torch's intra-op threads are set to
its CPUs, so actors never oversubscribe a node); the local executor uses every core. Float32
tensor reductions summed in another order can differ in their last bit, so a Ray run's
similarities may differ from a local run's by a float32 rounding step (~1e-7); with the same
number of threads the two are identical (``tests/test_runner_ray.py`` checks both).

Workers must reach the slides and the run directory by the same paths (one machine, or a
shared file system) and have pathgls installed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from pathgls.config import PathGLSConfig
from pathgls.errors import ClusterError, ConfigError, PathGLSError
from pathgls.runner.local import ResultFn, Task
from pathgls.runner.ray_connect import probe_address
from pathgls.runner.store import ResultsStore
from pathgls.types import ScoreCard

log = logging.getLogger(__name__)


#: CPUs (and torch intra-op threads) of one worker actor.
CPUS_PER_WORKER = 1


class _Worker:
    """A Ray actor: the run's models, loaded once, and one item at a time."""

    def __init__(self, config: PathGLSConfig, run_dir: str, hare: bool) -> None:
        import torch

        from pathgls.runner.breaker import SubjectBreaker
        from pathgls.runner.models import load_models

        # Ray sets OMP_NUM_THREADS=1 only when the environment has none; be explicit
        torch.set_num_threads(CPUS_PER_WORKER)
        self.config = config
        self.store = ResultsStore(run_dir)
        self.error: Exception | None = None
        self.models: Any = None
        self.breaker = SubjectBreaker(config.run.subject_failure_limit)
        try:
            self.models = load_models(config, hare=hare)
        except PathGLSError as e:  # raised again in the driver, with its own type
            self.error = e

    def describe(self) -> tuple[dict[str, Any] | None, Exception | None]:
        """The models' description, or the error that kept them from loading."""
        if self.error is not None:
            return None, self.error
        return self.models.describe() | {"load_seconds": dict(self.models.load_seconds)}, None

    def evaluate(self, task: Task) -> list[dict[str, Any]]:
        from pathgls.runner.pipeline import evaluate_item

        if self.error is not None:
            raise self.error
        item, subjects = task
        cards = evaluate_item(
            item=item,
            models=self.models,
            config=self.config,
            store=self.store,
            subjects=subjects,
            breaker=self.breaker,
        )
        return [c.to_dict() for c in cards]


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
    config: PathGLSConfig,
    store: ResultsStore,
    on_result: ResultFn,
) -> dict[str, Any]:
    """Evaluate ``tasks`` on Ray actors; returns the models' description (for the manifest).

    The description has one more key than the local executor's, ``ray``: the number of
    workers, the seconds until all of them had loaded the models (``startup_s``, counted from
    the call, Ray's own start included when it is started here) and the workers replaced.

    Args:
        tasks: Items and the subjects still to do on each.
        config: The run's settings (shipped to every actor).
        store: The run directory (workers write bags, caches and grounding maps there).
        on_result: Called in the driver with each item's ScoreCards, as they finish.

    ``config.run.address`` is a running cluster (``ray://host:10001``, ``auto``), connected to
    for this run; None starts a local Ray instance for this run and stops it afterwards. A Ray
    already initialised in this process is used as it is, and left so. ``config.run.workers``
    is the number of actors (default: the cluster's CPUs, or GPUs when encoding on GPUs, at
    most the number of tasks and of the CPUs or GPUs the cluster has).

    Raises:
        ConfigError: Ray is not installed, or it cannot start.
        ClusterError: the cluster at ``config.run.address`` cannot be reached within
            ``config.run.ray_connect_s`` (:mod:`pathgls.runner.ray_connect`).
        ModelNotFoundError, ConfigError, PathGLSError: a worker could not load the models.
    """
    ray = _import_ray()
    if not tasks:
        return {}
    address, workers = config.run.address, config.run.workers
    t0 = time.perf_counter()
    # a local instance started here is stopped afterwards; a cluster connected to here is
    # only disconnected from (ray.shutdown leaves a cluster running)
    initialised_here = not ray.is_initialized()
    if initialised_here:
        options: dict[str, Any] = {}
        if address is None and workers:
            # a local instance honours the workers asked for, even above the cores
            options["num_cpus"] = max(workers * CPUS_PER_WORKER, os.cpu_count() or 1)
        options |= {
            "include_dashboard": False,
            "logging_level": logging.WARNING,
            "log_to_driver": False,
            # workers import the same pathgls as the driver (editable installs included)
            "runtime_env": {"env_vars": {"TOKENIZERS_PARALLELISM": "false"}},
        }
        try:
            if address is not None:  # a head answers within run.ray_connect_s, or an error
                probe_address(address, seconds=config.run.ray_connect_s)
            # no address: a fresh local instance, never a cluster that RAY_ADDRESS or the last
            # `ray start` on this machine (/tmp/ray/ray_current_cluster) points at — Ray's own
            # default would join that one and refuse the local instance's num_cpus
            ray.init(address=address or "local", **options)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ConfigError(f"cannot start or reach Ray at {address or 'local'}: {e}") from e
    try:
        return _run(ray, tasks, config, store, on_result, workers, t0)
    finally:
        if initialised_here:
            _with_deadline(ray.shutdown, config.run.ray_health_s, what="ray.shutdown()")


def _with_deadline(fn: Callable[[], Any], seconds: float, *, what: str) -> tuple[bool, Any]:
    """``(True, fn())`` when ``fn`` returns within ``seconds``, else ``(False, None)``; an
    exception of ``fn`` counts as no answer. ``fn`` runs in a daemon thread: a call into a
    cluster that lost its nodes may never return, and must not hold the run."""
    answer: list[Any] = []

    def call() -> None:
        try:
            answer.append(fn())
        except Exception as e:  # a cluster that is going away raises all kinds
            log.warning("%s failed: %s", what, _first_line(e))

    thread = threading.Thread(target=call, name=f"pathgls-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        log.warning("%s did not return within %.0f s", what, seconds)
        return False, None
    return (True, answer[0]) if answer else (False, None)


def _live_nodes(ray: Any, seconds: float) -> int | None:
    """Live nodes of the cluster, or None when it does not answer within ``seconds``."""
    ok, nodes = _with_deadline(ray.nodes, seconds, what="ray.nodes()")
    return sum(bool(n.get("Alive")) for n in nodes) if ok else None


def _wait_one(ray: Any, refs: list[Any], *, health_s: float) -> Any:
    """The first of ``refs`` that is ready; the cluster's health is checked while none is.

    Raises:
        ClusterError: no live node (or no answer) for ``health_s`` after a wait of
            ``health_s`` without a result.
    """
    lost_since: float | None = None
    while True:
        ready, _ = ray.wait(refs, num_returns=1, timeout=health_s)
        if ready:
            return ready[0]
        live = _live_nodes(ray, health_s)
        if live:
            lost_since = None  # a long item on a healthy cluster
            continue
        now = time.monotonic()
        lost_since = lost_since or now
        log.warning(
            "no result for %.0f s and the Ray cluster %s",
            health_s,
            "has no live node" if live == 0 else "does not answer",
        )
        if now - lost_since >= health_s:
            raise ClusterError(
                f"the Ray cluster has {'no live node' if live == 0 else 'stopped answering'} "
                f"(no result for over {2 * health_s:.0f} s; run.ray_health_s = {health_s:g}): "
                "its raylet or head died; the items done are kept, rerun to resume"
            )


def _first_line(error: BaseException) -> str:
    """``Type: first line of the message``; a task's error is told by what it raised."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        error = cause
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def _run(
    ray: Any,
    tasks: Sequence[Task],
    config: PathGLSConfig,
    store: ResultsStore,
    on_result: ResultFn,
    workers: int | None,
    t0: float,
) -> dict[str, Any]:
    from pathgls.runner.pipeline import failed_cards

    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0)) if config.encoder.name is not None else 0
    cpus = max(1, int(resources.get("CPU", os.cpu_count() or 1)))
    available = gpus if gpus else max(1, cpus // CPUS_PER_WORKER)
    n = workers or available
    if n > available:
        # an actor asking for more than the cluster has would wait forever
        log.warning(
            "%d Ray workers asked for, the cluster has %d %s: using %d",
            n,
            available,
            "GPUs" if gpus else "CPUs",
            available,
        )
        n = available
    n = max(1, min(n, len(tasks)))
    actor_cls = ray.remote(num_cpus=CPUS_PER_WORKER, num_gpus=1 if gpus else 0)(_Worker)
    hare = config.run.hare and any(item.reference is not None for item, _ in tasks)
    args = (config, str(store.root), hare)
    actors = [actor_cls.remote(*args) for _ in range(n)]
    health_s = config.run.ray_health_s
    try:
        description = _describe(ray, actors, health_s=health_s)
        startup_s = time.perf_counter() - t0
        replaced = _schedule(
            ray,
            tasks=tasks,
            actors=actors,
            new_actor=lambda: actor_cls.remote(*args),
            on_result=on_result,
            on_lost=lambda task, why: on_result(
                task[0],
                failed_cards(
                    item=task[0], subjects=task[1], error=why, config=config, models=description
                ),
            ),
            health_s=health_s,
        )
    finally:
        _with_deadline(lambda: [ray.kill(a) for a in actors], health_s, what="ray.kill()")
    return description | {"ray": {"workers": n, "startup_s": startup_s, "replaced": replaced}}


def _describe(ray: Any, actors: list[Any], *, health_s: float) -> dict[str, Any]:
    """The models' description once every actor has loaded them.

    Raises:
        PathGLSError (its own subclass): an actor could not load the models.
        ClusterError: the cluster lost its nodes meanwhile (see :func:`_wait_one`).
    """
    refs = [a.describe.remote() for a in actors]
    pending = list(refs)
    while pending:  # loading may take minutes; the cluster's health is checked meanwhile
        pending.remove(_wait_one(ray, pending, health_s=health_s))
    try:
        answers = ray.get(refs)
    except ray.exceptions.RayError as e:
        raise PathGLSError(f"a Ray worker could not load the run's models: {e}") from e
    for _description, error in answers:
        if error is not None:
            raise error
    description: dict[str, Any] = answers[0][0]
    return description


def _schedule(
    ray: Any,
    *,
    tasks: Sequence[Task],
    actors: list[Any],
    new_actor: Callable[[], Any],
    on_result: ResultFn,
    on_lost: Callable[[Task, str], None],
    health_s: float = 20.0,
) -> int:
    """Keep every actor busy until all tasks are done; returns how many actors were replaced.

    A dead actor's task is lost (``on_lost``) and the actor replaced, at most ``len(actors)``
    times in all; a replacement gets tasks once it has loaded the models. ``actors`` is
    updated in place (dead ones out, replacements in), so the caller can kill what is left.

    Raises:
        ClusterError: the cluster lost its nodes (see :func:`_wait_one`).
    """
    pending: deque[Task] = deque(tasks)
    idle = list(actors)
    in_flight: dict[Any, tuple[Any, Task]] = {}
    loading: dict[Any, Any] = {}  # describe() of a replacement → the replacement
    replacements_left = len(actors)
    replaced = 0

    def drop(actor: Any) -> None:
        nonlocal replacements_left, replaced
        actors.remove(actor)
        ray.kill(actor)
        if replacements_left and pending:
            replacements_left -= 1
            replaced += 1
            fresh = new_actor()
            actors.append(fresh)
            loading[fresh.describe.remote()] = fresh

    while pending or in_flight:
        while idle and pending:
            actor, task = idle.pop(), pending.popleft()
            in_flight[actor.evaluate.remote(task)] = (actor, task)
        if not in_flight and not loading:  # every worker died and none may be replaced
            why = "not evaluated: every Ray worker of the run died (see the errors above)"
            while pending:
                on_lost(pending.popleft(), why)
            break
        ref = _wait_one(ray, [*in_flight, *loading], health_s=health_s)
        if ref in loading:
            actor = loading.pop(ref)
            try:
                _, error = ray.get(ref)
            except ray.exceptions.RayError as e:
                error = e
            if error is None:
                idle.append(actor)
            else:
                log.warning("a replacement Ray worker failed to start: %s", _first_line(error))
                actors.remove(actor)
                ray.kill(actor)
            continue
        actor, task = in_flight.pop(ref)
        try:
            cards = ray.get(ref)
        except ray.exceptions.RayActorError as e:
            log.warning("Ray worker died on %s: %s", task[0].item_id, _first_line(e))
            on_lost(task, f"the Ray worker evaluating this item died: {_first_line(e)}")
            drop(actor)
            continue
        except ray.exceptions.RayError as e:  # the task raised; the worker is alive
            on_lost(task, f"the Ray task evaluating this item failed: {_first_line(e)}")
            idle.append(actor)
            continue
        idle.append(actor)
        on_result(task[0], [ScoreCard.from_dict(c) for c in cards])
    return replaced
