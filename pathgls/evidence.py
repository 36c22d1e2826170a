"""Typed views of the evidence each module keeps in its :class:`~pathgls.types.ModuleScore`.

A ScoreCard stores every module's evidence as plain JSON (``ModuleScore.evidence``), so a card
stays readable by anything that reads JSON and cards of older versions keep loading. The frozen
dataclasses here are the typed side of that JSON: readers ask a card for
``card.evidence(GroundingEvidence)`` (or call ``GroundingEvidence.from_dict(score.evidence)``)
and use attributes; writers build a record and store its :meth:`Record.to_dict`.

Reading is strict about types and lenient about presence:

- a key of the wrong type raises :class:`~pathgls.errors.EvidenceError` naming it, e.g.
  ``grounding evidence.entities[1].calibrated: expected a number, got 'high'``;
- an absent key takes the field's default: ``None`` for numbers (never an invented value), an
  empty tuple for lists, since a module that could not run, or an older card, writes fewer keys;
- keys the record does not know are kept, verbatim, in ``extra``.

:meth:`Record.to_dict` gives back the JSON a record was read from (absent keys stay absent,
unknown keys come back). A record built in code writes every field except the optional ones
left empty (``map`` of grounding without a kept heat map, ``k`` of logic without pairs, ...).
The records' type hints are the one statement of the shapes: pydantic reads the JSON by them
(one validator per record type and process, built on the first read; ``import pathgls`` does not
import pydantic), and ``pathgls/resources/scorecard.schema.json`` is pydantic's JSON Schema of
them, written by ``python -m pathgls.schema``: a field's comment (on its line, or the comment
lines right above it) is its description there.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pathgls.errors import EvidenceError
from pathgls.numeric import finite

if TYPE_CHECKING:  # pydantic is imported on the first read, never at ``import pathgls``
    from pydantic import GetCoreSchemaHandler, TypeAdapter, ValidationError
    from pydantic_core import CoreSchema

Number = int | float
Role = Literal["aug", "attack"]
R = TypeVar("R", bound="Record")
JSON = dict[str, Any]

#: A JSON Schema type as an error message says it ("expected a number, got 'high'").
_EXPECTED = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "object": "an object",
}
_PLURAL = {"string": "strings", "number": "numbers", "integer": "integers", "object": "objects"}
#: pydantic-core schema types read strictly, as JSON holds them (no "3" for 3, no 1 for true).
_STRICT = frozenset({"str", "int", "float", "bool", "list"})
#: Record fields that are not JSON keys.
_NOT_KEYS = frozenset({"extra", "_keys"})
# per record type and process: its JSON keys, pydantic validator and JSON Schema
_KEYS: dict[type, tuple[str, ...]] = {}
_ADAPTERS: dict[type, TypeAdapter[Any]] = {}
_SCHEMAS: dict[type, JSON] = {}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_dump(v) for v in value]
    if isinstance(value, Mapping):
        return copy.deepcopy(dict(value))
    return value


def _or(x: Number | None, default: float) -> float:
    """``x`` when finite, else ``default`` (for sort keys)."""
    v = finite(x)
    return default if v is None else v


@dataclass(frozen=True, kw_only=True)
class Record:
    """Base of the evidence records: typed fields from and to JSON, unknown keys kept.

    A subclass declares plain typed fields with defaults; each field is one JSON key of the
    same name. The type hint says what the key holds (``str``, ``bool``, ``int``,
    ``Number``, a :class:`Record`, ``tuple[...]`` of those for a list, ``Mapping`` for a JSON
    object); a ``None`` default also admits JSON null. pydantic reads the JSON by these hints
    (:meth:`from_dict`) and writes the JSON Schema from them (:mod:`pathgls.schema`).
    ``OPTIONAL`` names the fields a record built in code leaves out of its JSON while they are
    ``None`` or empty.
    """

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    # Keys of the JSON this version does not know, kept verbatim for the round trip.
    extra: Mapping[str, Any] = field(default_factory=dict)
    # Known keys present in the JSON read (None: built in code); to_dict writes exactly these.
    _keys: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.extra, Mapping):
            raise EvidenceError(f"{type(self).__name__}.extra must be a mapping")
        clash = sorted(set(self.extra) & set(record_keys(type(self))))
        if clash:
            raise EvidenceError(
                f"{type(self).__name__}.extra repeats the field(s) {', '.join(clash)}"
            )

    @classmethod
    def _label(cls) -> str:
        return cls.__name__

    @classmethod
    def from_dict(cls: type[R], data: Any, *, where: str | None = None) -> R:
        """The record of a JSON object (see the module docstring for the rules).

        Args:
            data: The JSON object (a mapping).
            where: Its path, for error messages (default: the record's name).

        Raises:
            EvidenceError: ``data`` is not an object, or a key has the wrong type.
        """
        where = where or cls._label()
        if not isinstance(data, Mapping):
            raise EvidenceError(f"{where}: expected an object, got {_short(data)}")
        from pydantic import ValidationError

        try:  # a copy: the record shares nothing with the JSON it was read from
            record: R = _adapter(cls).validate_python(copy.deepcopy(dict(data)))
        except ValidationError as e:
            raise _evidence_error(cls, where, e) from e
        return record

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """pydantic's reader of the record: its dataclass schema, read as JSON, and the keys
        it does not know kept in ``extra``."""
        return _record_schema(cls, handler(source))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the record (a new, independent dict)."""
        out: dict[str, Any] = {}
        for name in record_keys(type(self)):
            value = getattr(self, name)
            if self._keys is not None:
                if name not in self._keys:
                    continue
            elif name in self.OPTIONAL and (value is None or value == () or value == {}):
                continue
            out[name] = _dump(value)
        out.update(copy.deepcopy(dict(self.extra)))
        return out


def record_keys(cls: type[Record]) -> tuple[str, ...]:
    """The record's JSON keys: its fields, in order."""
    if cls not in _KEYS:
        _KEYS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name not in _NOT_KEYS)
    return _KEYS[cls]


# --- reading through pydantic -----------------------------------------------------------------


def _adapter(cls: type[Record]) -> TypeAdapter[Any]:
    """One pydantic validator per record type and process (built on its first read)."""
    if cls not in _ADAPTERS:
        from pydantic import TypeAdapter

        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def record_json_schema(cls: type[Record]) -> JSON:
    """pydantic's JSON Schema of ``cls`` (records it holds in ``$defs``, by class name)."""
    if cls not in _SCHEMAS:
        _SCHEMAS[cls] = _adapter(cls).json_schema()
    return _SCHEMAS[cls]


def _record_schema(cls: type[Record], inner: CoreSchema) -> CoreSchema:
    from pydantic_core import PydanticCustomError
    from pydantic_core import core_schema as cs

    keys = frozenset(record_keys(cls))

    def read(data: Any, validate: cs.ValidatorFunctionWrapHandler) -> Record:
        if not isinstance(data, Mapping):
            raise PydanticCustomError("object_type", "expected an object")
        known = {k: v for k, v in data.items() if k in keys}
        record = validate(known)
        extra = {str(k): v for k, v in data.items() if k not in keys}
        object.__setattr__(record, "extra", extra)
        object.__setattr__(record, "_keys", frozenset(known))
        return record

    # the wrapper takes the dataclass's ref: a record used twice in a record is read both times
    core = dict(inner)
    ref = core.pop("ref", None)
    return cs.no_info_wrap_validator_function(read, read_as_json(core), ref=ref)


def read_as_json(node: Any) -> Any:
    """pydantic's (lax) core schema ``node`` reading what JSON holds, as the readers always have:
    scalars strictly (no "3" for 3, no 1 for true), a list (or tuple) for a tuple, and a
    ``float`` field an integer too, kept an integer (a card written with 1 is read back as 1)."""
    if isinstance(node, list):
        return [read_as_json(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: read_as_json(v) for k, v in node.items()}
    kind, fresh = node.get("type"), "strict" not in node  # not fresh: made so already
    if kind in _STRICT:
        node["strict"] = True
    from pydantic_core import core_schema as cs

    if kind == "tuple" and fresh:  # lax, a tuple also reads sets and generators: not JSON
        node["strict"] = False
        return cs.no_info_before_validator_function(_list, node)
    if kind == "float" and fresh:  # strict, pydantic turns 1 into 1.0
        return cs.union_schema([cs.int_schema(strict=True), node])
    return node


def _list(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        from pydantic_core import PydanticCustomError

        raise PydanticCustomError("list_type", "expected a list")
    return value


def _evidence_error(cls: type[Record], where: str, error: ValidationError) -> EvidenceError:
    """The first of pydantic's errors, said as the path of the key and what it should hold."""
    first = error.errors(include_url=False)[0]
    schema = record_json_schema(cls)
    defs = schema.get("$defs", {})
    node: JSON = schema
    for part in first["loc"]:  # keys and list indices, then pydantic's union tags (int, ...)
        inner = json_schema_node(node, part, defs)
        if inner is None:
            break
        node = inner
        where += f"[{part}]" if isinstance(part, int) else f".{part}"
    return EvidenceError(f"{where}: expected {_expected(node, defs)}, got {_short(first['input'])}")


def json_schema_node(node: JSON, part: str | int, defs: JSON) -> JSON | None:
    """The schema of key or index ``part`` of what JSON Schema ``node`` describes (None: not a
    key or index of it, e.g. one of pydantic's union tags in an error's location)."""
    node = _resolved(node, defs)
    if isinstance(part, int):
        return node.get("items") if node.get("type") == "array" else None
    if part in node.get("properties", {}):
        return node["properties"][part]
    values = node.get("additionalProperties")
    return values if isinstance(values, dict) and "properties" not in node else None


def json_types(node: JSON, defs: JSON) -> tuple[set[str], list[Any]]:
    """``(JSON types, enum)`` that schema ``node`` admits (``null`` among them when it does)."""
    if "$ref" in node:
        return json_types(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in node:
        kinds: set[str] = set()
        enum: list[Any] = []
        for option in node["anyOf"]:
            k, e = json_types(option, defs)
            kinds |= k
            enum += e
        return kinds, enum
    return {node.get("type", "object")}, list(node.get("enum", []))


def _resolved(node: JSON, defs: JSON) -> JSON:
    """``node`` with its ``$ref`` followed and a nullable ``anyOf`` read as its non-null type."""
    if "$ref" in node:
        return _resolved(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    options = [o for o in node.get("anyOf", ()) if o.get("type") != "null"]
    return _resolved(options[0], defs) if len(options) == 1 else node


def _expected(node: JSON, defs: JSON) -> str:
    node = _resolved(node, defs)
    kinds = json_types(node, defs)[0] - {"null"}
    if kinds == {"integer", "number"}:
        return "a number"
    if kinds == {"array"}:
        items = json_types(node.get("items", {}), defs)[0] - {"null"}
        item = "number" if items == {"integer", "number"} else next(iter(items), "object")
        return f"a list of {_PLURAL.get(item, item + 's')}"
    kind = next(iter(kinds), "object") if len(kinds) == 1 else "object"
    return _EXPECTED.get(kind, f"a valid {kind}")


@dataclass(frozen=True, kw_only=True)
class ModuleEvidence(Record):
    """Base of the evidence of one module (``MODULE`` names it in the card's ``modules``)."""

    MODULE: ClassVar[str] = ""

    @classmethod
    def _label(cls) -> str:
        return f"{cls.MODULE} evidence"


# --- grounding --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TopPatch(Record):
    """One of an entity's best patches."""

    patch: int | None = None  # row of the patch in the bag (or ROI grid)
    similarity: Number | None = None  # the entity's best window similarity in it
    box: tuple[Number, ...] | None = None  # x, y, w, h in the source's pixels


@dataclass(frozen=True, kw_only=True)
class GroundedEntity(Record):
    """One grounded entity: where it is seen best and how well."""

    phrase: str = ""  # the text the encoder embedded
    concept: str = ""  # canonical concept ("" when the extractor has none)
    type: str = ""  # entity type (pathological_diagnosis, ...)
    mentions: tuple[str, ...] = ()  # the report's mentions it stands for
    uncertain: bool | None = None  # hedged in the report
    similarity: Number | None = None  # best window cosine similarity (raw)
    calibrated: Number | None = None  # after calibration; S_g is their mean
    patch: int | None = None  # patch of the best window
    window: int | None = None  # window index inside that patch
    box: tuple[Number, ...] | None = None  # best window, x, y, w, h
    top_patches: tuple[TopPatch, ...] = ()  # the entity's best patches, best first


@dataclass(frozen=True, kw_only=True)
class FoilStats(Record):
    """Best similarities of the unrelated foil phrases (foil-rank calibration)."""

    n: int | None = None  # foils used
    median: Number | None = None
    p90: Number | None = None
    max: Number | None = None
    best: str = ""  # the foil that came closest


@dataclass(frozen=True, kw_only=True)
class SkippedEntity(Record):
    """An entity grounding left out (not visible in the image: IHC, site, stage, ...)."""

    text: str = ""
    type: str = ""
    reason: str = ""  # why it is not grounded (not visible in an H&E image, ...)


@dataclass(frozen=True, kw_only=True)
class GroundingSource(Record):
    """What was searched: a feature bag or an ROI cut into windows."""

    kind: str = ""  # bag or roi
    name: str = ""  # slide name or image path
    path: str | None = None  # file read, when any
    space: str = ""  # level0 (slide pixels) or image (ROI pixels)
    n_patches: int | None = None
    n_windows: int | None = None  # windows per patch
    patch_size_level0: int | None = None  # patch side in ``space`` pixels
    encoder: str | None = None  # encoder the windows were embedded with


@dataclass(frozen=True, kw_only=True)
class GroundingEvidence(ModuleEvidence):
    """S_g's evidence: per entity its best window and similarity, and what was left out."""

    MODULE: ClassVar[str] = "grounding"
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"foils", "map"})

    calibration: str = ""  # foil-rank, sigmoid or raw
    templates: tuple[str, ...] = ()  # prompt templates of the text tower
    encoder: str = ""  # encoder name
    source: GroundingSource | None = None
    # per entity: best window, similarity, calibrated score, best patches
    entities: tuple[GroundedEntity, ...] = ()
    negated: tuple[str, ...] = ()  # negated entities, not grounded
    skipped: tuple[SkippedEntity, ...] = ()  # entities without a visual target
    foils: FoilStats | None = None
    map: str | None = None  # heat map file, relative to the run directory

    def least_grounded(self) -> GroundedEntity | None:
        """The entity of lowest calibrated score (ties: lower similarity, then first).

        Entities without a finite calibrated score are not ranked; None when none has one.
        """
        ranked = [e for e in self.entities if finite(e.calibrated) is not None]
        if not ranked:
            return None
        return min(ranked, key=lambda e: (_or(e.calibrated, 0.0), _or(e.similarity, math.inf)))

    def find(self, name: str) -> GroundedEntity | None:
        """The entity whose phrase or concept is ``name`` (case-insensitive), else None."""
        needle = name.strip().lower()
        return next(
            (e for e in self.entities if needle in {e.phrase.lower(), e.concept.lower()}), None
        )


# --- logic ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CheckedStatement(Record):
    """One side of a consistency-check hit: the sentence, the entity and its scope."""

    sentence: str = ""
    entity: str = ""  # as written, "¬" before a denied one, "?" before a hedged one
    scope: str = ""  # "part A, breast, left", "sentinel lymph node", "report"


@dataclass(frozen=True, kw_only=True)
class CheckEvidence(Record):
    """A graph-consistency check that fired: the rule, why, and the two statements."""

    rule: str = ""  # polarity, node_status, margin, grade, benign_vs_malignant, stage, ...
    probability: Number | None = None
    explanation: str = ""
    first: CheckedStatement = field(default_factory=CheckedStatement)
    second: CheckedStatement = field(default_factory=CheckedStatement)


@dataclass(frozen=True, kw_only=True)
class ContradictionPair(Record):
    """A premise/hypothesis sentence pair and its contradiction probability."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {"rule", "explanation", "nli_probability", "checks", "contradicts", "source"}
    )

    premise: str = ""
    hypothesis: str = ""
    probability: Number | None = None  # P(contradiction): the larger of the model's and checks'
    kind: str = ""  # finding<->finding, finding->diagnosis, diagnosis<->diagnosis, check, ...
    premise_sentence: int | None = None  # sentence index in the report
    hypothesis_sentence: int | None = None
    rule: str | None = None  # the strongest check that fired on the pair (absent: none)
    explanation: str | None = None  # why
    nli_probability: Number | None = None  # the NLI model's own (absent: no model)
    checks: tuple[CheckEvidence, ...] = ()  # every check that fired on the pair
    # whether the judge or a check calls the pair a contradiction (absent: an older card)
    contradicts: bool | None = None
    # who scored it: "judge", "check:<rule>", "judge+check:<rule>", "rules" (absent: older card)
    source: str | None = None


@dataclass(frozen=True, kw_only=True)
class LogicEvidence(ModuleEvidence):
    """S_l's evidence: the top-K contradicting pairs, K, the number of pairs, the NLI backend."""

    MODULE: ClassVar[str] = "logic"

    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {"top_pairs", "k", "pairs_by_kind", "checks", "statements", "silent"}
    )

    # highest probability first (as written); absent when there was no pair
    top_pairs: tuple[ContradictionPair, ...] = ()
    k: int | None = None  # K of the top-K mean (absent: no pair)
    n_pairs: int | None = None  # pairs checked
    nli: str = ""  # NLI backend
    pairs_by_kind: Mapping[str, int] = field(default_factory=dict)  # finding<->finding: 3, ...
    checks: tuple[CheckEvidence, ...] = ()  # every consistency check that fired, strongest first
    # how many statements of each kind the case model read ("assertion": 12, "legend": 3, …)
    statements: Mapping[str, int] = field(default_factory=dict)
    silent: tuple[str, ...] = ()  # where the checks stayed silent, and why (several tumours, …)

    def top_pair(self) -> ContradictionPair | None:
        """The pair most likely contradictory (the first of ties); None without pairs."""
        return next(iter(self.ranked()), None)

    def ranked(self) -> tuple[ContradictionPair, ...]:
        """The pairs by decreasing probability (stable; pairs without one last)."""
        return tuple(sorted(self.top_pairs, key=lambda p: -_or(p.probability, -math.inf)))


# --- stability --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class FindingChanges(Record):
    """How the findings and diagnoses of a report changed against the original.

    The diagnosis fields come from the comparison the ``dx`` Δ scores (principal diagnoses,
    their most severe behaviour, key findings with their values).
    """

    # written only when recorded (cards of earlier versions have none of them)
    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {
            "diagnoses_added",
            "diagnoses_removed",
            "behaviour_before",
            "behaviour_after",
            "key_findings_changed",
        }
    )

    added: tuple[str, ...] = ()  # findings new under the condition
    removed: tuple[str, ...] = ()  # findings gone
    negation_flipped: tuple[str, ...] = ()  # affirmed ↔ negated
    # a principal diagnosis was added or removed or its behaviour changed (None: not recorded)
    diagnosis_changed: bool | None = None
    diagnoses_before: tuple[str, ...] = ()  # principal diagnoses of the original
    diagnoses_after: tuple[str, ...] = ()  # principal diagnoses under the condition
    diagnoses_added: tuple[str, ...] = ()  # principal diagnoses new under the condition
    diagnoses_removed: tuple[str, ...] = ()  # principal diagnoses gone
    behaviour_before: str | None = None  # most severe behaviour (malignant, in_situ, ...)
    behaviour_after: str | None = None  # most severe behaviour under the condition
    key_findings_changed: tuple[str, ...] = ()  # "metastasis: positive → negative"


@dataclass(frozen=True, kw_only=True)
class StabilityEvidence(ModuleEvidence):
    """S_s's evidence: Δ under the stain augmentation and the attack, and what changed."""

    MODULE: ClassVar[str] = "stability"
    # a stability that could not run writes only its Δ backend (and the perturbations)
    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {"delta_aug", "delta_attack", "scope_aug", "scope_attack", "conditions"}
        | {"changes_aug", "changes_attack", "stain", "attack", "prompt_library"}
    )

    delta: str = ""  # Δ backend (embedding, entities, nli)
    delta_aug: Number | None = None  # Δ(original, stain)
    delta_attack: Number | None = None  # Δ(original, attack)
    scope_aug: str | None = None  # what Δ_aug compared (diagnosis, ...)
    scope_attack: str | None = None
    conditions: tuple[str, ...] = ()  # (augmentation, attack)
    changes_aug: FindingChanges | None = None
    changes_attack: FindingChanges | None = None
    # the stain perturbation's record: factors, transformed, flags, seed (kept as JSON)
    stain: Mapping[str, Any] | None = None
    attack: str | None = None  # adversarial prompt name
    prompt_library: str | None = None  # its library version

    def role(self, condition: str) -> Role:
        """Which Δ measures ``condition``.

        The first of ``conditions`` is the augmentation, the second the attack; a condition
        not listed is ``aug`` when it is ``stain``, else ``attack``.
        """
        roles: tuple[Role, Role] = ("aug", "attack")
        listed = dict(zip(self.conditions, roles, strict=False))
        return listed.get(condition) or ("aug" if condition == "stain" else "attack")

    def delta_of(self, role: Role) -> Number | None:
        """Δ of ``role`` (None when not recorded)."""
        return self.delta_aug if role == "aug" else self.delta_attack

    def changes_of(self, role: Role) -> FindingChanges | None:
        """Finding changes of ``role`` (None when not recorded)."""
        return self.changes_aug if role == "aug" else self.changes_attack


# --- hare -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HareEntityMatch(Record):
    """An entity of one report and its best counterpart in the other."""

    side: str = ""  # candidate or reference
    text: str = ""
    type: str = ""
    negated: bool | None = None
    match: str | None = None  # None: the other report has no entity
    similarity: Number | None = None  # after negation and type masks
    weight: Number | None = None  # weight in the mean


@dataclass(frozen=True, kw_only=True)
class HareEvidence(ModuleEvidence):
    """HARE's evidence: entity and relation agreement with the reference report."""

    MODULE: ClassVar[str] = "hare"

    entity_precision: Number | None = None
    entity_recall: Number | None = None
    entity_f1: Number | None = None
    relation_f1: Number | None = None
    entity_matches: tuple[HareEntityMatch, ...] = ()  # at most 20
    backend: str = ""  # which HARE models scored it


# --- report side ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ReportEvidence(ModuleEvidence):
    """The report-side component's evidence: which backend scored the report against the
    reference, its version, its raw score and what it compared."""

    MODULE: ClassVar[str] = "report"

    backend: str = ""  # dxalign, hare
    version: str = ""  # the backend's version and models ("dxalign 1, minilm ...")
    raw: Number | None = None  # the backend's own score, before mapping to [0, 1]
    candidate_dx: str = ""  # DxAlign: what was embedded for the candidate
    shared_behaviour: tuple[str, ...] = ()  # DxAlign: behaviours the two reports share
    entity_f1: Number | None = None  # HARE: entity F1
    relation_f1: Number | None = None  # HARE: relation F1


#: Typed evidence record of each module that has one, by module name.
EVIDENCE_TYPES: Mapping[str, type[ModuleEvidence]] = MappingProxyType(
    {
        c.MODULE: c
        for c in (GroundingEvidence, LogicEvidence, StabilityEvidence, HareEvidence, ReportEvidence)
    }
)


def read_evidence(module: str, evidence: Any) -> ModuleEvidence | None:
    """The typed view of ``module``'s evidence; None for a module without a typed record.

    Raises:
        EvidenceError: the evidence does not have the record's shape.
    """
    kind = EVIDENCE_TYPES.get(module)
    return None if kind is None else kind.from_dict(evidence)
