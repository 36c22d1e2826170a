"""Validate the structure of ``logic_cases.jsonl`` (the hand-written Logic test set).

Checks only form, never meaning: it knows nothing about what makes an edit a
contradiction. It checks that every line is a JSON object with the required fields,
ids are unique, case ids exist in the expert TSV, kinds and types are from the
documented lists, ``original`` occurs exactly once in that case's reference, the edit
changes the text, notes are one line, and the minimum counts from the README hold.

    python benchmarks/data/check_logic_cases.py [--tsv PATH] [--cases PATH]

Exits 1 on any problem and prints the counts per kind/type.
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
ROOT = HERE.parent.parent
DEFAULT_TSV = ROOT.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"
DEFAULT_CASES = HERE / "logic_cases.jsonl"

FIELDS = ("id", "case_id", "kind", "type", "original", "edited", "note")
CONTRADICTION_TYPES = {
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
}
LOOKALIKE_TYPES = {
    "other_site",
    "remaining_nodes",
    "mixed_grade",
    "no_residual",
    "scoped_negation",
    "uncertain",
}
CONTROL_TYPES = {"reword", "reorder", "true_detail", "format"} | LOOKALIKE_TYPES
TYPES = {"contradiction": CONTRADICTION_TYPES, "control": CONTROL_TYPES}

MIN_CONTRADICTIONS = 60
MIN_CONTRADICTION_TYPES = 8
MIN_CONTROLS = 40
MIN_LOOKALIKES = 15
MIN_CASE_IDS = 30
ID_RE = re.compile(r"^c\d{3,}$")


def load_references(tsv: Path) -> dict[str, str]:
    refs: dict[str, str] = {}
    with open(tsv, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            prev = refs.setdefault(row["case_id"], row["reference"])
            if prev != row["reference"]:
                raise SystemExit(f"{tsv}: case {row['case_id']} has two different references")
    return refs


def check(cases_path: Path, refs: dict[str, str]) -> tuple[list[str], list[dict]]:
    errors: list[str] = []
    items: list[dict] = []
    seen: set[str] = set()
    for n, line in enumerate(cases_path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            errors.append(f"line {n}: blank line")
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {n}: not JSON ({exc})")
            continue
        where = f"line {n} ({item.get('id', '?')})"
        if not isinstance(item, dict) or set(item) != set(FIELDS):
            errors.append(f"{where}: fields must be exactly {FIELDS}")
            continue
        if not all(isinstance(item[f], str) for f in FIELDS):
            errors.append(f"{where}: every field must be a string")
            continue
        if not ID_RE.match(item["id"]):
            errors.append(f"{where}: id must look like c001")
        if item["id"] in seen:
            errors.append(f"{where}: duplicate id")
        seen.add(item["id"])
        if item["kind"] not in TYPES:
            errors.append(f"{where}: kind {item['kind']!r} not in {sorted(TYPES)}")
        elif item["type"] not in TYPES[item["kind"]]:
            errors.append(f"{where}: type {item['type']!r} not valid for kind {item['kind']}")
        ref = refs.get(item["case_id"])
        if ref is None:
            errors.append(f"{where}: case_id {item['case_id']!r} not in the TSV")
        else:
            k = ref.count(item["original"]) if item["original"] else 0
            if k != 1:
                errors.append(f"{where}: original occurs {k} times in the reference (need 1)")
        if item["edited"] == item["original"]:
            errors.append(f"{where}: edited equals original")
        if not item["note"].strip() or "\n" in item["note"]:
            errors.append(f"{where}: note must be one non-empty line")
        items.append(item)
    return errors, items


def apply(item: dict, refs: dict[str, str]) -> str:
    """The edited report: the reference with its one ``original`` span replaced."""
    return refs[item["case_id"]].replace(item["original"], item["edited"], 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    args = ap.parse_args(argv)

    refs = load_references(args.tsv)
    errors, items = check(args.cases, refs)

    by_kind = Counter(i["kind"] for i in items)
    by_type = Counter((i["kind"], i["type"]) for i in items)
    contra_types = {t for k, t in by_type if k == "contradiction"}
    lookalikes = sum(n for (k, t), n in by_type.items() if k == "control" and t in LOOKALIKE_TYPES)
    case_ids = {i["case_id"] for i in items}
    texts = {refs[c] for c in case_ids if c in refs}

    if by_kind["contradiction"] < MIN_CONTRADICTIONS:
        errors.append(f"only {by_kind['contradiction']} contradictions (need {MIN_CONTRADICTIONS})")
    if len(contra_types) < MIN_CONTRADICTION_TYPES:
        n_types = len(contra_types)
        errors.append(f"only {n_types} contradiction types (need {MIN_CONTRADICTION_TYPES})")
    if by_kind["control"] < MIN_CONTROLS:
        errors.append(f"only {by_kind['control']} controls (need {MIN_CONTROLS})")
    if lookalikes < MIN_LOOKALIKES:
        errors.append(f"only {lookalikes} look-alike controls (need {MIN_LOOKALIKES})")
    if len(case_ids) < MIN_CASE_IDS:
        errors.append(f"only {len(case_ids)} distinct case ids (need {MIN_CASE_IDS})")

    for kind in ("contradiction", "control"):
        print(f"{kind}: {by_kind[kind]}")
        for (k, t), n in sorted(by_type.items()):
            if k == kind:
                mark = " (look-alike)" if t in LOOKALIKE_TYPES else ""
                print(f"  {t:24s} {n:3d}{mark}")
    print(f"look-alike controls: {lookalikes}")
    print(f"distinct case ids: {len(case_ids)}; distinct reference texts: {len(texts)}")

    for e in errors:
        print("ERROR:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
