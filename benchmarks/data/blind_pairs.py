"""Labelled judge pairs from the blind sets' dev halves (issue 32 allows them to train).

Each blind item is an edit of a real report with the span of the statement it is written
against. The edited report is read as Logic reads it (:func:`pathgls.logic.units.judge_units`,
shown with its specimen part) and the unit holding the edit is paired with the unit holding that
statement: a *contradiction* item gives a contradiction (label 1), its look-alike *control* a
consistent pair (label 0). Items whose edit and partner fall in one unit are skipped (a
within-statement conflict is not a pair). No report text is stored in the repository: the pairs
are written at run time to ``--out`` (JSON lines, read by ``pathgls judge train --pairs``).

Only dev halves may be used (``--split dev`` is enforced); the test halves stay untouched.

Usage:
  python benchmarks/data/blind_pairs.py --sets 1,2,3 --out /tmp/blind_dev_pairs.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import blind_items  # noqa: E402


def unit_pairs(items: list[dict]) -> tuple[list[dict], Counter]:
    """The labelled (edit unit, partner unit) pair of each item, and why items were skipped."""
    from pathgls.logic.units import judge_units
    from pathgls.nli.judge_data import unit_text
    from pathgls.text.case import build_case

    texts = blind_items.base_texts()
    out: list[dict] = []
    skipped: Counter = Counter()
    for it in items:
        if it["split"] != "dev":
            raise ValueError(f"{it['id']}: only dev items may train the judge")
        _, edited = blind_items.apply(it, texts)
        case = build_case(edited)
        units = judge_units(case)
        a0 = it["at"][0]
        a1 = max(a0 + len(it["insert"]), a0 + 1)
        g0, g1 = it["against"]
        ua = [i for i, u in enumerate(units) if u.start < a1 and a0 < u.end]
        ub = [i for i, u in enumerate(units) if u.start < g1 and g0 < u.end]
        if not ua or not ub:
            skipped["no unit"] += 1
            continue
        a, b = ua[0], next((j for j in ub if j not in ua), None)
        if b is None:
            skipped["one unit"] += 1
            continue
        shown = [unit_text(case, units[i].text, units[i].statement) for i in (a, b)]
        label = 1 if it["kind"] == "contradiction" else 0
        out.append(
            {
                "premise": shown[0],
                "hypothesis": shown[1],
                "label": label,
                "source": f"blind{it['set']}-{it['kind']}",
                "id": it["id"],
            }
        )
    return out, skipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="1,2,3")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    items = []
    for name in args.sets.split(","):
        items += [dict(i, set=name) for i in blind_items.load(name) if i["split"] == "dev"]
    pairs, skipped = unit_pairs(items)
    with open(args.out, "w", encoding="utf-8") as fh:
        for p in pairs:
            fh.write(json.dumps(p) + "\n")
    labels = Counter(p["label"] for p in pairs)
    print(
        f"{len(items)} dev items → {len(pairs)} pairs "
        f"({labels[1]} contradictions, {labels[0]} consistent); skipped {dict(skipped)}"
    )


if __name__ == "__main__":
    main()
