"""The blind Logic contradiction sets (benchmarks/data/logic_blind*.jsonl) are well formed.

Their design is what makes the benchmark honest: every contradiction has one look-alike control
in its group, a group never straddles the dev/test split, each class is split evenly, and every
item still applies to the unedited report it was written on (the stored hash of the replaced
span matches the shared text).
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"
sys.path.insert(0, str(DATA))

import blind_items  # noqa: E402  (benchmarks/data/blind_items.py)

FIELDS = {"id", "source", "base_id", "organ", "class", "kind", "group", "at", "sha", "insert"}
CLASSES = {
    "behaviour",
    "nodes",
    "margins",
    "grade",
    "stage",
    "ihc",
    "polarity",
    "laterality",
    "type",
    "numbers",
}


#: Set 5's VLM-style reports have two classes of their own (cells and tissue of origin).
VLM_CLASSES = CLASSES | {"cells", "tissue"}


@pytest.mark.parametrize("name", sorted(blind_items.SETS))
def test_a_blind_set_is_paired_and_split_evenly(name: str) -> None:
    items = blind_items.load(name)
    assert len(items) == (240 if name == "5" else 480)
    assert len({it["id"] for it in items}) == len(items)
    for it in items:
        assert set(it) >= FIELDS, it["id"]
        assert it["class"] in (VLM_CLASSES if it["source"] == "vlm" else CLASSES)
        assert it["kind"] in ("contradiction", "control")
    groups: dict[str, list[dict]] = defaultdict(list)
    for it in items:
        groups[it["group"]].append(it)
    for members in groups.values():
        assert sorted(m["kind"] for m in members) == ["contradiction", "control"]
        assert len({m["split"] for m in members}) == 1
        assert len({m["class"] for m in members}) == 1
    # each (real or VLM, class) is split in halves: equal, or one group apart when odd
    per: dict[tuple[bool, str], Counter] = defaultdict(Counter)
    for it in items:
        per[(it["source"] == "vlm", it["class"])][it["split"]] += 1
    for key, halves in per.items():
        assert abs(halves["dev"] - halves["test"]) <= 2, (key, halves)
    if name != "5":
        counts = Counter((it["split"], it["class"], it["kind"]) for it in items)
        assert set(counts.values()) == {12} and len(counts) == 2 * len(CLASSES) * 2
    else:
        assert sum(it["source"] == "vlm" for it in items) == 120  # 60 reports × edit + control


def test_no_two_sets_share_a_tcga_base_report() -> None:
    bases = {
        n: {it["base_id"] for it in blind_items.load(n) if it["source"] == "tcga"}
        for n in blind_items.SETS
    }
    assert len(bases) >= 3 and all(bases.values())
    for a, b in itertools.combinations(sorted(bases), 2):
        assert not bases[a] & bases[b], (a, b)


@pytest.mark.parametrize("name", sorted(blind_items.SETS))
def test_every_item_applies_to_its_shared_base_text(name: str, shared_data: Path) -> None:
    texts = blind_items.base_texts(shared_data)
    for it in blind_items.load(name):
        base, edited = blind_items.apply(it, texts)
        assert edited != base
        a, b = it["against"]
        assert 0 <= a < b <= len(edited), it["id"]
