"""The typed case model: parts → targets (tumour, lesions, margins, node groups, tissues) → facts.

A :class:`Fact` is one slot value a statement asserts of one :class:`Target`: "lymphatic
invasion absent" of the tumour of part A, "involved" of the bronchial margin, "3 positive" of
the left pelvic nodes, "ER negative" of the tumour cells. Checks compare facts of the same
target; a target is never the tumour unless the statement is about the tumour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pathgls.text.document import Document, Statement

#: Target kinds. ``tumour`` is the main tumour of a part (or of the case when ``part`` is None);
#: ``lesion`` another named lesion (an in-situ component, a dysplasia, a second tumour type);
#: ``part`` the specimen part as a whole ("no tumour seen" in it); ``tissue`` a named tissue or
#: structure (the adrenal gland, background liver); ``margin`` and ``nodes`` by name/station;
#: ``population`` a cell population other than the tumour (lymphocytes, internal control).
TARGET_KINDS = ("tumour", "lesion", "part", "tissue", "margin", "nodes", "population")

#: Slots and what their value is.
SLOTS = {
    "type": "diagnosis concept of the lesion",
    "behaviour": "malignant, in_situ, premalignant, benign, borderline (key invasive: invasion)",
    "presence": "present/absent: tumour in the target",
    "invasion": "present/absent per kind (lymphovascular, lymphatic, venous, vascular, perineural)",
    "extent": "present/absent per structure the tumour involves",
    "finding": "present/absent per finding (necrosis, microvascular proliferation, …)",
    "grade": "per system: gleason (p+s=sum), grade_group, nottingham, fuhrman, figo, who, "
    "histologic, nuclear, two_tier, differentiation",
    "size": "greatest dimension, cm",
    "side": "left/right",
    "site": "sub-site (lobe, quadrant, pole)",
    "stage": "per axis T/N/M/FIGO: the category (with prefix y/r)",
    "margin": "involved/free (key: what involves it: '' any, invasive, in situ)",
    "margin_distance": "cm to the margin",
    "nodes": "per key positive/examined: a count",
    "node_status": "positive/negative",
    "marker": "per marker: positive/negative/equivocal (key: marker; method in note)",
    "depth": "myometrial invasion as a fraction of the wall (0-1), or depth in mm",
    "metastasis": "the tumour type that spread to the target (a node group, another organ)",
    "mention": "a malignant diagnosis named, not stated as the diagnosis (pairs only)",
    "amount": "per key proliferation (Ki-67/MIB-1 index) or involvement (share of the "
    "specimen): a (low, high) interval in percent",
}


@dataclass(frozen=True)
class Target:
    """What a fact is about."""

    kind: str  # one of TARGET_KINDS
    part: str | None = None  # specimen part label (None: the case as a whole)
    name: str = ""  # lesion concept, margin name, node station, tissue or population name

    def describe(self) -> str:
        """ "part A · margin bronchial", "case · tumour"."""
        where = f"part {self.part}" if self.part else "case"
        what = self.kind + (f" {self.name}" if self.name else "")
        return f"{where} · {what}"


@dataclass(frozen=True)
class Fact:
    """One slot value a statement asserts of a target."""

    slot: str  # one of SLOTS
    key: str  # sub-key: invasion kind, structure, grade system, marker, "" when none
    value: Any  # "present"/"absent", a concept, a number, a category, a tuple (gleason)
    target: Target
    statement: int  # index into Document.statements
    start: int  # evidence span in Document.text
    end: int
    certain: bool = True
    note: str = ""  # extra qualifiers: "gross", "method=fish", "qualifier=invasive", …

    def describe(self) -> str:
        """ "invasion lymphatic = absent"."""
        key = f" {self.key}" if self.key else ""
        return f"{self.slot}{key} = {self.value}"


@dataclass
class PartCase:
    """What the report says of one specimen part (or of the case, ``label`` None)."""

    label: str | None
    title: str = ""
    organ: str | None = None
    side: str | None = None
    lesions: list[str] = field(default_factory=list)  # lesion concepts, main tumour first
    main: str | None = None  # concept of the main tumour (None: no tumour named)
    ambiguous: bool = False  # several tumours: "the tumour" names none of them for sure


@dataclass
class Case:
    """The typed case model of one report."""

    document: Document
    facts: list[Fact] = field(default_factory=list)
    parts: dict[str | None, PartCase] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # why some comparisons stay silent

    def statement(self, i: int) -> Statement:
        """Statement ``i`` of the document."""
        return self.document.statements[i]

    def sentence(self, i: int) -> str:
        """The text of statement ``i``."""
        return self.document.statement_text(self.document.statements[i])

    def evidence(self, f: Fact) -> str:
        """The words a fact was read from."""
        return self.document.text[f.start : f.end]

    def of(self, slot: str, *, certain: bool = True) -> list[Fact]:
        """The facts of one slot (certain ones only, by default)."""
        return [f for f in self.facts if f.slot == slot and (f.certain or not certain)]

    def to_dict(self) -> dict[str, Any]:
        """The model as JSON-ready data: parts → lesions, and every fact with its evidence."""
        parts = []
        for label, p in self.parts.items():
            facts = [f for f in self.facts if f.target.part == label]
            parts.append(
                {
                    "part": label,
                    "title": p.title,
                    "organ": p.organ,
                    "side": p.side,
                    "main_tumour": p.main,
                    "lesions": list(p.lesions),
                    "ambiguous": p.ambiguous,
                    "facts": [self._fact_dict(f) for f in facts],
                }
            )
        return {
            "parts": parts,
            "statements": self.document.kinds(),
            "notes": list(self.notes),
        }

    def _fact_dict(self, f: Fact) -> dict[str, Any]:
        value = list(f.value) if isinstance(f.value, tuple) else f.value
        return {
            "target": f.target.kind + (f":{f.target.name}" if f.target.name else ""),
            "slot": f.slot,
            "key": f.key,
            "value": value,
            "certain": f.certain,
            "note": f.note,
            "statement": f.statement,
            "evidence": self.evidence(f),
        }
