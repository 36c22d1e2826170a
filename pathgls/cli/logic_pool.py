"""Score many reports with Logic on a process pool, streaming results in input order.

Each worker builds its scorer once, through the factory it is given (``pathgls logic`` passes
the one it uses in-process, so whatever that factory builds — rules, a learned judge — is what
every worker runs), then scores the reports it is sent. A factory that fails is reported with
the first result, as the error it raised, so the command fails as it would in-process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from pathgls.errors import PathGLSError, ScorerBuildError

#: Builds the scorer a worker keeps (picklable: a module-level function or a partial of one).
ScorerFactory = Callable[[], Any]
#: Scores one report with the worker's scorer: ``(text, scorer) -> ModuleScore``.
ScoreFn = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Scored:
    """One report's result: its score, or the message of the PathGLSError it raised."""

    rid: str
    score: Any = None  # ModuleScore
    error: str | None = None
    scorer_name: str = ""


def default_workers() -> int:
    """The cores this process may run on (its affinity mask), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity masks on this platform
        return max(1, os.cpu_count() or 1)


def score_serially(
    items: Iterable[tuple[str, Any]], *, scorer: Any, score: ScoreFn
) -> Iterator[Scored]:
    """Score ``items`` in this process with ``scorer`` (one report, or ``--workers 1``)."""
    name = str(getattr(scorer, "name", ""))
    for rid, text in items:
        yield _score_one(rid, text, scorer, score, name)


def score_in_pool(
    items: Sequence[tuple[str, Any]],
    *,
    make_scorer: ScorerFactory,
    score: ScoreFn,
    workers: int,
) -> Iterator[Scored]:
    """Score ``items`` on ``workers`` processes; results come in input order as they finish.

    Raises:
        ScorerBuildError: the factory failed in a worker (raised before any result).
    """
    chunk = max(1, min(16, len(items) // (workers * 8)))
    with ProcessPoolExecutor(
        max_workers=workers, initializer=_init_worker, initargs=(make_scorer, score)
    ) as pool:
        try:
            for result in pool.map(_score_in_worker, items, chunksize=chunk):
                if isinstance(result, ScorerBuildError):
                    raise result
                yield result
        finally:  # an error or a closed consumer stops the queued work
            pool.shutdown(wait=True, cancel_futures=True)


def _score_one(rid: str, text: Any, scorer: Any, score: ScoreFn, name: str) -> Scored:
    try:
        return Scored(rid=rid, score=score(text, scorer), scorer_name=name)
    except PathGLSError as e:
        return Scored(rid=rid, error=str(e), scorer_name=name)


#: This worker process's scorer and score function (set once by :func:`_init_worker`; each
#: worker is its own process, so nothing is shared).
_worker: dict[str, Any] = {}


def _init_worker(make_scorer: ScorerFactory, score: ScoreFn) -> None:
    _worker["score"] = score
    try:
        scorer = make_scorer()
    except PathGLSError as e:  # reported with the first result: a failing initializer would
        _worker["error"] = ScorerBuildError(str(e))  # break the pool without the message
        return
    _worker["scorer"] = scorer
    _worker["name"] = str(getattr(scorer, "name", ""))


def _score_in_worker(item: tuple[str, Any]) -> Scored | ScorerBuildError:
    if "error" in _worker:
        return _worker["error"]
    rid, text = item
    return _score_one(rid, text, _worker["scorer"], _worker["score"], _worker["name"])
