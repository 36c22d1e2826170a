"""Does run mode's whole procedure (the fixed sequence, not one threshold) keep its δ? Exhaustively.

The bound of :mod:`pathgls.meta.certify_run` is exact at one threshold; Learn-then-Test's proof of
the fixed sequence does not carry over to a realised share as is (see docs/method.md, "Run
mode"). This script measures the procedure's error exactly on small pools instead: ``N`` rows
ranked by trust (distinct values: only the ranks matter), every placement of 1 … ``--max-bad``
unacceptable rows among them, every split into ``n`` calibration rows and a run of the rest, for
α in {0.1, 0.2, 0.3, 0.5} and δ in {0.1, 0.2}. For each placement it computes the chance, over
the splits, that the certified threshold deploys run reports whose unacceptable share exceeds α
— the run mode's promise is that this is ≤ δ for every placement — and prints the worst ratio to
δ found (with its placement). The procedure is the one of :func:`pathgls.meta.certify_run.
run_sequence` (its bound, start rule and stop), walked rank by rank.

Usage: python benchmarks/check_certify_run.py [--rows 12] [--calibration 6] [--max-bad 6]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time


def failure(bad: list[int], splits: list[list[int]], alpha: float, delta: float, passes) -> float:
    """The exact chance over ``splits`` that the certified run share of errors exceeds α."""
    fails = 0
    for cal in splits:
        c = k = d = b = 0
        started, chosen = False, None
        for i, is_cal in enumerate(cal):
            if is_cal:
                c, k = c + 1, k + bad[i]
            else:
                d, b = d + 1, b + bad[i]
            if not started:
                if d >= 1 and passes(0, c, d, alpha, delta):
                    started = True
                else:
                    continue
            if not passes(k, c, d, alpha, delta):
                break
            chosen = (d, b)
        fails += chosen is not None and chosen[1] > alpha * chosen[0] + 1e-9
    return fails / len(splits)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=12)
    ap.add_argument("--calibration", type=int, default=6)
    ap.add_argument("--max-bad", type=int, default=6)
    args = ap.parse_args(argv)

    from pathgls.meta.certify_run import count_upper

    def passes(k: int, c: int, d: int, alpha: float, delta: float) -> bool:
        up = count_upper(errors=k, selected=c, run_selected=d, delta=delta)
        return up <= math.floor(alpha * d + 1e-9)

    n_rows, n_cal = args.rows, args.calibration
    splits = [
        [int(i in cal) for i in range(n_rows)]
        for cal in itertools.combinations(range(n_rows), n_cal)
    ]
    t0 = time.perf_counter()
    worst, where, placements = 0.0, None, 0
    for alpha in (0.1, 0.2, 0.3, 0.5):
        for delta in (0.1, 0.2):
            for nb in range(1, args.max_bad + 1):
                for pos in itertools.combinations(range(n_rows), nb):
                    bad = [int(i in pos) for i in range(n_rows)]
                    ratio = failure(bad, splits, alpha, delta, passes) / delta
                    placements += 1
                    if ratio > worst:
                        worst, where = ratio, (alpha, delta, pos)
    print(
        f"{n_rows} rows, {n_cal} calibration, {len(splits)} splits each, {placements} "
        f"(placement, α, δ) cases in {time.perf_counter() - t0:.0f} s"
    )
    print(f"worst failure / δ: {worst:.3f} at α, δ, unacceptable ranks = {where}")
    print("PASS" if worst <= 1 + 1e-12 else "FAIL: the procedure broke its δ")
    return 0 if worst <= 1 + 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
