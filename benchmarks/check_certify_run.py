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

Larger pools: ``--sample S`` draws S random splits instead of all of them, and ``--spaced``
tries only the placements a trust score finds hardest (1 … ``--max-bad`` unacceptable rows at the
top ranks, or at every 2nd, 3rd or 5th rank from the top) instead of every placement.

Usage: python benchmarks/check_certify_run.py [--rows 12] [--calibration 6] [--max-bad 6]
       [--sample S] [--spaced]
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
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
    ap.add_argument("--sample", type=int, default=0, help="random splits (0: every split)")
    ap.add_argument("--spaced", action="store_true", help="top and evenly spaced placements only")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from pathgls.meta.certify_run import count_upper

    def passes(k: int, c: int, d: int, alpha: float, delta: float) -> bool:
        up = count_upper(errors=k, selected=c, run_selected=d, delta=delta)
        return up <= math.floor(alpha * d + 1e-9)

    n_rows, n_cal = args.rows, args.calibration
    if args.sample:
        rng = random.Random(args.seed)
        draws = (set(rng.sample(range(n_rows), n_cal)) for _ in range(args.sample))
    else:
        draws = (set(c) for c in itertools.combinations(range(n_rows), n_cal))
    splits = [[int(i in cal) for i in range(n_rows)] for cal in draws]

    def placements(nb: int):
        if not args.spaced:
            yield from itertools.combinations(range(n_rows), nb)
            return
        for gap in (0, 1, 2, 4):
            pos = tuple(i * (gap + 1) for i in range(nb))
            if pos[-1] < n_rows:
                yield pos

    t0 = time.perf_counter()
    worst, where, cases = 0.0, None, 0
    for alpha in (0.1, 0.2, 0.3, 0.5):
        for delta in (0.1, 0.2):
            for nb in range(1, args.max_bad + 1):
                for pos in placements(nb):
                    bad = [int(i in pos) for i in range(n_rows)]
                    ratio = failure(bad, splits, alpha, delta, passes) / delta
                    cases += 1
                    if ratio > worst:
                        worst, where = ratio, (alpha, delta, pos)
    print(
        f"{n_rows} rows, {n_cal} calibration, {len(splits)} splits each"
        f"{' (random)' if args.sample else ''}, {cases} "
        f"(placement, α, δ) cases in {time.perf_counter() - t0:.0f} s"
    )
    print(f"worst failure / δ: {worst:.3f} at α, δ, unacceptable ranks = {where}")
    print("PASS" if worst <= 1 + 1e-12 else "FAIL: the procedure broke its δ")
    return 0 if worst <= 1 + 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
