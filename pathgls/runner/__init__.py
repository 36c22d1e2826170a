"""Benchmark orchestration: plan, pipeline, executors, results store, manifest, summary.

Owns the plan of a run (items × subjects, finished cards recognised by their input's identity),
the models a worker loads once, the per-item pipeline (a loop over the registry of score
modules, :func:`pathgls.modules.scoring_order`; the built-in modules' hooks in
:mod:`pathgls.runner.scorers`), the subject circuit breaker, the local
and Ray executors, the results store (ScoreCards, maps, errors log), the typed manifest, the
run log's timings and the summary.

May import: every scoring stage, :mod:`pathgls.fusion` and :mod:`pathgls.meta`.
"""
