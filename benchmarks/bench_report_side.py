"""Does the report-side module keep DxAlign's agreement with pathologists after its [0, 1] map?

The ``report`` module fuses ``(DxAlign − floor) / (1 + w − floor)``, clipped to [0, 1]
(:mod:`pathgls.baselines.report_side`). The map is monotone, so Spearman and Kendall cannot
change; the clip at 0 (DxAlign below the unrelated-report cosine) can lower Pearson. On the
HARE expert development set (``../shared/data/expert_scores/hare_expert_dev.tsv``, 130 pairs
with a non-zero expert score: the published protocol), this prints raw DxAlign and the mapped
module side by side, measured in the same run, and how many pairs the clip touches.

Target: the mapped module's Pearson r within 0.02 of raw DxAlign's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TSV = ROOT.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(2)
    from pathgls.baselines.dxalign import DxAlignConfig, dxalign_scores
    from pathgls.baselines.report_side import ReportModels, build_report_scorer
    from pathgls.config import ReportConfig
    from pathgls.meta.correlate import correlate, read_expert_table
    from pathgls.text import build_extractor
    from pathgls.text.embedders import build_embedder

    rows, skipped = read_expert_table(args.tsv)
    if skipped:
        print(f"skipped {len(skipped)} rows of {args.tsv}")
    extractor, embedder = build_extractor("lexicon"), build_embedder("minilm")
    cfg = ReportConfig()
    scorer = build_report_scorer(
        config=cfg, models=ReportModels(extractor=extractor, embedder=embedder)
    )
    t0 = time.perf_counter()
    results = dxalign_scores(
        references=[r.reference for r in rows],
        candidates=[r.candidate for r in rows],
        extractor=extractor,
        embedder=embedder,
        config=DxAlignConfig(behaviour_weight=cfg.behaviour_weight),
    )
    seconds = time.perf_counter() - t0
    raw = [r.score for r in results]
    mapped = [scorer.calibrate(x) for x in raw]  # type: ignore[attr-defined]
    expert = [r.expert for r in rows]
    nonzero = [i for i, e in enumerate(expert) if e != 0]
    clipped_low = sum(1 for i in nonzero if mapped[i] == 0.0)
    clipped_high = sum(1 for i in nonzero if mapped[i] == 1.0)
    print(
        f"{len(rows)} pairs ({len(nonzero)} with a non-zero expert score); DxAlign {seconds:.1f} s"
    )
    print(f"{'metric':<22} {'n':>4} {'Pearson r':>10} {'Spearman':>9} {'Kendall':>8}")
    out = {}
    for name, values in (("DxAlign (raw)", raw), ("report module [0, 1]", mapped)):
        c = correlate(metric=name, values=values, expert=expert)
        out[name] = c
        print(f"{name:<22} {c.n:>4} {c.pearson:>10.3f} {c.spearman:>9.3f} {c.kendall:>8.3f}")
    print(f"clipped to 0: {clipped_low} of the non-zero pairs; to 1: {clipped_high}")
    gap = out["report module [0, 1]"].pearson - out["DxAlign (raw)"].pearson
    ok = abs(gap) <= 0.02
    print(f"Pearson(mapped) − Pearson(raw) = {gap:+.3f} → {'PASS' if ok else 'FAIL'} (|Δ| ≤ 0.02)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
