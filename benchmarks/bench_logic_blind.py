"""Logic on the blind contradiction set: detection per class, hard look-alike controls.

Reads ``benchmarks/data/logic_blind.jsonl`` (set 1: 480 hand-written edits of real reports, written
blind to pathgls by helpers who never read its code; ten classes, each contradiction paired with
a hard look-alike control on the same base text; split dev/test by group before any rule was
written — see ``benchmarks/data/README.md``) and scores each edited report and its unedited base
with the offline default (case model + checks, ``rules`` backend).

* a contradiction is **detected** when S_l(edited) < 0.8 and below S_l(base);
* a control is **flagged** on the same rule (it should not be);
* also printed: whether a new conflict appeared at all (regardless of the 0.8 cut), and the
  unedited bases flagged (false alarms of real reports).

Targets (issue 23), on the untouched ``test`` half: detection ≥ 85%, every class ≥ 70%, hard
controls flagged ≤ 3%. ``--split dev`` is the half Logic was tuned on (optimistic);
``--split test`` is run once and reported as it comes.

Set 2 (``--set 2``, ``logic_blind2.jsonl``) is a second set of 480 items of the same design, by four
other helpers, on held-out TCGA rows set 1 never used; it was split on arrival, after Logic had
been tuned on set 1's dev half and before any rule saw it. Set 3 (``--set 3``,
``logic_blind3.jsonl``) is a third, by four more helpers, on rows no earlier round read; it was
split on arrival at the start of the third round.

Usage: python benchmarks/bench_logic_blind.py --split dev|test [--set 1|2|3] [--class NAME]
       [--show miss|fa]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "data"))

import blind_items  # noqa: E402  (benchmarks/data/blind_items.py)

THRESHOLD = 0.8
NEUTRAL = 0.98  # a report with nothing to compare: as one where nothing contradicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", required=True, choices=("dev", "test"))
    ap.add_argument("--set", default="1", choices=sorted(blind_items.SETS))
    ap.add_argument("--class", dest="cls", default=None)
    ap.add_argument("--show", default=None, choices=("miss", "fa"))
    args = ap.parse_args()

    from pathgls.logic import logic_score
    from pathgls.nli.rules import RulesNLI

    texts = blind_items.base_texts()
    items = [
        i
        for i in blind_items.load(args.set)
        if i["split"] == args.split and args.cls in (None, i["class"])
    ]
    nli = RulesNLI()
    cache: dict[str, object] = {}

    def s_l(text: str):
        if text not in cache:
            cache[text] = logic_score(report=text, nli=nli)
        return cache[text]

    rows = []
    for it in items:
        base, edited = blind_items.apply(it, texts)
        sb, se = s_l(base), s_l(edited)
        vb = NEUTRAL if sb.value is None else sb.value
        ve = NEUTRAL if se.value is None else se.value
        new = len(se.evidence.get("checks", [])) > len(sb.evidence.get("checks", []))
        rows.append(
            {
                "item": it,
                "base": vb,
                "edited": ve,
                "flag": ve < THRESHOLD and ve < vb - 1e-9,
                "new": new,
                "score": se,
            }
        )
    per: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        per[(r["item"]["class"], r["item"]["kind"])].append(r)
    n_reports = len({(r["item"]["source"], r["item"]["base_id"]) for r in rows})
    print(f"set {args.set}, split {args.split}: {len(rows)} items on {n_reports} reports")
    print(
        f"{'class':<12}{'contradictions detected':>26}{'new conflict':>14}{'controls flagged':>18}"
    )
    classes = sorted({c for c, _ in per})
    worst = 1.0
    for c in classes:
        con, ctl = per[(c, "contradiction")], per[(c, "control")]
        d = sum(r["flag"] for r in con) / max(1, len(con))
        n = sum(r["new"] for r in con) / max(1, len(con))
        f = sum(r["flag"] for r in ctl) / max(1, len(ctl))
        worst = min(worst, d)
        print(
            f"{c:<12}{sum(r['flag'] for r in con):>12}/{len(con):<3} {d:>8.0%}{n:>14.0%}"
            f"{sum(r['flag'] for r in ctl):>10}/{len(ctl):<3}{f:>5.0%}"
        )
    con = [r for r in rows if r["item"]["kind"] == "contradiction"]
    ctl = [r for r in rows if r["item"]["kind"] == "control"]
    det = sum(r["flag"] for r in con) / max(1, len(con))
    fa = sum(r["flag"] for r in ctl) / max(1, len(ctl))
    bases = {id(r["item"]): r["base"] for r in rows}
    base_fa = sum(v < THRESHOLD for v in bases.values()) / max(1, len(bases))
    print(
        f"\nall: detected {det:.1%} of {len(con)} contradictions; controls flagged {fa:.1%} of "
        f"{len(ctl)}; unedited bases below {THRESHOLD}: {base_fa:.1%}"
    )
    print("\ntargets:")
    print(f"  detection {det:.1%} (≥ 85%): {'MET' if det >= 0.85 else 'NOT MET'}")
    print(f"  every class ≥ 70% (worst {worst:.0%}): {'MET' if worst >= 0.70 else 'NOT MET'}")
    print(f"  hard controls flagged {fa:.1%} (≤ 3%): {'MET' if fa <= 0.03 else 'NOT MET'}")
    if args.show:
        want = "contradiction" if args.show == "miss" else "control"
        for r in rows:
            it = r["item"]
            if it["kind"] != want or r["flag"] == (args.show == "miss"):
                continue
            print(f"\n{it['id']} {it['class']} {r['base']:.2f} -> {r['edited']:.2f}: {it['note']}")
            print(f"  + {it['insert'][:200]!r}")
            for c in r["score"].evidence.get("checks", [])[:2]:
                print(f"  check {c['rule']}: {c['explanation'][:160]}")


if __name__ == "__main__":
    main()
