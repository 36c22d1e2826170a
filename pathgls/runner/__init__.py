"""Benchmark orchestration: plan, pipeline, executors, results store, manifest, summary.

Owns the plan of a run (items × subjects), the per-item pipeline, the local and Ray
executors, the results store (ScoreCards, maps, errors log), the manifest and the summary.

May import: every scoring stage, :mod:`pathgls.fusion` and :mod:`pathgls.meta`.
"""
