"""Typed results shared by every module: reports, entities, scores, ScoreCards.

All of them are dataclasses with ``to_dict``/``from_dict`` so that a ScoreCard round-trips
through JSON exactly (schema: ``pathgls/resources/scorecard.schema.json``, generated from these
dataclasses by ``python -m pathgls.schema``: a field's comment is its description). A module
that could not run carries ``value=None`` and a ``missing_reason`` — never an invented number.
Each module's evidence is JSON in the card; its typed views live in :mod:`pathgls.evidence`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, get_args

from pathgls.errors import ScoreCardError
from pathgls.jsontext import JSONTextError, loads_strict
from pathgls.numeric import finite

if TYPE_CHECKING:
    from pathgls.evidence import ModuleEvidence

EntityType = str  # e.g. "pathological_diagnosis", "ihc_marker", "grade" (see pathgls.text)
Route = Literal["deploy", "review", "reject"]
#: How far the evaluation of one (item, subject) got: ``ok`` every generation ran, ``partial``
#: some perturbed generation failed (its module is missing), ``failed`` no report was scored.
Status = Literal["ok", "partial", "failed"]
STATUSES: tuple[Status, ...] = get_args(Status)
ROUTES: tuple[Route, ...] = get_args(Route)

#: Version 2: ``status`` and ``subject`` are fields of the card (version 1 kept them in
#: ``inputs``; :meth:`ScoreCard.from_dict` still reads it).
SCORECARD_VERSION = 2
E = TypeVar("E", bound="ModuleEvidence")


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

    text: str  # the report as generated (or the reference)
    condition: str = "original"  # original, stain, attack:<name>, reference
    source: str = ""  # subject spec or file it came from
    warnings: list[str] = field(default_factory=list)  # problems met reading it (cleaning, ...)


@dataclass(frozen=True)
class Scope:
    """Which tissue a statement of a report is about (see :mod:`pathgls.text.scope`).

    Every field is None when the report does not say. The report graph and the diagnosis keys
    (:mod:`pathgls.text.diagnoses`) read it; whether two statements are about the same tissue
    is decided by Logic's case model (:mod:`pathgls.text.case`).
    """

    part: str | None = None  # specimen part label: "A", "2"
    organ: str | None = None  # organ of the tissue: "breast", "uterus"
    side: str | None = None  # left, right or bilateral
    station: str | None = None  # lymph-node station: "lymph node", "sentinel lymph node level 2"
    locus: str | None = None  # a structure the statement is about: "margin"
    lesion: str | None = None  # the named diagnosis a grade, result or size is said of
    quantifier: str | None = None  # "partial" (some of a set) or "all"

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


@dataclass
class ReportGraph:
    """Entities and relations of one report (``pathgls.text`` turns it into a networkx graph)."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    scopes: list[Scope] = field(default_factory=list)  # per entity (empty: not inferred)


def _fields_of(cls: type, data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``data`` as keyword arguments of dataclass ``cls``; unknown keys are an error."""
    if not isinstance(data, Mapping):
        raise ScoreCardError(f"{where}: expected an object, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(str(k) for k in data if k not in names)
    if unknown:
        raise ScoreCardError(f"{where}: unknown key(s) {', '.join(unknown)}")
    return dict(data)


def _check(ok: bool, where: str, expected: str, value: Any) -> None:
    if not ok:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise ScoreCardError(f"{where}: expected {expected}, got {shown}")


def _strings(value: Any, where: str) -> None:
    _check(
        isinstance(value, list) and all(isinstance(v, str) for v in value),
        where,
        "a list of strings",
        value,
    )


#: How the warnings of cards written before ``ModuleScore.random_weights`` named random weights.
_RANDOM_MARK = "random-weight"


@dataclass
class ModuleScore:
    """One module's score with its evidence; ``value`` is None when the module could not run.

    ``evidence`` is the module's JSON; :mod:`pathgls.evidence` has its typed views
    (:meth:`ScoreCard.evidence`).
    """

    name: str  # grounding, logic, stability, hare, ...: its key in the card's modules
    value: float | None  # the score in [0, 1]; None when the module could not run
    missing_reason: str | None = None  # why it could not run (required when value is None)
    # the module's evidence (typed views: pathgls.evidence)
    evidence: dict[str, Any] = field(default_factory=dict)
    # caveats of the score (random test weights, capped pairs, ...)
    warnings: list[str] = field(default_factory=list)
    # computed with a model of random test weights: a wiring check, never a result
    random_weights: bool = False

    def __post_init__(self) -> None:
        if self.value is None and not self.missing_reason:
            raise ValueError(f"module {self.name!r} has no value and no missing_reason")
        if not isinstance(self.random_weights, bool):
            raise ValueError(f"module {self.name!r}: random_weights must be true or false")

    @property
    def missing(self) -> bool:
        """True when the module could not run."""
        return self.value is None

    @property
    def finite_value(self) -> float | None:
        """``value`` as a float, or None when missing or not a finite number."""
        return finite(self.value)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "module") -> ModuleScore:
        """Inverse of :func:`dataclasses.asdict`, with the types checked.

        Raises:
            ScoreCardError: a key is unknown, missing or of the wrong type.
        """
        d = _fields_of(cls, data, where)
        for key in ("name", "value"):
            if key not in d:
                raise ScoreCardError(f"{where}: no {key!r}")
        _check(isinstance(d["name"], str), f"{where}.name", "a string", d["name"])
        v = d["value"]
        number = isinstance(v, int | float) and not isinstance(v, bool)
        _check(v is None or number, f"{where}.value", "a number or null", v)
        if number and not math.isnan(v) and not 0.0 <= v <= 1.0:  # a hand-edited card
            raise ScoreCardError(f"{where}.value is {v!r}, outside [0, 1]: not a module score")
        reason = d.get("missing_reason")
        _check(
            reason is None or isinstance(reason, str), f"{where}.missing_reason", "a string", reason
        )
        _check(
            isinstance(d.get("evidence", {}), dict),
            f"{where}.evidence",
            "an object",
            d.get("evidence"),
        )
        _strings(d.get("warnings", []), f"{where}.warnings")
        random = d.get("random_weights")
        _check(
            random is None or isinstance(random, bool),
            f"{where}.random_weights",
            "a boolean",
            random,
        )
        if random is None:  # a card from before the flag: its warnings said so
            d["random_weights"] = any(_RANDOM_MARK in w for w in d.get("warnings", []))
        try:
            return cls(**d)
        except ValueError as e:
            raise ScoreCardError(f"{where}: {e}") from e


@dataclass
class GateDecision:
    """Where a report goes and why."""

    route: Route  # where the report goes
    # why: the first reason is the decision (and what blocked deploy), then each scored
    # module, the one that lowered the trust most first
    reasons: list[str] = field(default_factory=list)
    # deploy, review, min_coverage and floor:<module> thresholds applied (compared at three
    # decimals, as printed)
    thresholds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "decision") -> GateDecision:
        """Inverse of :func:`dataclasses.asdict`, with the types checked.

        Raises:
            ScoreCardError: a key is unknown or of the wrong type, or the route is unknown.
        """
        d = _fields_of(cls, data, where)
        _check(d.get("route") in ROUTES, f"{where}.route", " or ".join(ROUTES), d.get("route"))
        _strings(d.get("reasons", []), f"{where}.reasons")
        _check(
            isinstance(d.get("thresholds", {}), dict),
            f"{where}.thresholds",
            "an object",
            d.get("thresholds"),
        )
        return cls(**d)


# keys of a version-1 card's ``inputs`` that version 2 made fields of the card
_V1_INPUT_FIELDS = ("subject", "status")


class CardInputs(TypedDict, total=False):
    """What went into a card (``ScoreCard.inputs``): the keys the runner writes. A card of
    another writer may hold other keys too; readers keep them."""

    subject_model_id: str | None
    subject_revision: str | None
    # The subject is a learned model (not a rule-based captioner).
    subject_learned: bool | None
    # Path of the slide or ROI.
    item: str
    kind: str  # slide or roi
    # Adversarial prompt name.
    attack: str
    seed: int
    # thumbnail, montage or roi.
    view: str
    # Image-text encoder: name, model_id, revision, random_weights.
    encoder: dict[str, Any] | None
    # Repo ids and revisions of the text models by role (extractor, nli, embedder, hare, report).
    models: dict[str, Any]
    extractor: str
    nli: str
    embedder: str
    # A reference report was given (HARE).
    reference: bool
    slide_size: list[int]
    level0_mpp: float
    mpp_source: str
    read_level: int
    # Feature bag path.
    bag: str
    n_patches: int
    # 0: a complete bag was reused.
    patches_encoded_now: int
    # The slide's tiling was read from its patches file, not computed again.
    tiling_reused: bool
    # Path of the slide's patches file (its tiling).
    patches_file: str
    # Reads of the slide: opens, patches_for_view, thumbnails, full_hashes.
    slide_reads: dict[str, int]
    roi_size: list[int]
    # Prompt name per generation (neutral, attack).
    prompts: dict[str, str]
    view_description: str
    # The input file's identity when the card was made: a rerun skips the card while it
    # matches (pathgls.tiling.identity).
    slide_identity: dict[str, Any]


@dataclass
class ScoreCard:
    """Everything pathgls knows about one (item, subject) pair.

    ``status`` and ``subject`` are the card's own (``inputs`` holds the rest of what went in:
    item, models, seeds, prompts); :meth:`value` reads a module's score and :meth:`evidence`
    its typed evidence. ``to_dict``/``from_dict`` round-trip through JSON exactly.
    """

    item_id: str  # slide or ROI id (file stem)
    # Spec of the subject model that wrote the reports ("" when there is none, e.g. a card
    # made outside a run); cards of one run are grouped and stored by it.
    subject: str = ""
    # ok: every generation ran; partial: a perturbed generation failed (its module is
    # missing); failed: no report was scored (unreadable slide, dead subject, ...).
    status: Status = "ok"
    # what went in (provenance: item, models, seeds, prompts); not status or subject
    inputs: CardInputs = field(default_factory=lambda: CardInputs())
    # reports by condition: original, stain, attack:<name>, reference
    reports: dict[str, Report] = field(default_factory=dict)
    modules: dict[str, ModuleScore] = field(default_factory=dict)  # module scores by name
    # fused trust score in [0, 1]; None when no weighted module could run, or the card failed
    trust: float | None = None
    decision: GateDecision | None = None  # the gate's decision; None when not gated or failed
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # what went wrong (first line: the reason)
    version: int = SCORECARD_VERSION  # the card layout's version

    def __post_init__(self) -> None:
        _check(
            isinstance(self.item_id, str) and bool(self.item_id),
            "item_id",
            "a non-empty string",
            self.item_id,
        )
        _check(isinstance(self.subject, str), "subject", "a string", self.subject)
        _check(self.status in STATUSES, "status", " or ".join(STATUSES), self.status)
        _check(isinstance(self.inputs, dict), "inputs", "an object", self.inputs)
        clash = [k for k in _V1_INPUT_FIELDS if k in self.inputs]
        if clash:
            raise ScoreCardError(
                f"inputs holds {', '.join(clash)}: since ScoreCard version 2 they are fields "
                "of the card (ScoreCard(subject=..., status=...))"
            )
        trust = self.trust
        number = isinstance(trust, int | float) and not isinstance(trust, bool)
        _check(trust is None or number, "trust", "a number or null", trust)
        if self.status == "failed" and (trust is not None or self.decision is not None):
            raise ScoreCardError("a failed card has no trust score and no gate decision")
        _check(self.version == SCORECARD_VERSION, "version", str(SCORECARD_VERSION), self.version)

    def value(self, name: str) -> float | None:
        """The value of module ``name`` as a float, or None.

        None when the card has no such module, the module could not run (missing), or its
        value is not a finite number; never a made-up number. The trust score is ``trust``.
        """
        score = self.modules.get(name)
        return None if score is None else score.finite_value

    def evidence(self, kind: type[E]) -> E | None:
        """The typed evidence of module ``kind.MODULE`` (e.g. ``card.evidence(LogicEvidence)``).

        Returns:
            None when the card has no such module; else the view of its evidence (sparse when
            the module could not run).

        Raises:
            EvidenceError: the stored evidence does not have the record's shape.
        """
        score = self.modules.get(kind.MODULE)
        return None if score is None else kind.from_dict(score.evidence)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dataclasses.asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        """JSON text (``kwargs`` go to :func:`json.dumps`)."""
        kwargs.setdefault("indent", 2)
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str | bytes) -> ScoreCard:
        """A card from its JSON text (any version this pathgls reads).

        Raises:
            ScoreCardError: not JSON (or a key given twice, or nested too deeply), or not a
                card (see :meth:`from_dict`).
        """
        try:
            data = loads_strict(text)
        except JSONTextError as e:  # invalid, not UTF-8, a key given twice, nested too deeply
            raise ScoreCardError(f"not JSON: {e}") from e
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoreCard:
        """Inverse of :meth:`to_dict`; reads version 1 cards too (migrated to the current one).

        A version-1 card keeps ``status`` and ``subject`` in ``inputs``: they move to the card's
        fields. A version-1 card without a status is read as ``ok`` (what its readers assumed),
        with a warning saying so.

        Raises:
            ScoreCardError: not a card, a version this pathgls does not read, or a key that is
                unknown, missing or of the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ScoreCardError(f"a ScoreCard is a JSON object, got {type(data).__name__}")
        d = dict(data)
        if "item_id" not in d:
            raise ScoreCardError("not a ScoreCard: no item_id")
        version = d.pop("version", 1)
        _check(
            isinstance(version, int) and not isinstance(version, bool),
            "version",
            "an integer",
            version,
        )
        if version > SCORECARD_VERSION or version < 1:
            raise ScoreCardError(
                f"ScoreCard version {version} cannot be read by this pathgls (it reads versions "
                f"1 to {SCORECARD_VERSION}; a newer card needs a newer pathgls)"
            )
        if version == 1:
            d = _from_v1(d)
        d = _fields_of(cls, d, "ScoreCard")
        reports = d.get("reports", {})
        _check(isinstance(reports, dict), "reports", "an object", reports)
        d["reports"] = {k: _report(v, f"reports.{k}") for k, v in reports.items()}
        modules = d.get("modules", {})
        _check(isinstance(modules, dict), "modules", "an object", modules)
        d["modules"] = {
            k: ModuleScore.from_dict(v, where=f"modules.{k}") for k, v in modules.items()
        }
        for k, m in d["modules"].items():
            if m.name != k:
                raise ScoreCardError(f"modules.{k}: holds module {m.name!r}")
        if d.get("decision") is not None:
            d["decision"] = GateDecision.from_dict(d["decision"])
        for key in ("warnings", "errors"):
            _strings(d.get(key, []), key)
        for key in ("inputs", "timings"):
            _check(isinstance(d.get(key, {}), dict), key, "an object", d.get(key))
        return cls(**d)


def _report(data: Any, where: str) -> Report:
    d = _fields_of(Report, data, where)
    _check(isinstance(d.get("text"), str), f"{where}.text", "a string", d.get("text"))
    for key in ("condition", "source"):
        _check(isinstance(d.get(key, ""), str), f"{where}.{key}", "a string", d.get(key))
    _strings(d.get("warnings", []), f"{where}.warnings")
    return Report(**d)


def _from_v1(d: dict[str, Any]) -> dict[str, Any]:
    """A version-1 card's dict in the current layout (status and subject out of ``inputs``)."""
    clash = [k for k in _V1_INPUT_FIELDS if k in d]
    if clash:
        raise ScoreCardError(f"a version-1 ScoreCard has no top-level {', '.join(clash)}")
    inputs = d.get("inputs", {})
    _check(isinstance(inputs, dict), "inputs", "an object", inputs)
    inputs = dict(inputs)
    d["inputs"] = inputs
    d["subject"] = inputs.pop("subject", None) or ""
    status = inputs.pop("status", None)
    if status is None:
        _strings(d.get("warnings", []), "warnings")
        d["warnings"] = [
            *d.get("warnings", []),
            "version-1 ScoreCard without inputs.status: read as ok",
        ]
        status = "ok"
    d["status"] = status
    return d
