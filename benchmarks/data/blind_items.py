"""The blind Logic contradiction set: how its items are stored, split and applied.

Items were written by hand by helpers who never read pathgls's code (see README.md in this
folder), as edits of real reports: rows of ``../shared/data/reports/tcga_reports_dev.tsv``
(``source = "tcga"``) or references of ``../shared/data/expert_scores/hare_expert_dev.tsv``
(``source = "expert"``). The report texts are never stored here: an item keeps only the span
it replaces (offsets into the base text and a SHA-256 of the replaced characters), the new text
that replaces it, and the span of the statement it contradicts (offsets into the edited text).

``split`` was assigned once, before any rule was written or tuned, by a hash of the item's
``group`` (a contradiction and its look-alike control share a group and a split), balanced per
class: ``dev`` is the half Logic was tuned on, ``test`` the untouched half, reported once.

Usage (writes a set's file from the helpers' raw files; run once per set):
    python benchmarks/data/blind_items.py --raw /work/blind/ba.jsonl /work/blind/bb.jsonl
    python benchmarks/data/blind_items.py --set 2 --raw /work/blind2/b[c-f].jsonl
    python benchmarks/data/blind_items.py --set 3 --raw /work/blind3/b[g-j].jsonl
    python benchmarks/data/blind_items.py --set 5 --raw /work/blind5/b[k-n].jsonl
(set 5's VLM items carry their own ``base`` text, written once to ``VLM_BASES``.)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared" / "data"
#: The blind sets: name → (file, the salt that split it). Set 2 was written later, by four
#: other helpers, on held-out (odd) TCGA rows no item of set 1 uses, and split on arrival.
#: Set 3 (a third round, four more helpers) uses rows i % 4 == 3 that sets 1 and 2 leave free.
SETS = {
    "1": (HERE / "logic_blind.jsonl", "pathgls-logic-blind-2026-11-26"),
    "2": (HERE / "logic_blind2.jsonl", "pathgls-logic-blind2-2026-11-26-second-set"),
    "3": (HERE / "logic_blind3.jsonl", "pathgls-logic-blind3-2026-11-26-third-set"),
    # set 5 (issue 32): 120 edits of quarter-1 TCGA rows no earlier set uses, and 60 six-field
    # VLM-style reports written by the helpers themselves (their texts: VLM_BASES), each with a
    # contradiction and a hard control; split on arrival by (real or VLM, class)
    "5": (HERE / "logic_blind5.jsonl", "pathgls-logic-blind5-2026-12-02-judge-round"),
}
#: The six-field VLM-style base reports of set 5 (written by its helpers, not real reports).
VLM_BASES = HERE / "logic_blind5_vlm_bases.jsonl"
OUT, SALT = SETS["1"]


def base_texts(shared: Path = SHARED) -> dict[tuple[str, str], str]:
    """(source, base id) → the unedited report text."""
    csv.field_size_limit(sys.maxsize)
    out: dict[tuple[str, str], str] = {}
    with open(shared / "reports" / "tcga_reports_dev.tsv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            out[("tcga", row["id"])] = row["report"]
    with open(shared / "expert_scores" / "hare_expert_dev.tsv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["reference"].strip():
                out[("expert", row["case_id"])] = row["reference"]
    if VLM_BASES.exists():
        for line in VLM_BASES.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[("vlm", row["id"])] = row["text"]
    return out


def apply(item: dict, texts: dict[tuple[str, str], str]) -> tuple[str, str]:
    """The unedited and the edited text of an item (checks the stored hash)."""
    base = texts[(item["source"], item["base_id"])]
    a, b = item["at"]
    if hashlib.sha256(base[a:b].encode()).hexdigest()[:16] != item["sha"]:
        raise ValueError(f"{item['id']}: the base text changed under the item")
    return base, base[:a] + item["insert"] + base[b:]


def _compact(raw: dict, texts: dict[tuple[str, str], str]) -> dict:
    base = texts[(raw["source"], raw["base_id"])]
    assert base.count(raw["original"]) == 1, raw["id"]
    start = base.index(raw["original"])
    orig, new = raw["original"], raw["edited"]
    p = 0
    while p < min(len(orig), len(new)) and orig[p] == new[p]:
        p += 1
    s = 0
    while s < min(len(orig), len(new)) - p and orig[-1 - s] == new[-1 - s]:
        s += 1
    a, b = start + p, start + len(orig) - s
    insert = new[p : len(new) - s]
    edited = base[:a] + insert + base[b:]
    against = edited.find(raw["against"])
    assert against >= 0, raw["id"]
    return {
        "id": raw["id"],
        "source": raw["source"],
        "base_id": raw["base_id"],
        "organ": raw["organ"],
        "class": raw["class"],
        "kind": raw["kind"],
        "group": raw["group"],
        "at": [a, b],
        "sha": hashlib.sha256(base[a:b].encode()).hexdigest()[:16],
        "insert": insert,
        "against": [against, against + len(raw["against"])],
        "note": raw["note"],
    }


def load(name: str = "1") -> list[dict]:
    """The items of blind set ``name``."""
    path = SETS[name][0]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def split(items: list[dict], salt: str = SALT) -> None:
    """Give every item its ``split``: half of each class's groups to dev, half to test."""
    groups: dict[tuple[bool, str], set[str]] = defaultdict(set)
    for it in items:
        groups[(it["source"] == "vlm", it["class"])].add(it["group"])
    which: dict[str, str] = {}
    for members in groups.values():
        ordered = sorted(members, key=lambda g: hashlib.sha256(f"{salt}:{g}".encode()).hexdigest())
        for i, g in enumerate(ordered):
            which[g] = "dev" if i < (len(ordered) + 1) // 2 else "test"
    for it in items:
        it["split"] = which[it["group"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", nargs="+", type=Path, required=True)
    ap.add_argument("--set", default="1", choices=sorted(SETS))
    args = ap.parse_args()
    out, salt = SETS[args.set]
    raws = [
        json.loads(line)
        for path in args.raw
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    vlm = {r["base_id"]: r.pop("base") for r in raws if r["source"] == "vlm"}
    if vlm:
        with open(VLM_BASES, "w", encoding="utf-8") as fh:
            for rid, text in sorted(vlm.items()):
                fh.write(json.dumps({"id": rid, "text": text}, ensure_ascii=False) + "\n")
    texts = base_texts()
    items = [_compact(r, texts) for r in raws]
    split(items, salt)
    with open(out, "w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps(it, ensure_ascii=False) + "\n")
    for it in items:
        apply(it, texts)
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for it in items:
        counts[(it["split"], it["class"], it["kind"])] += 1
    for key in sorted(counts):
        print(*key, counts[key])


if __name__ == "__main__":
    main()
