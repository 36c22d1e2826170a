"""Does the certified deploy threshold keep its guarantee on real expert scores?

On the HARE expert development pairs (``../shared/data/expert_scores/hare_expert_dev.tsv``, 316
candidate reports of 79 cases, scored 0–4 by pathologists), each candidate gets the trust a run
without a slide gives it: the fusion of the report side (DxAlign against the reference, mapped
to [0, 1]) and Logic (rules NLI), under the default weights (report 0.4, logic 0.3,
renormalised). Acceptable = expert score ≥ ``--cutoff`` (default 2: the upper three grades, 92 of
the 316 pairs).

For ``--splits`` random calibration/test splits **by case** (the four candidates of a case share
a reference, so they go to the same side; half of the cases each), for α in {0.05, 0.1, 0.2} at
confidence 1 − δ = 0.9:

* certified (:func:`pathgls.meta.certify.certify_deploy`) on the calibration half: the
  population mode (risk among the deployed ≤ α) and the batch mode with m = the test half's
  size (the realised share among the deployed of the next m reports ≤ α);
* today's precision target (:func:`pathgls.meta.calibrate.thresholds_for_precision` with target
  precision 1 − α) on the same half;
* the run mode (:func:`pathgls.meta.certify.certify_for_run`, ``calibrate --for-run``): certified
  on the calibration half for the test half as the run, whose trust values (not labels) it reads
  — the realised share among the run's deployed reports, exact under exchangeable rows;

and on the test half: the realised risk (unacceptable among the deployed test rows; 0 when none
deploys — an empty deployment holds no unacceptable report — so the table also gives the share
of splits with no deployed test row and the held share among the others) and the deploy rate.
The population mode's guarantee is about the risk of the population the rows are drawn from; a
test half deploys only a handful of rows, so its realised share has sampling noise of its own on
top (a clean threshold with true risk 0.08 shows 2 of 10 = 0.2 often enough): the batch mode is
the one whose guarantee is the realised share. So a second check judges the population mode's
threshold fitted on a bootstrap sample of half the cases on the whole table (the population then
is the table itself): risk ≤ α in ≥ 1 − δ of the draws. Complementary halves of one finite table
are not independent (a calibration half that got more of the clean top reports leaves fewer to
its test half — and that is when a threshold gets certified), while both modes assume the next
reports are drawn independently of the calibration rows; so a third check fits on the bootstrap
draw and judges on an independent bootstrap draw of as many cases as a test half (``*/indep``).
The per-row scores are cached (``--cache``, default under /tmp) so the splits are cheap.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TSV = ROOT.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"
ALPHAS = (0.05, 0.1, 0.2)


def _trust(rows: list) -> np.ndarray:
    from pathgls.config import DEFAULT_WEIGHTS

    out = []
    for r in rows:
        have = {m: v for m, v in r.scores.items() if v is not None}
        total = sum(DEFAULT_WEIGHTS[m] for m in have)
        out.append(sum(DEFAULT_WEIGHTS[m] * v for m, v in have.items()) / total)
    return np.asarray(out)


def _realised(rec: dict[str, list[float]], thr: float | None, idx: np.ndarray, data: tuple) -> None:
    """Record the realised share of unacceptable rows among the deployed rows ``idx`` (0 when
    none deploys; ``empty`` says so), the deploy rate, and whether there was a threshold."""
    trust, ok = data
    if thr is None:
        rec["risk"].append(0.0)
        rec["rate"].append(0.0)
        rec["none"].append(1.0)
        rec["empty"].append(1.0)
        return
    dep = trust[idx] >= thr
    n_dep = int(dep.sum())
    rec["risk"].append(float((dep & ~ok[idx]).sum() / n_dep) if n_dep else 0.0)
    rec["rate"].append(n_dep / idx.size)
    rec["none"].append(0.0)
    rec["empty"].append(float(n_dep == 0))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/pathgls-bench-certify-rows.json"))
    ap.add_argument("--cutoff", type=float, default=2.0)
    ap.add_argument("--splits", type=int, default=1000)
    ap.add_argument("--confidence", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from pathgls.meta.calibrate import thresholds_for_precision
    from pathgls.meta.certify import CertifyConfig, certify_deploy, certify_for_run
    from pathgls.meta.expert_rows import score_expert_table

    t0 = time.perf_counter()
    rows = score_expert_table(args.tsv, cache=args.cache)
    print(f"{len(rows)} scored pairs in {time.perf_counter() - t0:.1f} s (cache {args.cache})")
    trust = np.round(_trust(rows), 3)
    ok = np.array([r.expert >= args.cutoff for r in rows])
    cases = np.array([r.item_id.split("/")[0] for r in rows])
    names = np.unique(cases)
    print(
        f"acceptable = expert ≥ {args.cutoff:g}: {int(ok.sum())} of {len(rows)}; "
        f"{len(names)} cases; confidence {args.confidence:g}; {args.splits} splits by case"
    )
    rng = np.random.default_rng(args.seed)
    rng_batch = np.random.default_rng(args.seed + 1)  # its own stream: the splits stay as before
    delta = 1 - args.confidence
    results: dict[tuple[str, float], dict[str, list[float]]] = {}
    t1 = time.perf_counter()
    rows_of = {c: np.flatnonzero(cases == c) for c in names}

    def for_run(fit: np.ndarray, run: np.ndarray, alpha: float):
        """Run mode: certified on the rows ``fit`` for the rows ``run`` (their trust only)."""
        return certify_for_run(
            trust=trust[fit],
            acceptable=ok[fit],
            run_trust=trust[run],
            config=CertifyConfig(risk=alpha, confidence=args.confidence),
            explain=False,
        )

    for _ in range(args.splits):
        cal_cases = rng.permutation(names)[: len(names) // 2]
        cal = np.isin(cases, cal_cases)
        test = ~cal
        # a bootstrap calibration set (half the cases, drawn with replacement) whose threshold
        # is judged on the whole table: the population risk the guarantee is about
        boot = np.concatenate([rows_of[c] for c in rng.choice(names, len(names) // 2)])
        # a batch drawn independently of that calibration set (as many cases as a test half):
        # the independence both certified modes assume, which complementary halves lack
        indep = np.concatenate(
            [rows_of[c] for c in rng_batch.choice(names, len(names) - len(names) // 2)]
        )
        for alpha in ALPHAS:
            pop = certify_deploy(
                trust=trust[boot],
                acceptable=ok[boot],
                config=CertifyConfig(risk=alpha, confidence=args.confidence),
                explain=False,
            )
            pop_prec = thresholds_for_precision(
                trust=trust[boot], acceptable=ok[boot], target_precision=1 - alpha
            )
            for method, thr in (("cert/boot", pop.threshold), ("prec/boot", pop_prec.threshold)):
                rec = results.setdefault((method, alpha), {"risk": [], "rate": [], "none": []})
                dep = trust >= thr if thr is not None else np.zeros(trust.size, dtype=bool)
                rec["risk"].append(float((dep & ~ok).sum() / dep.sum()) if dep.any() else 0.0)
                rec["rate"].append(float(dep.mean()))
                rec["none"].append(float(thr is None))
            pop_batch = certify_deploy(
                trust=trust[boot],
                acceptable=ok[boot],
                config=CertifyConfig(risk=alpha, confidence=args.confidence, batch=indep.size),
                explain=False,
            )
            run_indep = for_run(boot, indep, alpha)
            for method, thr in (
                ("cert/indep", pop.threshold),
                ("batch/indep", pop_batch.threshold),
                ("run/indep", run_indep.threshold),
                ("prec/indep", pop_prec.threshold),
            ):
                rec = results.setdefault(
                    (method, alpha), {"risk": [], "rate": [], "none": [], "empty": []}
                )
                _realised(rec, thr, indep, (trust, ok))
            cert = certify_deploy(
                trust=trust[cal],
                acceptable=ok[cal],
                config=CertifyConfig(risk=alpha, confidence=args.confidence),
                explain=False,
            )
            batch = certify_deploy(
                trust=trust[cal],
                acceptable=ok[cal],
                config=CertifyConfig(risk=alpha, confidence=args.confidence, batch=int(test.sum())),
                explain=False,
            )
            prec = thresholds_for_precision(
                trust=trust[cal], acceptable=ok[cal], target_precision=1 - alpha
            )
            run = for_run(cal, test, alpha)
            for method, thr in (
                ("certified", cert.threshold),
                ("batch", batch.threshold),
                ("run", run.threshold),
                ("precision", prec.threshold),
            ):
                rec = results.setdefault(
                    (method, alpha), {"risk": [], "rate": [], "none": [], "empty": []}
                )
                _realised(rec, thr, np.flatnonzero(test), (trust, ok))
    seconds = time.perf_counter() - t1
    print(f"{args.splits} splits × {len(ALPHAS)} α × 6 fits in {seconds:.1f} s\n")
    head = (
        f"{'method':<11} {'α':>5} {'risk ≤ α':>9} {'mean risk':>9} {'deploy rate':>12} {'none':>6}"
        f" {'empty':>6} {'held | some':>11}"
    )
    print(head)
    failed = dict.fromkeys(
        ("certified", "batch", "run", "cert/indep", "batch/indep", "run/indep"), False
    )
    methods = ("certified", "batch", "run", "precision", "cert/boot", "prec/boot")
    for alpha in ALPHAS:
        for method in (*methods, "cert/indep", "batch/indep", "run/indep", "prec/indep"):
            rec = results[(method, alpha)]
            risk, rate = np.asarray(rec["risk"]), np.asarray(rec["rate"])
            held = float((risk <= alpha + 1e-12).mean())
            line = (
                f"{method:<11} {alpha:>5.2f} {held:>9.1%} {risk.mean():>9.3f} "
                f"{rate.mean():>6.1%} [{np.quantile(rate, 0.1):.0%}–{np.quantile(rate, 0.9):.0%}]"
                f" {np.mean(rec['none']):>6.1%}"
            )
            if "empty" in rec:
                some = ~np.asarray(rec["empty"], dtype=bool)
                cond = f"{(risk[some] <= alpha + 1e-12).mean():.1%}" if some.any() else "—"
                line += f" {np.mean(rec['empty']):>6.1%} {cond:>11} ({int(some.sum())})"
            print(line)
            if method in failed and held < 1 - delta:
                failed[method] = True

    print(
        "\nrisk ≤ α: share of splits whose deployed test rows have at most α unacceptable "
        f"(the guarantee asks ≥ {1 - delta:.0%}); deploy rate: mean [10th–90th percentile] "
        "share of test rows deployed; none: splits with no threshold; empty: splits with no "
        "deployed test row (none included); held | some: risk ≤ α among the splits that deployed "
        "a test row (their number);\n"
        "batch: certified for the realised share in a batch of m = the test half's rows;\n"
        "run: certified for the realised share among the test half's deployed rows, its trust "
        "values known (calibrate --for-run);\n"
        "*/boot: fitted on a bootstrap draw of half the cases, risk and deploy rate on the whole "
        "table (the population the guarantee is about);\n"
        "*/indep: fitted on that bootstrap draw, realised on an independent bootstrap batch of "
        "as many cases as a test half (batch mode with m = its rows)"
    )
    m = int(len(rows) - sum(rows_of[c].size for c in names[: len(names) // 2]))  # a test half
    print(f"\non the whole table ({len(rows)} rows), what each mode would need:")
    for alpha in ALPHAS:
        for batch_size in (None, m):
            res = certify_deploy(
                trust=trust,
                acceptable=ok,
                config=CertifyConfig(risk=alpha, confidence=args.confidence, batch=batch_size),
            )
            name = "certified" if batch_size is None else f"batch {batch_size}"
            said = (
                f"threshold {res.threshold:.3f}, deploys {res.rate:.1%}"
                if res.threshold is not None
                else res.reason
            )
            print(f"  {name:<10} α {alpha:g}: {said}")
    pop_ok = all(
        float((np.asarray(results[("cert/boot", a)]["risk"]) <= a + 1e-12).mean()) >= 1 - delta
        for a in ALPHAS
    )
    print("certified, realised on the test half:", "FAIL" if failed["certified"] else "PASS")
    print("batch mode, realised on the test half:", "FAIL" if failed["batch"] else "PASS")
    print("run mode, realised on the test half:", "FAIL" if failed["run"] else "PASS")
    print(
        "certified, realised on an independent batch:", "FAIL" if failed["cert/indep"] else "PASS"
    )
    print(
        "batch mode, realised on an independent batch:", "FAIL" if failed["batch/indep"] else "PASS"
    )
    print("run mode, realised on an independent batch:", "FAIL" if failed["run/indep"] else "PASS")
    print("certified, population risk (bootstrap):", "PASS" if pop_ok else "FAIL")
    return 0 if pop_ok and not failed["run"] and not failed["run/indep"] else 1


if __name__ == "__main__":
    sys.exit(main())
