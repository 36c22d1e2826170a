"""Inputs of the small recorded runs several tests build: a report and its attacked version
(which contradicts it), written as a ``replay:`` file, and a reference table."""

from __future__ import annotations

import json
from pathlib import Path

ORIGINAL = (  # contradicts itself: lymphovascular invasion affirmed, then denied
    "Microscopic: benign glands without atypia. Lymphocytes are present.\n"
    "Lymphovascular invasion is present.\n"
    "Diagnosis: invasive carcinoma, no lymphovascular invasion.\n"
    "Immunohistochemistry: ER positive."
)
ATTACKED = (
    "Microscopic: atypical glands with necrosis. Lymphocytes are present.\n"
    "Diagnosis: invasive carcinoma, high grade.\n"
    "Immunohistochemistry: ER positive."
)
REFERENCE = "Diagnosis: invasive ductal carcinoma, grade 2."


def contradicting_records(item_id: str, attack: str, *, stain: bool = True) -> list[dict]:
    """The original report, its stain-shifted run (same text) and the attacked one."""
    records = [{"item_id": item_id, "condition": "original", "report": ORIGINAL}]
    if stain:
        records.append({"item_id": item_id, "condition": "stain", "report": ORIGINAL})
    records.append({"item_id": item_id, "condition": attack, "report": ATTACKED})
    return records


def write_replay(path: Path, records: list[dict]) -> Path:
    """A ``replay:`` JSONL file of these records."""
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    return path


def write_references(path: Path, item_id: str) -> Path:
    """A two-column reference table giving ``item_id`` :data:`REFERENCE`."""
    path.write_text(f"item_id\treference\n{item_id}\t{REFERENCE}\n", encoding="utf-8")
    return path
