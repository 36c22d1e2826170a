"""Logic with the learned judge: blind contradiction sets, real reports, ablation, throughput.

Scores every text once and keeps, per judged pair, the judge's own probability and the
strongest check that fired on it, so the three modes of the ablation come from one pass:

* ``rules``  — today's offline default (case model + checks, ``RulesNLI``), its own S_l;
* ``judge``  — S_l = 1 − max over pairs of the judge's calibrated probability (checks ignored);
* ``fused``  — S_l = min(S_rules, S_judge) (the shipped formula, ``pathgls.logic.judged``;
  ``judge_top_k`` = 1).

Blind sets (``benchmarks/data/blind_items.py``): a contradiction is **detected** when
S_l(edited) < 0.8 and below S_l(base); a control is **flagged** on the same rule; a base is
flagged when S_l(base) < 0.8; a missing S_l counts as not detected / not flagged (and is
counted). Real reports: the share flagged (S_l < 0.8) and unscored, per organ.

``--tune`` prints a grid of judge thresholds τ on the chosen data (dev halves only, or
``--real judge-validation``: 150 TCGA rows the judge never trains on) with detection, controls
and bases flagged, for choosing τ; the shipped τ is in
``pathgls/resources/judge/judge.json``.

Usage:
  python benchmarks/bench_logic_judge.py --sets 1,2,3,5 --split dev [--tune]
  python benchmarks/bench_logic_judge.py --sets 1,2,3,5 --split test          # once, frozen
  python benchmarks/bench_logic_judge.py --real quarter3-unread [--limit N]
  python benchmarks/bench_logic_judge.py --throughput 2000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from multiprocessing import get_context
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "data"))
sys.path.insert(0, str(HERE))

import blind_items  # noqa: E402

THRESHOLD = 0.8
#: Judge thresholds ``--tune`` prints (dev data only).
TUNE_GRID = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.88, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995]
_JUDGE = None


def _init(judge_dir: str | None) -> None:
    global _JUDGE
    import torch

    torch.set_num_threads(1)
    from pathgls.nli.judge import load_judge

    _JUDGE = load_judge(Path(judge_dir) if judge_dir else None)


def record(text: str) -> dict:
    """Rules S_l and the judged pairs (judge p, check p) of one text."""
    from pathgls.config import LogicConfig
    from pathgls.logic import logic_score
    from pathgls.logic.checks import run_checks
    from pathgls.logic.judged import judge_report
    from pathgls.nli.rules import RulesNLI
    from pathgls.text.case import build_case

    cfg = LogicConfig()
    case = build_case(text)
    rules = logic_score(report=case, nli=RulesNLI()).value
    comps = run_checks(case, weights=cfg.weights)
    jr = judge_report(case, comps, _JUDGE, cfg)
    return {
        "rules": rules,
        "pairs": [(p.judge, p.check_probability) for p in jr.pairs],
        "units": len(jr.units),
    }


def _job(task: tuple[str, list[str]]) -> tuple[str, list[dict]]:
    key, texts = task
    return key, [record(t) for t in texts]


def s_l(rec: dict, mode: str, tau: float) -> float | None:
    """S_l of a record under a mode and judge threshold (``pathgls.logic.judged``'s formula)."""
    if mode == "rules":
        return rec["rules"]
    from pathgls.logic.judged import judge_calibrated

    ps = [p for p, _ in rec["pairs"] if p is not None]
    judge = 1.0 - float(judge_calibrated([max(ps)], tau)[0]) if ps else None
    if mode == "judge":
        return judge
    present = [v for v in (rec["rules"], judge) if v is not None]
    return min(present) if present else None


def run_pool(tasks: list[tuple[str, list[str]]], workers: int, judge_dir: str | None) -> dict:
    out: dict[str, list[dict]] = {}
    if workers <= 1:
        _init(judge_dir)
        for t in tasks:
            k, v = _job(t)
            out[k] = v
        return out
    with get_context("spawn").Pool(workers, initializer=_init, initargs=(judge_dir,)) as pool:
        for k, v in pool.imap_unordered(_job, tasks):
            out[k] = v
    return out


def blind(args: argparse.Namespace) -> None:
    texts = blind_items.base_texts()
    items = []
    for name in args.sets.split(","):
        items += [dict(i, set=name) for i in blind_items.load(name) if i["split"] == args.split]
    by_base: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for it in items:
        by_base[(it["source"], it["base_id"])].append(it)
    tasks = []
    for (src, bid), its in by_base.items():
        base = texts[(src, bid)]
        tasks.append((f"{src}/{bid}", [base] + [blind_items.apply(i, texts)[1] for i in its]))
    t0 = time.perf_counter()
    recs = run_pool(tasks, args.workers, args.judge)
    dt = time.perf_counter() - t0
    n_texts = sum(len(t[1]) for t in tasks)
    print(f"{len(items)} items on {len(tasks)} bases, {n_texts} texts in {dt:.0f} s")
    if args.save:
        Path(args.save).write_text(json.dumps({"items": items, "recs": recs}))
    taus = [args.tau] if not args.tune else TUNE_GRID
    for tau in taus:
        print(f"\n== τ = {tau}")
        for mode in ("rules", "judge", "fused"):
            report_blind(by_base, recs, mode, tau, args)


def report_blind(by_base, recs, mode: str, tau: float, args) -> None:
    det = defaultdict(lambda: [0, 0])
    ctl = defaultdict(lambda: [0, 0])
    bases = defaultdict(lambda: [0, 0, 0])  # flagged, n, missing
    missing_edit = 0
    for (src, bid), its in by_base.items():
        rs = recs[f"{src}/{bid}"]
        base = s_l(rs[0], mode, tau)
        grp = "vlm" if src == "vlm" else "real"
        b = bases[grp]
        b[1] += 1
        b[2] += base is None
        b[0] += base is not None and base < THRESHOLD
        for it, r in zip(its, rs[1:], strict=True):
            v = s_l(r, mode, tau)
            missing_edit += v is None
            hit = v is not None and v < THRESHOLD and (base is None or v < base)
            key = (it["set"], grp, it["class"])
            tab = det if it["kind"] == "contradiction" else ctl
            tab[key][0] += hit
            tab[key][1] += 1

    h, n = _total(det)
    ch, cn = _total(ctl)
    line = (
        f"{mode:6s} detected {h}/{n} = {100 * h / max(n, 1):.1f}%  "
        f"controls {ch}/{cn} = {100 * ch / max(cn, 1):.1f}%"
    )
    for g, (f, nb, miss) in sorted(bases.items()):
        line += f"  bases[{g}] flagged {f}/{nb} missing {miss}"
    print(line)
    if args.detail:
        for s in sorted({k[0] for k in det}):
            for g in ("real", "vlm"):
                h, n = _total(det, set_=s, group=g)
                c, cn = _total(ctl, set_=s, group=g)
                if n:
                    print(
                        f"   set {s} {g}: detected {h}/{n} = {100 * h / n:.1f}%  controls {c}/{cn}"
                    )
        parts = []
        for c in sorted({k[2] for k in det}):
            h, n = _total(det, cls=c)
            parts.append(f"{c} {100 * h / max(n, 1):.0f}%")
        print("   per class: " + ", ".join(parts))


def _total(tab: dict, set_: str | None = None, group: str | None = None, cls: str | None = None):
    keys = [
        k for k in tab if set_ in (None, k[0]) and group in (None, k[1]) and cls in (None, k[2])
    ]
    return sum(tab[k][0] for k in keys), sum(tab[k][1] for k in keys)


def real(args: argparse.Namespace) -> None:
    import bench_logic_real

    rows = bench_logic_real.load(args.real)
    if args.limit:
        rows = rows[: args.limit]
    tasks = [(f"{rid}|{grp}", [text]) for rid, grp, text in rows]
    t0 = time.perf_counter()
    recs = run_pool(tasks, args.workers, args.judge)
    dt = time.perf_counter() - t0
    print(
        f"{len(rows)} texts in {dt:.0f} s ({len(rows) / dt:.2f} reports/s, workers {args.workers})"
    )
    taus = [args.tau] if not args.tune else TUNE_GRID
    for mode, tau in [("rules", args.tau)] + [(m, t) for t in taus for m in ("judge", "fused")]:
        if args.tune and mode != "rules":
            print(f"== τ = {tau}")
        per = defaultdict(lambda: [0, 0, 0])
        for key, (rec,) in recs.items():
            grp = key.split("|", 1)[1]
            v = s_l(rec, mode, tau)
            per[grp][0] += v is not None and v < THRESHOLD
            per[grp][1] += 1
            per[grp][2] += v is None
        tcga = [(k, v) for k, v in per.items() if not k.startswith("EXPERT")]
        f = sum(v[0] for _, v in tcga)
        n = sum(v[1] for _, v in tcga)
        m = sum(v[2] for _, v in tcga)
        line = (
            f"{mode:6s} TCGA flagged {f}/{n} = {100 * f / max(n, 1):.1f}%  "
            f"unscored {100 * m / max(n, 1):.1f}%"
        )
        for k in ("EXPERT-REF", "EXPERT-CAND"):
            if k in per:
                v = per[k]
                line += f"  {k} {v[0]}/{v[1]} flagged"
        print(line)
        print(
            "   per organ: " + ", ".join(f"{k} {100 * v[0] / v[1]:.1f}%" for k, v in sorted(tcga))
        )


def throughput(args: argparse.Namespace) -> None:
    import bench_logic_real

    rows = [r for r in bench_logic_real.load("all") if not r[1].startswith("EXPERT")]
    rows = (rows * (args.throughput // len(rows) + 1))[: args.throughput]
    t0 = time.perf_counter()
    tasks = [(f"{i}", [text]) for i, (_, _, text) in enumerate(rows)]
    recs = run_pool(tasks, args.workers, args.judge)
    dt = time.perf_counter() - t0
    pairs = sum(len(r[0]["pairs"]) for r in recs.values())
    print(
        f"{len(rows)} reports in {dt:.0f} s (start-up included): {len(rows) / dt:.2f} reports/s, "
        f"{pairs / dt:.0f} pairs/s, {pairs / len(rows):.0f} pairs per report; "
        f"workers {args.workers}, load {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="1,2,3,5")
    ap.add_argument("--split", choices=("dev", "test"), default=None)
    ap.add_argument("--real", default=None)
    ap.add_argument("--throughput", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--tune", action="store_true")
    ap.add_argument("--detail", action="store_true")
    ap.add_argument("--tau", type=float, default=None, help="judge threshold (default: shipped)")
    ap.add_argument("--judge", default=None, help="a trained judge directory (default: shipped)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--save", default=None)
    args = ap.parse_args()
    if args.tau is None:
        from pathgls.nli.judge import META, SHIPPED_DIR

        d = Path(args.judge) if args.judge else SHIPPED_DIR
        args.tau = json.loads((d / META).read_text())["threshold"]
    if args.split:
        blind(args)
    if args.real:
        real(args)
    if args.throughput:
        throughput(args)


if __name__ == "__main__":
    main()
