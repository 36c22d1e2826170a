"""Does the learned judge separate a contradiction from its look-alike control, pair by pair?

For every blind item of the chosen sets and split, the edited report is scored as Logic scores
it with the judge (:func:`pathgls.logic.judged.judge_report`), and two probabilities are kept:

* **gold** — the judge's probability on the pair the item was written as (the unit holding the
  edit against the unit holding the statement it is written against), when that pair is among
  the judged pairs (top-K similar or a check pair);
* **max** — the largest probability over all judged pairs of the report (what S_judge reads).

It prints, for contradiction items against their controls, the ROC AUC of each (0.5 = no
separation) and how often the gold pair was judged at all. Only dev halves should be read while
a judge is being developed.

Usage:
  python benchmarks/bench_judge_pairs.py --sets 5 --split dev [--judge DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "data"))

import blind_items  # noqa: E402


def auc(pos: list[float], neg: list[float]) -> float:
    """P(a random positive scores above a random negative), ties counting half."""
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def item_scores(items: list[dict], judge) -> list[dict]:
    from pathgls.config import LogicConfig
    from pathgls.logic.checks import run_checks
    from pathgls.logic.judged import judge_report
    from pathgls.text.case import build_case

    cfg = LogicConfig()
    texts = blind_items.base_texts()
    out = []
    for it in items:
        _, edited = blind_items.apply(it, texts)
        case = build_case(edited)
        jr = judge_report(case, run_checks(case, weights=cfg.weights), judge, cfg)
        a0 = it["at"][0]
        a1 = max(a0 + len(it["insert"]), a0 + 1)
        g0, g1 = it["against"]
        ua = {i for i, u in enumerate(jr.units) if u.start < a1 and a0 < u.end}
        ub = {i for i, u in enumerate(jr.units) if u.start < g1 and g0 < u.end}
        ps = [(p.judge, p.a, p.b) for p in jr.pairs if p.judge is not None]
        gold = [q for q, a, b in ps if (a in ua and b in ub) or (a in ub and b in ua)]
        out.append(
            {
                "kind": it["kind"],
                "gold": max(gold) if gold else None,
                "max": max((q for q, _, _ in ps), default=None),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="5")
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--judge", default=None, help="a trained judge directory (default: shipped)")
    args = ap.parse_args()
    import torch

    from pathgls.nli.judge import load_judge

    torch.set_num_threads(2)
    judge = load_judge(Path(args.judge) if args.judge else None)
    items = []
    for name in args.sets.split(","):
        items += [i for i in blind_items.load(name) if i["split"] == args.split]
    rows = item_scores(items, judge)
    for key in ("gold", "max"):
        pos = [r[key] for r in rows if r["kind"] == "contradiction" and r[key] is not None]
        neg = [r[key] for r in rows if r["kind"] == "control" and r[key] is not None]
        n_c = sum(r["kind"] == "contradiction" for r in rows)
        print(
            f"{key:4s} pair: AUC {auc(pos, neg):.3f} "
            f"(contradictions {len(pos)} of {n_c} judged, controls {len(neg)})"
        )


if __name__ == "__main__":
    main()
