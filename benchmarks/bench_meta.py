"""Which report metric agrees with pathologists? The correlation table on the HARE expert set.

On ``../shared/data/expert_scores/hare_expert_dev.tsv`` (316 reference/candidate pairs scored
0–4 by pathologists, 130 with a non-zero score), each metric is computed for every pair and
correlated with the expert score under the published protocol (non-zero pairs, both scaled to
0–1: Pearson r, Spearman ρ, Kendall τ, R², RMSE; :func:`pathgls.meta.correlate`).

Targets (published figures are on the full set; this is its 316-pair development split):
- BLEU and ROUGE-L within ±0.08 of the published r (0.077, 0.048);
- offline HARE Pearson ≥ 0.50;
- our own score (DxAlign) Pearson ≥ 0.65 (published HARE with its GatorTronS models: 0.606);
- speed: all dev pairs through offline HARE in ≤ 30 s on 2 CPU cores (model loading apart).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TSV = ROOT.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"
PUBLISHED = {"bleu": 0.077, "rougeL": 0.048, "bertscore": 0.203, "hare": 0.606}
METRICS = ("bleu", "rouge1", "rougeL", "bertscore", "entity_f1", "hare", "dxalign")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--plots", type=Path, default=None, help="write scatter plots here")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(2)
    from pathgls.meta.correlate import correlate, read_expert_table, scatter_plot
    from pathgls.meta.metrics import MetricContext, compute_metrics

    rows, notes = read_expert_table(args.tsv)
    refs = [r.reference for r in rows]
    cands = [r.candidate for r in rows]
    expert = [r.expert for r in rows]
    print(f"{args.tsv.name}: {len(rows)} pairs, {sum(e > 0 for e in expert)} non-zero")
    for n in notes:
        print(f"  skipped: {n}")
    ctx = MetricContext()
    t = time.perf_counter()
    _ = ctx.extractor, ctx.embedder  # load the shared models outside the timings
    print(f"models loaded in {time.perf_counter() - t:.1f} s (lexicon extractor, MiniLM)")
    values, seconds = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in METRICS:
            if name == "hare":  # time HARE's own work only: its models are loaded first
                from pathgls.hare.models import build_hare_models

                ctx.get("hare_models", build_hare_models)
            t = time.perf_counter()
            values[name] = compute_metrics([name], references=refs, candidates=cands, context=ctx)[
                name
            ]
            seconds[name] = time.perf_counter() - t
    print(f"\n{'metric':10s} {'n':>4s} {'Pearson':>8s} {'Spearman':>9s} {'Kendall':>8s} "
          f"{'R²':>6s} {'RMSE':>6s} {'published r':>12s} {'time':>7s}")  # fmt: skip
    table = {}
    for name in METRICS:
        c = correlate(metric=name, values=values[name], expert=expert)
        table[name] = c
        pub = f"{PUBLISHED[name]:.3f}" if name in PUBLISHED else ""
        print(
            f"{name:10s} {c.n:4d} {c.pearson:8.3f} {c.spearman:9.3f} {c.kendall:8.3f} "
            f"{c.r2:6.3f} {c.rmse:6.3f} {pub:>12s} "
            f"{seconds[name]:6.1f}s"
        )
        if args.plots:
            args.plots.mkdir(parents=True, exist_ok=True)
            scatter_plot(
                args.plots / f"{name}.png", metric=name, values=values[name], expert=expert
            )
    n = table["bleu"].n
    half_ci = 1.96 / math.sqrt(n - 3)  # Fisher z: 95% half-width of an r near 0 at this n
    print(f"\n(95% interval of a Pearson r near 0 with n = {n}: about ±{half_ci:.2f})")
    checks = [
        ("BLEU within ±0.08 of 0.077", abs(table["bleu"].pearson - 0.077) <= 0.08),
        ("ROUGE-L within ±0.08 of 0.048", abs(table["rougeL"].pearson - 0.048) <= 0.08),
        ("offline HARE Pearson ≥ 0.50", table["hare"].pearson >= 0.50),
        ("DxAlign Pearson ≥ 0.65", table["dxalign"].pearson >= 0.65),
        (f"offline HARE on all {len(rows)} pairs ≤ 30 s", seconds["hare"] <= 30.0),
    ]
    for label, ok in checks:
        print(f"target: {label}: {'MET' if ok else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
