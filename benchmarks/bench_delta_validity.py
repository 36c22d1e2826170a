"""Does the Stability Δ measure what pathologists call a change of report?

1. Validity. On the expert-scored report pairs of
   ``../shared/data/expert_scores/hare_expert_dev.tsv`` (reference vs candidate, scored 0–4 for
   clinical agreement), the Spearman correlation between −Δ(reference, candidate) and the expert
   score on the pairs with a non-zero score (the published protocol), with a percentile
   bootstrap 95 % CI over pairs, and how often each backend fell back (``dx``: a report without
   any diagnosis; ``embedding``: no diagnosis section on both sides, so whole reports;
   ``entity``: one report without any finding).
2. Sensitivity. On the hand-written controlled edits of ``benchmarks/data/delta_edits.jsonl``
   (rewordings, diagnosis flips, negated key findings of dev references), Δ(reference, edited).
3. Cost. Δ of 1,000 report pairs (dev pairs cycled; reports analysed beforehand, the analysis
   timed apart), against the embedding Δ in the same run.

Targets (issue 18): default Δ ρ ≥ 0.60; rewording controls move Δ ≤ 0.05 on average; diagnosis
flips and negated key findings ≥ 0.5; 1,000 pairs ≤ 30 s on 2 cores. The ``nli`` Δ needs an NLI
model with real weights (``--nli hf:<dir>``) and is reported as not run without one.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TSV = ROOT.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"
DEFAULT_EDITS = ROOT / "benchmarks" / "data" / "delta_edits.jsonl"
TARGET_RHO = 0.60
TARGET_CONTROL = 0.05
TARGET_CHANGE = 0.5
TARGET_SECONDS = 30.0


def bootstrap_ci(
    x: np.ndarray, y: np.ndarray, *, n: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile 95 % CI of Spearman ρ(x, y), resampling pairs."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n, len(x)))
    rhos = [spearmanr(x[i], y[i])[0] for i in idx]
    lo, hi = np.nanpercentile(rhos, [2.5, 97.5])
    return float(lo), float(hi)


def _fell_back(name: str) -> Callable[[object, object, str], bool | None]:
    """Whether a backend fell back on a pair (None: it has no fallback)."""
    from pathgls.stability.delta import findings

    if name.startswith("dx"):
        return lambda a, b, scope: scope != "diagnosis"
    if name.startswith("embedding (default"):
        return lambda a, b, scope: scope != "diagnosis"
    if name.startswith("entity"):
        return lambda a, b, scope: not findings(a) or not findings(b)
    return lambda a, b, scope: None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--edits", type=Path, default=DEFAULT_EDITS)
    ap.add_argument("--nli", default=None, help="hf:<dir> NLI model for the nli Δ (optional)")
    ap.add_argument("--include-zeros", action="store_true", help="keep expert score 0 pairs")
    ap.add_argument("--pairs", type=int, default=1000, help="pairs for the cost measurement")
    ap.add_argument(
        "--baseline-pairs",
        type=int,
        default=None,
        help="time the embedding Δ on only the first N of those pairs (a loaded machine); the "
        "ratio is then of the per-pair costs",
    )
    ap.add_argument(
        "--only",
        default=None,
        help="comma-separated backends to score (name prefixes: dx,embedding,entity); default all",
    )
    args = ap.parse_args(argv)

    sys.path.insert(0, str(ROOT / "benchmarks" / "data"))
    from check_delta_edits import apply, load, problems, references

    from pathgls.stability.delta import StabilityConfig, make_delta
    from pathgls.text import analyze_report, build_extractor
    from pathgls.text.embedders import build_embedder

    with open(args.tsv, newline="", encoding="utf-8") as fh:
        all_rows = list(csv.DictReader(fh, delimiter="\t"))
    rows = [r for r in all_rows if args.include_zeros or float(r["expert_score"]) > 0]
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
    default = StabilityConfig().delta
    specs = {
        "dx": (StabilityConfig(delta="dx"), True),
        "embedding (default: diagnosis sections)": (StabilityConfig(delta="embedding"), True),
        "embedding (whole reports)": (
            StabilityConfig(delta="embedding", diagnosis_section=False),
            True,
        ),
        "entity (soft, MiniLM)": (StabilityConfig(delta="entity"), True),
        "entity (exact concepts)": (StabilityConfig(delta="entity"), False),
    }
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        specs = {k: v for k, v in specs.items() if any(k.startswith(w) for w in wanted)}
    backends = {
        name: make_delta(cfg, embedder=embedder if emb else None)
        for name, (cfg, emb) in specs.items()
    }
    if args.nli:
        from pathgls.nli import build_nli

        backends["nli"] = make_delta(StabilityConfig(delta="nli"), nli=build_nli(args.nli))

    # --- 1. validity ---------------------------------------------------------------------
    print(f"\n{'backend':42s} {'ρ':>7s} {'95% CI':>16s} {'fallback':>12s} {'mean Δ':>7s} {'s':>5s}")
    results = {}
    for name, fn in backends.items():
        t = time.perf_counter()
        out = [fn(a, b) for a, b in zip(refs, cands, strict=True)]
        secs = time.perf_counter() - t
        deltas = np.array([d for d, _ in out])
        rho = float(spearmanr(-deltas, scores)[0])
        lo, hi = bootstrap_ci(-deltas, scores)
        fb = _fell_back(name)
        flags = [fb(a, b, s) for a, b, (_, s) in zip(refs, cands, out, strict=True)]
        n_fb = "—" if flags[0] is None else f"{sum(flags)}/{len(flags)}"
        results[name] = rho
        print(
            f"{name:42s} {rho:+.3f} [{lo:+.3f}, {hi:+.3f}] {n_fb:>12s} "
            f"{deltas.mean():7.3f} {secs:5.1f}"
        )
    if not args.nli:
        print(f"{'nli':42s} not run: needs an NLI model with real weights (--nli hf:<dir>)")

    # --- 2. sensitivity on controlled edits ------------------------------------------------
    refs_by_case = references(args.tsv)
    items = load(args.edits)
    bad = problems(items, refs_by_case)
    if bad:
        print(f"\nedits file has {len(bad)} form problem(s), e.g. {bad[0]}; sensitivity skipped")
    else:
        pairs = [apply(it, refs_by_case) for it in items]
        an = [(analyzed(a), analyzed(b)) for a, b in pairs]
        groups = defaultdict(list)
        for it in items:
            groups[(it["kind"], it["type"])].append(it["id"])
        print(f"\nsensitivity on {len(items)} hand-written edits: mean Δ(reference, edited)")
        header = f"{'kind/type':32s} {'n':>3s} " + " ".join(f"{n[:12]:>12s}" for n in backends)
        print(header)
        per_backend = {}
        for name, fn in backends.items():
            per_backend[name] = {
                it["id"]: fn(a, b)[0] for it, (a, b) in zip(items, an, strict=True)
            }
        for kind in ("control", "flip", "negation"):
            keys = sorted(k for k in groups if k[0] == kind)
            for key in [*keys, (kind, "ALL")]:
                ids = [i for k in keys for i in groups[k]] if key[1] == "ALL" else groups[key]
                cells = " ".join(
                    f"{np.mean([per_backend[n][i] for i in ids]):12.3f}" for n in backends
                )
                print(f"{key[0] + '/' + key[1]:32s} {len(ids):3d} {cells}")
            ids = [i for k in keys for i in groups[k]]
            if kind == "control":
                share = " ".join(
                    f"{np.mean([per_backend[n][i] <= TARGET_CONTROL for i in ids]):12.2f}"
                    for n in backends
                )
                print(f"{'  share of controls Δ ≤ 0.05':32s} {len(ids):3d} {share}")
            else:
                share = " ".join(
                    f"{np.mean([per_backend[n][i] >= TARGET_CHANGE for i in ids]):12.2f}"
                    for n in backends
                )
                print(f"{'  share with Δ ≥ 0.5':32s} {len(ids):3d} {share}")
        if any(n.startswith(default) for n in backends):
            dx_edits = per_backend[next(n for n in backends if n.startswith(default))]
            below = [
                (it["id"], it["type"], round(dx_edits[it["id"]], 3))
                for it in items
                if (it["kind"] == "control" and dx_edits[it["id"]] > TARGET_CONTROL)
                or (it["kind"] != "control" and dx_edits[it["id"]] < TARGET_CHANGE)
            ]
            print(f"default ({default}) items off target: {below}")

    # --- 3. cost -------------------------------------------------------------------------------
    cycle = [all_rows[i % len(all_rows)] for i in range(args.pairs)]
    t = time.perf_counter()
    fresh: dict[str, object] = {}
    for r in cycle:
        for text in (r["reference"], r["candidate"]):
            if text not in fresh:
                fresh[text] = analyze_report(text, extractor=extractor)
    t_an = time.perf_counter() - t
    timed = {}
    n_base = min(args.baseline_pairs or args.pairs, args.pairs)
    for name, n in (("dx", args.pairs), ("embedding", n_base)):
        t = time.perf_counter()  # the build counts: it embeds the dx vocabulary
        fn = make_delta(StabilityConfig(delta=name), embedder=embedder)  # fresh: caches cold
        for r in cycle[:n]:
            fn(fresh[r["reference"]], fresh[r["candidate"]])
        timed[name] = (time.perf_counter() - t, n)
    (t_dx, n_dx), (t_emb, n_emb) = timed["dx"], timed["embedding"]
    per_pair = (t_dx / n_dx) / (t_emb / n_emb)
    print(
        f"\ncost: {args.pairs} pairs ({len(fresh)} distinct reports, analysed in {t_an:.1f} s, "
        f"shared by every backend); Δ alone: dx {t_dx:.1f} s for {n_dx} pairs, embedding "
        f"{t_emb:.1f} s for {n_emb} pairs; per-pair cost ratio dx/embedding {per_pair:.2f}"
    )

    if not any(n.startswith(default) for n in results):
        return 0
    rho_default = results[next(n for n in results if n.startswith(default))]
    verdict = "MET" if rho_default >= TARGET_RHO else "NOT MET"
    print(
        f"\ntarget: ρ ≥ {TARGET_RHO:.2f} for the default Δ ({default}): {rho_default:+.3f}", end=""
    )
    print(f" → {verdict}")
    ok = t_dx <= TARGET_SECONDS
    print(
        f"target: dx Δ of {args.pairs} pairs ≤ {TARGET_SECONDS:.0f} s: {t_dx:.1f} s → "
        f"{'MET' if ok else 'NOT MET'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
