"""Typed results shared by every module: reports, entities, scores, ScoreCards.

All of them are dataclasses with ``to_dict``/``from_dict`` so that a ScoreCard round-trips
through JSON exactly. ``from_dict`` reads by the type hints through pydantic (imported on the
first read, never at ``import pathgls``), and ``pathgls/resources/scorecard.schema.json`` is
pydantic's JSON Schema of the same dataclasses, written by ``python -m pathgls.schema`` (a
field's comment is its description). A module that could not run carries ``value=None`` and a
``missing_reason`` — never an invented number.
Each module's evidence is JSON in the card; its typed views live in :mod:`pathgls.evidence`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict, TypeVar, get_args

from pathgls.errors import ScoreCardError
from pathgls.jsontext import JSONTextError, loads_strict
from pathgls.numeric import finite

if TYPE_CHECKING:  # pydantic is imported on the first card read, never at ``import pathgls``
    from pydantic import GetCoreSchemaHandler, TypeAdapter, ValidationError
    from pydantic_core import CoreSchema

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
C = TypeVar("C")


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

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return _card_schema(cls, handler(source))


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
        return _read(cls, data, where)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return _card_schema(cls, handler(source))


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
        return _read(cls, data, where)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return _card_schema(cls, handler(source))


# keys of a version-1 card's ``inputs`` that version 2 made fields of the card
_V1_INPUT_FIELDS = ("subject", "status")


class _AnObject:
    """pydantic reads the annotated field as a JSON object of anything: :class:`CardInputs`
    names and describes the keys the runner writes (the schema carries them), and a reader keeps
    every key as it is, other writers' too, as it always has."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        from pydantic_core import core_schema as cs

        return cs.dict_schema(keys_schema=cs.str_schema(), values_schema=cs.any_schema())


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
    inputs: Annotated[CardInputs, _AnObject()] = field(default_factory=lambda: CardInputs())
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
        card = _read(cls, d, "")
        for k, m in card.modules.items():
            if m.name != k:
                raise ScoreCardError(f"modules.{k}: holds module {m.name!r}")
        return card

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return _card_schema(cls, handler(source))


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


# --- reading cards through pydantic -----------------------------------------------------------

#: Per card class and process: its pydantic validator and JSON Schema (built on the first read).
_ADAPTERS: dict[type, TypeAdapter[Any]] = {}
_SCHEMAS: dict[type, dict[str, Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    if cls not in _ADAPTERS:
        from pydantic import TypeAdapter

        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def card_json_schema(cls: type) -> dict[str, Any]:
    """pydantic's JSON Schema of card dataclass ``cls``: what its reader checks, by type."""
    if cls not in _SCHEMAS:
        _SCHEMAS[cls] = _adapter(cls).json_schema()
    return _SCHEMAS[cls]


def _read(cls: type[C], data: Any, where: str) -> C:
    """``cls`` read from JSON ``data`` by pydantic; an error names the key below ``where``."""
    from pydantic import ValidationError

    try:
        card: C = _adapter(cls).validate_python(data)
    except ValidationError as e:
        raise _card_error(cls, e, data, where) from e
    return card


def _card_schema(cls: type, inner: CoreSchema) -> CoreSchema:
    """pydantic's reader of a card dataclass: its schema read as JSON, after the checks that
    name the object (an object, no unknown key, a module's name and value present)."""
    from pydantic_core import PydanticCustomError
    from pydantic_core import core_schema as cs

    from pathgls.evidence import read_as_json

    names = frozenset(f.name for f in dataclasses.fields(cls))

    def read(data: Any, validate: cs.ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(data, Mapping):
            raise PydanticCustomError("object_type", "expected an object")
        unknown = sorted(str(k) for k in data if k not in names)
        if unknown:
            raise _said(f"unknown key(s) {', '.join(unknown)}")
        d = dict(data)
        if cls is ModuleScore:
            _module_in(d)
        card = validate(d)
        if cls is ModuleScore:
            _module_out(card)
        return card

    core = dict(inner)
    ref = core.pop("ref", None)  # the wrapper is the card's reader wherever it is used
    return cs.no_info_wrap_validator_function(read, read_as_json(core), ref=ref)


def _said(text: str, sep: str = ": ") -> Exception:
    """An error said as is after the object's path (``modules.logic: no 'name'``)."""
    from pydantic_core import PydanticCustomError

    return PydanticCustomError("card", "{text}", {"text": text, "sep": sep})


def _module_in(d: dict[str, Any]) -> None:
    for key in ("name", "value"):
        if key not in d:
            raise _said(f"no {key!r}")
    if d.get("random_weights") is None:  # a card from before the flag: its warnings said so
        warnings = d.get("warnings", [])
        said = isinstance(warnings, list) and all(isinstance(w, str) for w in warnings)
        d["random_weights"] = said and any(_RANDOM_MARK in w for w in warnings)


def _module_out(score: ModuleScore) -> None:
    v = score.value
    number = isinstance(v, int | float) and not isinstance(v, bool)
    if number and v is not None and not math.isnan(v) and not 0.0 <= v <= 1.0:
        raise _said(f"value is {v!r}, outside [0, 1]: not a module score", ".")  # hand-edited


def _card_error(cls: type, error: ValidationError, data: Any, where: str) -> ScoreCardError:
    """pydantic's first error, said as the path of the key and what it should hold."""
    from pathgls.evidence import json_schema_node, json_types

    first = error.errors(include_url=False)[0]
    ctx = first.get("ctx") or {}
    reason = ctx.get("error")
    if isinstance(reason, ScoreCardError):  # a check of the card's own (__post_init__)
        return reason
    schema = card_json_schema(cls)
    defs = schema.get("$defs", {})
    node, value, path = schema, data, where
    for part in first["loc"]:  # keys, then pydantic's list indices and union tags: not said
        inner = json_schema_node(node, part, defs)
        if inner is None or isinstance(part, int):
            break
        node, path = inner, f"{path}.{part}" if path else str(part)
        value = value.get(part) if isinstance(value, Mapping) else None
    if first["type"] == "card":
        return ScoreCardError(f"{path or 'ScoreCard'}{ctx['sep']}{ctx['text']}")
    if first["type"] == "value_error":  # ModuleScore.__post_init__
        return ScoreCardError(f"{path}: {reason}")
    if first["type"] == "object_type":
        return ScoreCardError(f"{path}: expected an object, got {type(value).__name__}")
    if path == "item_id":
        expected = "a non-empty string"
    else:
        kinds, enum = json_types(node, defs)
        expected = " or ".join(map(str, enum)) if enum else _said_as(kinds)
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return ScoreCardError(f"{path}: expected {expected}, got {shown}")


def _said_as(kinds: set[str]) -> str:
    """A card key's JSON types as its error says them (``a number or null``)."""
    if kinds & {"integer", "number"}:
        return "a number or null" if "null" in kinds else "a number"
    named = {"string": "a string", "boolean": "a boolean", "array": "a list of strings"}
    return next((named[k] for k in kinds if k in named), "an object")
