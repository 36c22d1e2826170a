"""Benchmark orchestration: plan, pipeline, executors, results store, manifest, summary."""
