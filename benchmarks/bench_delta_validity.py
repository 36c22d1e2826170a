"""Does the Stability Δ measure what pathologists call a change of report?

On the expert-scored report pairs of ``../shared/data/expert_scores/hare_expert_dev.tsv``
(reference vs candidate, scored 0–4 for clinical agreement), the Spearman correlation between
−Δ(reference, candidate) and the expert score, on the pairs with a non-zero score (the
published protocol). A Δ that tracks clinical disagreement correlates positively.

Target: ρ ≥ 0.40 for the default Δ (embedding, diagnosis sections when both reports have one).
Every backend that runs offline here is reported; the ``nli`` Δ needs an NLI model with real
weights (``--nli hf:<dir>``) and is reported as not run without one.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TSV = ROOT.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"
TARGET = 0.40


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--nli", default=None, help="hf:<dir> NLI model for the nli Δ (optional)")
    ap.add_argument("--include-zeros", action="store_true", help="keep expert score 0 pairs")
    args = ap.parse_args(argv)

    from pathgls.stability.delta import StabilityConfig, make_delta
    from pathgls.text import analyze_report, build_extractor
    from pathgls.text.embedders import build_embedder

    with open(args.tsv, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    rows = [r for r in rows if args.include_zeros or float(r["expert_score"]) > 0]
    scores = np.array([float(r["expert_score"]) for r in rows])
    print(f"pairs: {len(rows)} ({'all' if args.include_zeros else 'non-zero expert score'})")

    t0 = time.perf_counter()
    extractor = build_extractor("lexicon")
    cache: dict[str, object] = {}

    def analyzed(text: str):
        if text not in cache:
            cache[text] = analyze_report(text, extractor=extractor)
        return cache[text]

    refs = [analyzed(r["reference"]) for r in rows]
    cands = [analyzed(r["candidate"]) for r in rows]
    print(f"analysed {len(cache)} distinct reports in {time.perf_counter() - t0:.1f} s")
    embedder = build_embedder("minilm")
    backends = {
        "embedding (default: diagnosis sections)": make_delta(StabilityConfig(), embedder=embedder),
        "embedding (whole reports)": make_delta(
            StabilityConfig(diagnosis_section=False), embedder=embedder
        ),
        "entity (soft, MiniLM)": make_delta(StabilityConfig(delta="entity"), embedder=embedder),
        "entity (exact concepts)": make_delta(StabilityConfig(delta="entity")),
    }
    if args.nli:
        from pathgls.nli import build_nli

        backends["nli"] = make_delta(StabilityConfig(delta="nli"), nli=build_nli(args.nli))
    results = {}
    for name, fn in backends.items():
        t = time.perf_counter()
        out = [fn(a, b) for a, b in zip(refs, cands, strict=True)]
        deltas = np.array([d for d, _ in out])
        scopes = [s for _, s in out]
        rho, p = spearmanr(-deltas, scores)
        results[name] = rho
        n_diag = sum(s == "diagnosis" for s in scopes)
        print(
            f"{name:42s} ρ = {rho:+.3f} (p = {p:.1e}); mean Δ {deltas.mean():.3f}; "
            f"diagnosis-section pairs {n_diag}/{len(scopes)}; {time.perf_counter() - t:.1f} s"
        )
    if not args.nli:
        print(f"{'nli':42s} not run: needs an NLI model with real weights (--nli hf:<dir>)")
    default = results["embedding (default: diagnosis sections)"]
    verdict = "MET" if default >= TARGET else "NOT MET"
    print(f"\ntarget: ρ ≥ {TARGET:.2f} for the default Δ: {default:+.3f} → {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
