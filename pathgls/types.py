"""Typed results shared by every module: reports, entities, scores, ScoreCards.

All of them are dataclasses with ``to_dict``/``from_dict`` so that a ScoreCard round-trips
through JSON exactly. A module that could not run carries ``value=None`` and a
``missing_reason`` — never an invented number.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Literal

EntityType = str  # e.g. "pathological_diagnosis", "ihc_marker", "grade" (see pathgls.text)
Route = Literal["deploy", "review", "reject"]

SCORECARD_VERSION = 1


@dataclass(frozen=True)
class Entity:
    """One clinical entity mentioned in a report.

    ``concept`` is the canonical name of what was mentioned (synonyms share it: "IDC" and
    "invasive ductal carcinoma" are both ``invasive ductal carcinoma``); ``attributes`` carry
    what the clinical rules need (``behavior=malignant``, ``grade=high``, ``result=positive``).
    Instances are not hashable (``attributes`` is a dict); compare them with ``==``.
    """

    text: str
    type: EntityType
    start: int  # character offset in the report text (inclusive)
    end: int  # character offset (exclusive)
    section: str = "other"  # diagnosis, microscopic, gross, ihc, comment or other
    negated: bool = False
    uncertain: bool = False
    confidence: float = 1.0
    concept: str = ""  # canonical concept; "" when the backend has none
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)`` character offsets."""
        return (self.start, self.end)


@dataclass(frozen=True)
class Relation:
    """A directed relation between two entities of the same report (indices into its entities)."""

    head: int
    tail: int
    type: str  # modifier_of, result_of, located_in, supports, same_as
    confidence: float = 1.0


@dataclass
class Report:
    """A report as generated or given, with the condition it was produced under."""

    text: str
    condition: str = "original"  # original, stain, attack:<name>, reference
    source: str = ""  # subject spec or file it came from
    warnings: list[str] = field(default_factory=list)


_GENERIC_STATION = "lymph node"


@dataclass(frozen=True)
class Scope:
    """Which tissue a statement of a report is about (see :mod:`pathgls.text.scope`).

    Every field is None when the report does not say. Two statements can only contradict each
    other when their scopes are :meth:`compatible`; a negation only denies what it
    :meth:`covers`.
    """

    part: str | None = None  # specimen part label: "A", "2"
    organ: str | None = None  # organ of the tissue: "breast", "uterus"
    side: str | None = None  # left, right or bilateral
    station: str | None = None  # lymph-node station: "lymph node", "sentinel lymph node level 2"
    locus: str | None = None  # a structure the statement is about: "margin"
    lesion: str | None = None  # the named diagnosis a grade, result or size is said of
    quantifier: str | None = None  # "partial" (some of a set) or "all"

    def compatible(self, other: Scope) -> bool:
        """Whether both can be about the same tissue (no field says otherwise)."""
        for name in ("part", "organ", "locus"):
            a, b = getattr(self, name), getattr(other, name)
            if a is not None and b is not None and not _overlap(a, b):
                return False
        if not _same_lesion(self.lesion, other.lesion):
            return False
        if not _sides_meet(self.side, other.side):
            return False
        return _station_covers(self.station, other.station) or _station_covers(
            other.station, self.station
        )

    def covers(self, other: Scope) -> bool:
        """Whether a negation scoped ``self`` denies what a statement scoped ``other`` affirms.

        The negation must be at least as general as the statement: a negation about part of a
        set ("the remaining nodes") covers nothing; one about an organ, a structure ("the
        margins", "the nipple"), a lymph-node station or one side covers only statements
        known to be about the same.
        """
        if self.quantifier == "partial":
            return False
        for name in ("part", "organ", "locus"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is not None and (theirs is None or not _within(theirs, mine)):
                return False
        if not _same_lesion(self.lesion, other.lesion):
            return False
        if self.side not in (None, "bilateral") and self.side != other.side:
            return False
        if self.station is not None and other.station is None:
            return False
        return _station_covers(self.station, other.station)

    def describe(self) -> str:
        """Short text for evidence: "part A, breast, left" ("report" when nothing is known)."""
        bits = [f"part {self.part}" if self.part else ""]
        bits += [self.organ or "", self.side or "", self.station or ""]
        bits += [f"at the {self.locus}" if self.locus else "", self.lesion or ""]
        bits += [f"({self.quantifier})" if self.quantifier else ""]
        return ", ".join(b for b in bits if b) or "report"

    def to_dict(self) -> dict[str, str]:
        """The fields that are set."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def _same_lesion(a: str | None, b: str | None) -> bool:
    """Whether two named lesions can be one: one name says less than the other ("invasive
    carcinoma" and "invasive ductal carcinoma"), not something else ("mucinous carcinoma")."""
    if a is None or b is None or a == b:
        return True
    wa, wb = set(a.split()), set(b.split())
    return wa <= wb or wb <= wa


def _overlap(a: str, b: str) -> bool:
    """Whether two values ("ovary|fallopian tube" for several) share one."""
    return bool(set(a.split("|")) & set(b.split("|")))


def _within(value: str, allowed: str) -> bool:
    """Whether every one of ``value``'s alternatives is among ``allowed``'s."""
    return set(value.split("|")) <= set(allowed.split("|"))


def _sides_meet(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b or "bilateral" in (a, b)


def _station_covers(general: str | None, specific: str | None) -> bool:
    """Whether node station ``general`` includes ``specific`` (None: any station)."""
    if general is None or specific is None or general == specific:
        return True
    return general == _GENERIC_STATION or specific.startswith(general + " level")


@dataclass
class ReportGraph:
    """Entities and relations of one report (``pathgls.text`` turns it into a networkx graph)."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    scopes: list[Scope] = field(default_factory=list)  # per entity (empty: not inferred)


@dataclass
class ModuleScore:
    """One module's score with its evidence; ``value`` is None when the module could not run."""

    name: str  # grounding, logic, stability, hare, ...
    value: float | None
    missing_reason: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.value is None and not self.missing_reason:
            raise ValueError(f"module {self.name!r} has no value and no missing_reason")

    @property
    def missing(self) -> bool:
        """True when the module could not run."""
        return self.value is None


@dataclass
class GateDecision:
    """Where a report goes and why."""

    route: Route
    reasons: list[str] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=dict)


@dataclass
class ScoreCard:
    """Everything pathgls knows about one (slide, subject) pair."""

    item_id: str
    inputs: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, Report] = field(default_factory=dict)
    modules: dict[str, ModuleScore] = field(default_factory=dict)
    trust: float | None = None
    decision: GateDecision | None = None
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    version: int = SCORECARD_VERSION

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dataclasses.asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        """JSON text (``kwargs`` go to :func:`json.dumps`)."""
        kwargs.setdefault("indent", 2)
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreCard:
        """Inverse of :meth:`to_dict`."""
        d = dict(data)
        d["reports"] = {k: Report(**v) for k, v in d.get("reports", {}).items()}
        d["modules"] = {k: ModuleScore(**v) for k, v in d.get("modules", {}).items()}
        if d.get("decision") is not None:
            d["decision"] = GateDecision(**d["decision"])
        return cls(**d)
