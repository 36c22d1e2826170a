"""Validate the form of benchmarks/data/logic_holdout.jsonl (the held-out Logic set).

Checks form and counts only; it contains no contradiction logic and never
scores anything:

- one JSON object per line with exactly the fields id, case_id, kind, type,
  original, edited, note;
- ids h001, h002, ... unique;
- case_id exists in the expert TSV (and each case id has one reference text);
- kind / type from the lists below;
- ``original`` occurs exactly once in that case's reference; ``edited`` differs;
- a one-line note;
- minimum counts: >= 40 contradictions, >= 30 controls, >= 15 look-alike
  controls, >= 30 distinct case ids.

Usage:
    python benchmarks/data/check_logic_holdout.py [--tsv PATH] [--cases PATH]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_TSV = REPO.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"
DEFAULT_CASES = HERE / "logic_holdout.jsonl"

FIELDS = ("id", "case_id", "kind", "type", "original", "edited", "note")
CONTRADICTION_TYPES = (
    "polarity",
    "counts",
    "margins",
    "grade_differentiation",
    "behaviour",
    "in_situ_invasive",
    "stage_findings",
    "ihc",
    "unsupported_diagnosis",
    "diagnosis_swap",
)
PLAIN_CONTROLS = ("reword", "reorder", "true_detail", "format")
LOOKALIKE_CONTROLS = (
    "other_site",
    "remaining_nodes",
    "mixed_grade",
    "no_residual",
    "scoped_negation",
    "uncertain",
)
TYPES = {
    "contradiction": CONTRADICTION_TYPES,
    "control": PLAIN_CONTROLS + LOOKALIKE_CONTROLS,
}
MIN_CONTRADICTIONS = 40
MIN_CONTROLS = 30
MIN_LOOKALIKES = 15
MIN_CASE_IDS = 30
ID_RE = re.compile(r"^h\d{3}$")

csv.field_size_limit(sys.maxsize)


def load_references(tsv: Path) -> dict[str, str]:
    refs: dict[str, set[str]] = {}
    with tsv.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            refs.setdefault(row["case_id"], set()).add(row["reference"])
    bad = sorted(c for c, texts in refs.items() if len(texts) != 1)
    if bad:
        raise SystemExit(f"case ids with more than one reference text: {bad}")
    return {c: next(iter(texts)) for c, texts in refs.items()}


def apply(item: dict, refs: dict[str, str]) -> str:
    """The edited report: the case's reference with ``original`` replaced once."""
    return refs[item["case_id"]].replace(item["original"], item["edited"], 1)


def check(cases: Path, refs: dict[str, str]) -> tuple[list[dict], list[str]]:
    errors: list[str] = []
    items: list[dict] = []
    seen: set[str] = set()
    for n, line in enumerate(cases.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            errors.append(f"line {n}: blank line")
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {n}: not JSON ({exc})")
            continue
        where = f"line {n} ({item.get('id', '?')})"
        if not isinstance(item, dict) or tuple(sorted(item)) != tuple(sorted(FIELDS)):
            errors.append(f"{where}: fields must be exactly {FIELDS}")
            continue
        if not all(isinstance(item[f], str) for f in FIELDS):
            errors.append(f"{where}: every field must be a string")
            continue
        if not ID_RE.match(item["id"]):
            errors.append(f"{where}: id must look like h001")
        if item["id"] in seen:
            errors.append(f"{where}: duplicate id")
        seen.add(item["id"])
        if item["case_id"] not in refs:
            errors.append(f"{where}: unknown case_id {item['case_id']}")
            continue
        if item["type"] not in TYPES.get(item["kind"], ()):
            errors.append(f"{where}: kind/type {item['kind']}/{item['type']} not allowed")
        occurrences = refs[item["case_id"]].count(item["original"]) if item["original"] else 0
        if occurrences != 1:
            errors.append(f"{where}: original occurs {occurrences} times in the reference")
        if item["edited"] == item["original"]:
            errors.append(f"{where}: edited equals original")
        if not item["note"].strip() or "\n" in item["note"]:
            errors.append(f"{where}: note must be one non-empty line")
        items.append(item)

    ids = [it["id"] for it in items]
    expected = [f"h{i:03d}" for i in range(1, len(ids) + 1)]
    if ids != expected:
        errors.append("ids are not consecutive h001, h002, ... in file order")

    kinds = Counter(it["kind"] for it in items)
    lookalikes = sum(1 for it in items if it["type"] in LOOKALIKE_CONTROLS)
    case_ids = {it["case_id"] for it in items}
    if kinds["contradiction"] < MIN_CONTRADICTIONS:
        errors.append(f"only {kinds['contradiction']} contradictions (< {MIN_CONTRADICTIONS})")
    if kinds["control"] < MIN_CONTROLS:
        errors.append(f"only {kinds['control']} controls (< {MIN_CONTROLS})")
    if lookalikes < MIN_LOOKALIKES:
        errors.append(f"only {lookalikes} look-alike controls (< {MIN_LOOKALIKES})")
    if len(case_ids) < MIN_CASE_IDS:
        errors.append(f"only {len(case_ids)} distinct case ids (< {MIN_CASE_IDS})")
    return items, errors


def report(items: list[dict], refs: dict[str, str]) -> None:
    by_type = Counter((it["kind"], it["type"]) for it in items)
    for kind, types in TYPES.items():
        total = sum(by_type[(kind, t)] for t in types)
        print(f"{kind}: {total}")
        for t in types:
            texts = {refs[it["case_id"]] for it in items if it["type"] == t}
            print(f"  {t:24s} {by_type[(kind, t)]:3d}   ({len(texts)} reference texts)")
    lookalikes = sum(1 for it in items if it["type"] in LOOKALIKE_CONTROLS)
    case_ids = {it["case_id"] for it in items}
    texts = {refs[c] for c in case_ids}
    print(f"look-alike controls: {lookalikes}")
    print(
        f"items: {len(items)}; distinct case ids: {len(case_ids)}; "
        f"distinct reference texts: {len(texts)} of {len(set(refs.values()))}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    args = ap.parse_args(argv)
    refs = load_references(args.tsv)
    items, errors = check(args.cases, refs)
    report(items, refs)
    for e in errors:
        print("ERROR:", e)
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
