"""The ScoreCard's JSON Schema, generated from the code that reads and writes cards.

``pathgls/resources/scorecard.schema.json`` is this module's output, not a hand-kept file: a new
field of a card dataclass (:mod:`pathgls.types`) or of an evidence record
(:mod:`pathgls.evidence`) reaches the schema by regenerating it::

    python -m pathgls.schema            # rewrite the shipped file
    python -m pathgls.schema --check    # exit 1 when the shipped file is stale

``tests/test_scorecard.py`` fails while the shipped file differs from :func:`scorecard_schema`.

Where each part of the schema comes from:

- **types**: pydantic's JSON Schema of the card dataclasses (``ScoreCard``, ``ModuleScore``,
  ``GateDecision``, ``Report``: :func:`~pathgls.types.card_json_schema`) and of the evidence
  records (:func:`~pathgls.evidence.record_json_schema`), made from the validators their readers
  use, so the schema and ``from_dict`` cannot disagree on a key's type; written here in a plain
  style (no titles or defaults, ``integer | number`` as ``number``, null in the type list);
- **presence**: every card-dataclass field is required (``to_dict`` writes them all) and no
  other key is allowed (``from_dict`` rejects unknown keys); evidence keys are all optional and
  unknown ones allowed (records read absent keys as defaults and keep unknown ones);
- **descriptions**: a class's docstring (first paragraph) and a field's source comment (on its
  line, or the comment lines right above it);
- **the rest**: what no type can say, and the readers check beside it, is in :data:`CONSTRAINTS`
  and :func:`_card_rules` below, each with the check it mirrors.

Core floor: imports :mod:`pathgls.types` and :mod:`pathgls.evidence` only; nothing at runtime
imports it (the package reads cards with the typed readers, not with the schema).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import re
import sys
import textwrap
import tokenize
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pathgls.evidence import (
    EVIDENCE_TYPES,
    GroundedEntity,
    Record,
    TopPatch,
    record_json_schema,
    record_keys,
)
from pathgls.types import (
    SCORECARD_VERSION,
    CardInputs,
    GateDecision,
    ModuleScore,
    Report,
    ScoreCard,
    card_json_schema,
)

#: The shipped schema this module writes.
SCHEMA_PATH = Path(__file__).resolve().parent / "resources" / "scorecard.schema.json"
#: The command that rewrites it (said by the test when the file is stale).
REGENERATE = "python -m pathgls.schema"

JSON = dict[str, Any]

_BOX = {"minItems": 4, "maxItems": 4}  # x, y, w, h
#: Constraints the type hints cannot carry, by (class, field): merged into the field's schema.
#: Each mirrors a check of a reader or a shape every writer keeps.
CONSTRAINTS: Mapping[tuple[type, str], JSON] = {
    # ScoreCard.__post_init__: "item_id: expected a non-empty string"
    (ScoreCard, "item_id"): {"minLength": 1},
    # ScoreCard.from_dict reads versions 1 to SCORECARD_VERSION and writes the current one
    (ScoreCard, "version"): {"const": SCORECARD_VERSION},
    # ModuleScore.from_dict: "value is ..., outside [0, 1]: not a module score"
    (ModuleScore, "value"): {"minimum": 0, "maximum": 1},
    # the grounding writers' boxes are x, y, width, height
    (TopPatch, "box"): _BOX,
    (GroundedEntity, "box"): _BOX,
    # the runner records a slide's or ROI's width and height, and a file identity in full
    (CardInputs, "kind"): {"enum": ["slide", "roi"]},
    (CardInputs, "slide_size"): {"minItems": 2, "maxItems": 2},
    (CardInputs, "roi_size"): {"minItems": 2, "maxItems": 2},
    (CardInputs, "slide_identity"): {
        "properties": {
            "size": {"type": "integer"},
            "mtime_ns": {"type": "integer"},
            "header_sha256": {"type": "string"},
            "sha256": {"type": "string"},
        },
        "required": ["size", "mtime_ns", "header_sha256", "sha256"],
    },
}
#: Card-dataclass fields a reader accepts absent (cards written before the field existed).
NOT_REQUIRED: frozenset[tuple[type, str]] = frozenset({(ModuleScore, "random_weights")})


def scorecard_schema() -> JSON:
    """The JSON Schema (draft 2020-12) of a current-version ScoreCard's ``to_dict``.

    Raises:
        ValueError: :data:`CONSTRAINTS` or :data:`NOT_REQUIRED` names a field that is gone.
    """
    for cls, name in (*CONSTRAINTS, *NOT_REQUIRED):
        if name not in typing.get_type_hints(cls):
            raise ValueError(f"pathgls.schema names {cls.__name__}.{name}, which has no such field")
    defs: dict[str, JSON] = {}
    card = _dataclass_schema(ScoreCard, defs)
    card["properties"]["inputs"].update(
        # ScoreCard.__post_init__: "inputs holds status: since ScoreCard version 2 ..."
        {"not": {"anyOf": [{"required": ["status"]}, {"required": ["subject"]}]}}
    )
    card["properties"]["modules"].update(_known_modules(defs))
    card.update(_card_rules())
    defs[_def_name(ModuleScore)].update(_module_rules())
    head: JSON = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"PathGLS ScoreCard, version {SCORECARD_VERSION}",
        "description": f"{card.pop('description')} Generated by `{REGENERATE}` from "
        "pathgls.types and pathgls.evidence; evidence objects may hold keys not listed here "
        "(newer writers), and readers keep them. ScoreCard.from_dict also reads version 1 "
        "cards (status and subject in inputs), which do not match this schema until read.",
    }
    return {**head, **card, "$defs": dict(sorted(defs.items()))}


def _card_rules() -> JSON:
    # ScoreCard.__post_init__: "a failed card has no trust score and no gate decision"
    failed = {"properties": {"status": {"const": "failed"}}}
    nothing = {"properties": {"trust": {"type": "null"}, "decision": {"type": "null"}}}
    return {"allOf": [{"if": failed, "then": nothing}]}


def _module_rules() -> JSON:
    # ModuleScore.__post_init__: "module ... has no value and no missing_reason"
    missing = {"properties": {"value": {"type": "null"}}}
    reason = {"properties": {"missing_reason": {"type": "string", "minLength": 1}}}
    return {"if": missing, "then": reason}


def _known_modules(defs: dict[str, JSON]) -> JSON:
    """``modules``: each module with a typed evidence record has its name and evidence shape."""
    module = {"$ref": f"#/$defs/{_def_name(ModuleScore)}"}
    properties = {}
    for name, record in EVIDENCE_TYPES.items():
        shape = {"name": {"const": name}, "evidence": _ref(record, defs)}
        properties[name] = {"allOf": [module, {"properties": shape}]}
    return {"properties": properties, "additionalProperties": module}


# --- walkers ----------------------------------------------------------------------------------


def _dataclass_schema(cls: type, defs: dict[str, JSON]) -> JSON:
    """A card dataclass: every field required, no other key (types: pydantic's schema)."""
    generated = card_json_schema(cls)
    docs = _field_docs(cls)
    properties = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if typing.is_typeddict(hints[f.name]):  # ScoreCard.inputs: read as any object
            spec = _typeddict_schema(hints[f.name], defs)
        else:
            spec, nullable = _plain(generated["properties"][f.name], defs)
            spec = _nullable(spec) if nullable else spec
        spec.update(CONSTRAINTS.get((cls, f.name), {}))
        properties[f.name] = _described(spec, docs.get(f.name))
    required = [f.name for f in dataclasses.fields(cls) if (cls, f.name) not in NOT_REQUIRED]
    return _described(
        {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
        _class_doc(cls),
    )


def _typeddict_schema(cls: type, defs: dict[str, JSON]) -> JSON:
    """A TypedDict (:class:`~pathgls.types.CardInputs`): its keys typed (pydantic's schema of
    each key's hint) and described, none required, other keys allowed (readers keep them)."""
    docs = _field_docs(cls)
    properties = {}
    for name, hint in typing.get_type_hints(cls).items():
        spec, nullable = _plain(_hint_json_schema(hint), defs)
        spec = _nullable(spec) if nullable else spec
        spec.update(CONSTRAINTS.get((cls, name), {}))
        properties[name] = _described(spec, docs.get(name))
    return {"type": "object", "properties": properties}


def _hint_json_schema(hint: Any) -> JSON:
    """pydantic's JSON Schema of one type hint (a key of a TypedDict)."""
    from pydantic import TypeAdapter

    schema: JSON = TypeAdapter(hint).json_schema()
    return schema


def _record_schema(cls: type[Record], defs: dict[str, JSON]) -> JSON:
    """An evidence record: every key optional, unknown keys allowed (kept in ``extra``).

    The key types are pydantic's JSON Schema of the record (the validator its reader uses, so
    the two cannot disagree), written in this file's plain style.
    """
    generated = record_json_schema(cls)
    docs = _field_docs(cls)
    properties = {}
    for name in record_keys(cls):
        spec, nullable = _plain(generated["properties"][name], defs)
        spec.update(CONSTRAINTS.get((cls, name), {}))
        properties[name] = _described(_nullable(spec) if nullable else spec, docs.get(name))
    return _described(
        {"type": "object", "properties": properties, "additionalProperties": True},
        _class_doc(cls),
    )


def _plain(spec: JSON, defs: dict[str, JSON]) -> tuple[JSON, bool]:
    """``(schema, admits null)`` of a property of pydantic's schema: no titles or defaults,
    ``integer | number`` as ``number``, classes by reference to their definition here."""
    if "$ref" in spec:
        return _ref(_classes_by_name()[spec["$ref"].rsplit("/", 1)[-1]], defs), False
    if "anyOf" in spec:
        options = _options(spec)
        nullable = {"type": "null"} in options
        options = [o for o in options if o != {"type": "null"}]
        if {o.get("type") for o in options} == {"integer", "number"}:
            return {"type": "number"}, nullable
        (option,) = options
        return _plain(option, defs)[0], nullable
    if "enum" in spec:
        return {"enum": spec["enum"]}, False
    kind = spec["type"]
    if kind == "array":
        return {"type": "array", "items": _plain(spec["items"], defs)[0]}, False
    values = spec.get("additionalProperties")
    if kind == "object" and isinstance(values, dict):
        return {"type": "object", "additionalProperties": _plain(values, defs)[0]}, False
    return {"type": kind}, False  # a scalar, or an object of anything


def _options(spec: JSON) -> list[JSON]:
    """The members of an ``anyOf``, nested ones flattened (and stripped of titles)."""
    if "anyOf" not in spec:
        return [{k: v for k, v in spec.items() if k not in ("title", "default")}]
    return [o for option in spec["anyOf"] for o in _options(option)]


def _classes_by_name() -> dict[str, type]:
    """The card dataclasses and every record class by name (pydantic's ``$defs`` names them so)."""
    found: dict[str, type] = {c.__name__: c for c in (ScoreCard, ModuleScore, GateDecision, Report)}
    todo: list[type[Record]] = [Record]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found


def _ref(cls: type, defs: dict[str, JSON]) -> JSON:
    """``{"$ref": ...}`` to ``cls``'s definition, added to ``defs`` on first use."""
    name = _def_name(cls)
    if name not in defs:
        defs[name] = {}  # claimed first: records refer to each other
        is_record = isinstance(cls, type) and issubclass(cls, Record)
        defs[name] = _record_schema(cls, defs) if is_record else _dataclass_schema(cls, defs)
    return {"$ref": f"#/$defs/{name}"}


def _nullable(spec: JSON) -> JSON:
    """``spec`` admitting null too (a list of types when it is a single type)."""
    kind = spec.get("type")
    if isinstance(kind, str) and (kind != "array" or "items" not in spec):
        return {**spec, "type": [kind, "null"]}
    return {"oneOf": [{"type": "null"}, spec]}


def _def_name(cls: type) -> str:
    """``GroundingEvidence`` → ``grounding_evidence``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


# --- descriptions from the source -------------------------------------------------------------


def _described(spec: JSON, text: str | None) -> JSON:
    return {**spec, "description": text} if text else spec


def _class_doc(cls: type) -> str | None:
    """The first paragraph of ``cls``'s own docstring, on one line (None without one)."""
    doc = cls.__dict__.get("__doc__")
    if not doc or doc.startswith(f"{cls.__name__}("):  # what @dataclass writes when none
        return None
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


def _field_docs(cls: type) -> dict[str, str]:
    """Each annotated field's comment: on its line(s), else the comment lines right above it."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments: dict[int, str] = {}
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            code_lines.add(tok.start[0])
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.ClassDef)
    docs = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        end = stmt.end_lineno or stmt.lineno
        lines = [comments[n] for n in range(stmt.lineno, end + 1) if n in comments]
        if not lines:
            n = stmt.lineno - 1
            while n in comments and n not in code_lines:
                lines.insert(0, comments[n])
                n -= 1
        if lines:
            docs[stmt.target.id] = " ".join(lines)
    return docs


# --- the shipped file -------------------------------------------------------------------------


def schema_text() -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(scorecard_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Rewrite the shipped schema, or with ``--check`` say whether it is up to date."""
    args = sys.argv[1:] if argv is None else argv
    text = schema_text()
    current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else None
    if args == ["--check"]:
        if current != text:
            print(f"{SCHEMA_PATH} is stale: run {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    if args:
        print(f"usage: {REGENERATE} [--check]", file=sys.stderr)
        return 2
    if current != text:
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
