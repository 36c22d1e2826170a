"""Validate the form of benchmarks/data/delta_edits.jsonl and apply its edits.

Checks form only; it contains no diagnosis logic and never scores anything:

- one JSON object per line with exactly the fields id, case_id, kind, type,
  original, edited, note;
- unique ids; kind / type from the lists below;
- case_id exists in the expert TSV with one reference text;
- ``original`` occurs exactly once in that case's reference; ``edited`` differs.

Usage:
    python benchmarks/data/check_delta_edits.py [--tsv PATH] [--edits PATH]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_TSV = REPO.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"
DEFAULT_EDITS = HERE / "delta_edits.jsonl"

FIELDS = ("id", "case_id", "kind", "type", "original", "edited", "note")
TYPES = {
    "control": ("reword", "reorder", "format"),
    "flip": ("behaviour", "type_swap"),
    "negation": ("lvi", "pni", "margin", "nodes", "invasion", "grade", "extranodal_extension"),
}


def references(tsv: Path) -> dict[str, str]:
    """case_id → reference text of the expert TSV."""
    with open(tsv, newline="", encoding="utf-8") as fh:
        return {r["case_id"]: r["reference"] for r in csv.DictReader(fh, delimiter="\t")}


def load(path: Path) -> list[dict[str, str]]:
    """The edit items, one JSON object a line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def apply(item: dict[str, str], refs: dict[str, str]) -> tuple[str, str]:
    """``(reference, edited reference)`` of one item."""
    ref = refs[item["case_id"]]
    return ref, ref.replace(item["original"], item["edited"], 1)


def problems(items: list[dict[str, str]], refs: dict[str, str]) -> list[str]:
    """Every form problem of the items (empty when they are well formed)."""
    out = []
    ids = Counter(i.get("id") for i in items)
    out += [f"duplicate id {k}" for k, n in ids.items() if n > 1]
    for it in items:
        where = it.get("id", "?")
        if tuple(sorted(it)) != tuple(sorted(FIELDS)):
            out.append(f"{where}: fields {sorted(it)} != {sorted(FIELDS)}")
            continue
        if it["type"] not in TYPES.get(it["kind"], ()):
            out.append(f"{where}: kind/type {it['kind']}/{it['type']} unknown")
        ref = refs.get(it["case_id"])
        if ref is None:
            out.append(f"{where}: case_id {it['case_id']} not in the TSV")
            continue
        if ref.count(it["original"]) != 1:
            out.append(f"{where}: original occurs {ref.count(it['original'])} times")
        if it["edited"] == it["original"]:
            out.append(f"{where}: edited == original")
        if "\n" in it["note"] or not it["note"].strip():
            out.append(f"{where}: the note must be one line")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--edits", type=Path, default=DEFAULT_EDITS)
    args = ap.parse_args(argv)
    items = load(args.edits)
    bad = problems(items, references(args.tsv))
    for p in bad:
        print(p)
    counts = Counter((i["kind"], i["type"]) for i in items)
    for (kind, typ), n in sorted(counts.items()):
        print(f"{kind:9s} {typ:22s} {n}")
    print(
        f"{len(items)} items, {len({i['case_id'] for i in items})} case ids: "
        f"{'OK' if not bad else f'{len(bad)} problem(s)'}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
