"""Typed dataclass ⇄ plain dict conversion, checked against the field annotations, and TOML I/O.

A config tree is frozen dataclasses whose fields are ``bool``, ``int``, ``float``, ``str``,
``Literal[...]``, ``X | None``, ``tuple[X, ...]``, ``Mapping[str, X]`` or another such dataclass.
:func:`from_dict` turns TOML/JSON-like data into the tree with pydantic-core: a validator built
from the annotations once per process (pydantic-core is imported then, not by ``import
pathgls``), checking every value on the way; its first error becomes a message that names the
offending key as ``section.key`` (``fusion.weights.logic``, ``grounding.templates[1]``).
:func:`to_dict` is its inverse, with ``None`` fields left out (TOML has no null; a missing key
loads as its default, and every ``X | None`` field of the tree defaults to None).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import os
import re
import tempfile
import tomllib
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import tomli_w

from pathgls.errors import ConfigError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails, SchemaValidator
    from pydantic_core.core_schema import CoreSchema

T = typing.TypeVar("T")


def require(condition: bool, message: str) -> None:
    """Raise :class:`ConfigError` with ``message`` unless ``condition``.

    Messages about one field start with the field's name (``"top_k must be >= 1, got 0"``), so
    that :func:`from_dict` can name it ``section.field``.
    """
    if not condition:
        raise ConfigError(message)


def _shown(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def in_range(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a finite number in the range.

    Every bounded setting goes through here, so a value that would overflow, allocate without
    end or wait for ever (``1e308``, ``nan``, ``2**60``) is refused with the setting's name:
    ``"timeout_s must be a number in (0, 86400], got 1e+300"``.
    """
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and (isinstance(value, int) or math.isfinite(value))
        and (value > low if open_low else value >= low)
        and (value < high if open_high else value <= high)
    )
    if not ok:
        lo, hi = "(" if open_low else "[", ")" if open_high else "]"
        raise ConfigError(
            f"{name} must be a number in {lo}{_shown(low)}, {_shown(high)}{hi}, got {value!r}"
        )


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "absent"
    if dataclasses.is_dataclass(tp):
        return "a table"
    if typing.get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        return " or ".join(_type_name(a) for a in typing.get_args(tp) if a is not type(None))
    if typing.get_origin(tp) is tuple:
        return "an array"
    if typing.get_origin(tp) in (Mapping, dict) or tp in (Mapping, dict):
        return "a table"
    return getattr(tp, "__name__", str(tp))


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    """Resolved annotation of each ``__init__`` field of the dataclass ``cls`` (once per class:
    resolving them is most of the cost of building a validator)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def _unknown(cls: type, where: str, unknown: list[str]) -> str:
    """The message for unknown keys, with the nearest known key (or its section) as a hint."""
    fields = _field_types(cls)
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, list(fields), n=1)
        if close:
            hints.append(f"did you mean {_join(where, close[0])}?")
        elif not where:
            owners = [
                name
                for name, tp in fields.items()
                if dataclasses.is_dataclass(tp) and key in _field_types(tp)  # type: ignore[arg-type]
            ]
            if owners:
                hints.append(f"{key} is a key of " + ", ".join(f"[{o}]" for o in owners))
    if where:
        what, names = "key", ", ".join(_join(where, k) for k in unknown)
        scope = f"keys of [{where}]"
    else:
        what, names, scope = "section", ", ".join(f"[{k}]" for k in unknown), "sections"
    plural = "s" if len(unknown) > 1 else ""
    hint = "; " + "; ".join(hints) if hints else ""
    return f"unknown {what}{plural} {names} (known {scope}: {', '.join(fields)}){hint}"


def qualify(where: str, cls: type, message: str) -> str:
    """``message`` of a validation error of ``cls`` at ``where``, naming ``where.field``."""
    if not where:
        return message
    m = re.match(r"[A-Za-z_]\w*", message)
    if m and m.group(0) in _field_types(cls):
        return f"{where}.{message}"
    return f"[{where}] {message}"


def from_dict(cls: type[T], data: Mapping[str, Any], where: str = "") -> T:
    """Build the dataclass ``cls`` from ``data`` (a subset of its fields; the rest default).

    The checking is pydantic's (:func:`_validator`); its first error, in the order of the keys
    of ``data``, becomes the message (:func:`_message`).

    Raises:
        ConfigError: an unknown key, a value of the wrong type, or one its validation refuses;
            the message names the key (``section.key``).
    """
    from pydantic_core import ValidationError

    try:
        out: T = _validator(cls).validate_python(data)
    except ValidationError as e:
        errors = e.errors()
        first = min(errors, key=lambda err: _locate(cls, data, err["loc"]).rank)
        cause = first.get("ctx", {}).get("error")
        raise ConfigError(_message(cls, data, first, errors, where)) from cause or e
    return out


_VALIDATORS: dict[type, SchemaValidator] = {}


def _validator(cls: type) -> SchemaValidator:
    """The pydantic-core validator of the dataclass ``cls`` (:func:`_schema`), built once per
    process. The schema is built here rather than by pydantic's ``TypeAdapter``, which cost about
    200 ms on the first config load (importing pydantic, deriving its schema); this costs about
    30 ms, mostly importing pydantic-core."""
    validator = _VALIDATORS.get(cls)
    if validator is None:
        from pydantic_core import SchemaValidator

        validator = _VALIDATORS[cls] = SchemaValidator(_schema(cls))
    return validator


def _schema(tp: Any) -> CoreSchema:
    """The core schema of the config annotation ``tp``, with the TOML reading of the types.

    No scalar is coerced (``"1"`` is not an int, ``True`` not a number, ``1`` is a float); an
    array is a list or tuple, a table any mapping (an instance of the dataclass is no table);
    an unknown key is an error; ``__post_init__`` (the range checks) runs once the fields hold.

    Raises:
        TypeError: ``tp`` is an annotation config trees do not use (a programming error).
    """
    from pydantic_core import core_schema as cs

    origin = typing.get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = _field_types(tp)
        fields = [
            cs.dataclass_field(f.name, _with_default(f, _schema(hints[f.name])))
            for f in dataclasses.fields(tp)
            if f.init
        ]
        args = cs.dataclass_args_schema(tp.__name__, fields, extra_behavior="forbid")
        checked: CoreSchema = cs.dataclass_schema(
            tp, args, [f["name"] for f in fields], post_init=False
        )
        if hasattr(tp, "__post_init__"):
            checked = cs.no_info_after_validator_function(_post_init, checked)
        return cs.no_info_before_validator_function(_table, checked)
    if origin in (types.UnionType, typing.Union):
        (arg, *more) = [a for a in typing.get_args(tp) if a is not type(None)]
        if more or len(typing.get_args(tp)) != 2:
            raise TypeError(f"only X | None unions are supported in config trees, not {tp}")
        return cs.nullable_schema(_schema(arg))
    if origin is Literal:
        return cs.literal_schema(list(typing.get_args(tp)))
    if origin is tuple and typing.get_args(tp)[1:] == (Ellipsis,):
        item = _schema(typing.get_args(tp)[0])
        array = cs.tuple_schema([item], variadic_item_index=0, strict=True)
        return cs.no_info_before_validator_function(_array, array)
    if origin in (Mapping, dict) and typing.get_args(tp)[0] is str:
        return cs.dict_schema(cs.str_schema(strict=True), _schema(typing.get_args(tp)[1]))
    scalars: dict[Any, Callable[..., CoreSchema]] = {
        bool: cs.bool_schema,
        int: cs.int_schema,
        float: cs.float_schema,
        str: cs.str_schema,
    }
    if tp in scalars:
        return scalars[tp](strict=True)
    raise TypeError(f"unsupported config annotation {tp!r}")


def _with_default(f: dataclasses.Field[Any], schema: CoreSchema) -> CoreSchema:
    """``schema`` with the default of the dataclass field ``f``."""
    from pydantic_core import core_schema as cs

    if f.default_factory is not dataclasses.MISSING:
        return cs.with_default_schema(schema, default_factory=f.default_factory)
    if f.default is not dataclasses.MISSING:
        return cs.with_default_schema(schema, default=f.default)
    return schema


def _post_init(config: Any) -> Any:
    """Run the ``__post_init__`` checks of ``config``; a crash of one is a :class:`ConfigError`
    too (pydantic would let it through, before the errors of keys checked earlier)."""
    try:
        config.__post_init__()
    except (TypeError, ArithmeticError) as e:
        raise ConfigError(f"the values cannot be checked: {e}") from e
    return config


def _array(value: object) -> object:
    """A TOML array (a list or tuple) as a tuple; anything else is left for the tuple check."""
    return tuple(value) if isinstance(value, list) else value


def _table(value: object) -> dict[object, object]:
    """A table (any mapping) as a dict; anything else is refused."""
    if not isinstance(value, Mapping):
        from pydantic_core import PydanticCustomError

        raise PydanticCustomError("table_type", "not a table")
    return dict(value)


class _Place(typing.NamedTuple):
    """Where a pydantic error location points in the data and the config tree."""

    #: Sorts errors in the order the keys were checked one by one: unknown keys of a table
    #: first, then its keys in the data's order, an array's items in order, a key before its value.
    rank: tuple[tuple[int, ...], ...]
    #: ``section.key``, ``grounding.templates[1]``.
    where: str
    #: The annotation there (a dataclass for a table of the tree; ``"key"`` for a mapping key).
    tp: Any
    #: The value there in the data.
    value: object


def _locate(cls: type, data: Any, loc: tuple[int | str, ...], where: str = "") -> _Place:
    """The :class:`_Place` of the pydantic error location ``loc`` under ``data`` read as ``cls``."""
    tp, value = cls, data
    rank: list[tuple[int, ...]] = []
    for i, step in enumerate(loc):
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            keys = list(value)
            if step not in _field_types(tp):  # an unknown key
                return _Place((*rank, (0,)), where, tp, value)
            rank.append((1, keys.index(step)))
            tp, value, where = _field_types(tp)[str(step)], value[step], _join(where, str(step))
        elif origin is tuple:
            rank.append((int(step),))
            tp, value = typing.get_args(tp)[0], list(value)[int(step)]
            where = f"{where}[{step}]"
        elif isinstance(origin, type) and issubclass(origin, Mapping):
            keys = list(value)
            if loc[i + 1 :] == ("[key]",):
                return _Place((*rank, (keys.index(step), 0)), where, "key", step)
            rank.append((keys.index(step), 1))
            tp, value, where = typing.get_args(tp)[1], value[step], f"{where}.{step}"
        if typing.get_origin(tp) in (types.UnionType, typing.Union) and value is not None:
            (tp,) = [a for a in typing.get_args(tp) if a is not type(None)]
    return _Place(tuple(rank), where, tp, value)


#: pydantic's error types of a key that is no field of the dataclass.
_UNKNOWN_KEY = ("unexpected_keyword_argument", "extra_forbidden", "invalid_key")


def _message(
    cls: type, data: Any, error: ErrorDetails, errors: list[ErrorDetails], where: str
) -> str:
    """The message of pydantic's ``error`` (one of ``errors``), in the words of the old checks."""
    place = _locate(cls, data, error["loc"], where)
    if error["type"] in _UNKNOWN_KEY:
        parent = error["loc"][:-1]
        unknown = sorted(
            str(e["loc"][-1])
            for e in errors
            if e["type"] in _UNKNOWN_KEY and e["loc"][:-1] == parent
        )
        return _unknown(place.tp, place.where, unknown)
    if error["type"] == "value_error":  # __post_init__ refused the values
        return qualify(place.where, place.tp, str(error["ctx"]["error"]))
    if place.tp == "key":
        return f"{place.where} keys must be strings, got {place.value!r}"
    return f"{place.where} must be {_type_name(place.tp)}, got {place.value!r}"


def to_dict(obj: Any) -> Any:
    """Plain data of a config tree: tables for dataclasses and mappings, arrays for tuples.

    ``None`` fields and mapping values are left out (TOML has no null).
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if value is not None:
                out[f.name] = to_dict(value)
        return out
    if isinstance(obj, Mapping):
        return {str(k): to_dict(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list | tuple):
        return [to_dict(v) for v in obj]
    return obj


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The tables of a TOML file.

    Raises:
        ConfigError: the file cannot be read, is not UTF-8 text, or is not valid TOML.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from e
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES} bytes")
    text = _config_text(raw, path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"cannot read config file {path}: {e}") from e
    except RecursionError as e:  # arrays nested thousands deep
        raise ConfigError(f"cannot read config file {path}: nested too deeply") from e


#: Largest config file read (a config is a few kB).
MAX_CONFIG_BYTES = 16 << 20
_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def _config_text(raw: bytes, path: str | os.PathLike[str]) -> str:
    """The text of a config file: UTF-8, or UTF-8/16/32 with a byte-order mark (Windows editors
    save UTF-16 with one); anything else is refused naming the encoding problem.

    Raises:
        ConfigError: not decodable, or a lone surrogate / NUL in the text.
    """
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            raw, encoding = raw[len(bom) :], codec
            break
    else:
        encoding = "utf-8"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        hint = " (UTF-16 without a byte-order mark?)" if b"\x00" in raw else ""
        raise ConfigError(
            f"config file {path} is not {encoding.upper()} text{hint}: byte {e.start} "
            f"({raw[e.start : e.start + 4]!r}) cannot be decoded; save it as UTF-8"
        ) from e
    if "\x00" in text:
        raise ConfigError(
            f"config file {path} holds NUL characters (UTF-16 without a byte-order mark?); "
            "save it as UTF-8"
        )
    return text


def write_toml(data: Mapping[str, Any], path: str | os.PathLike[str], *, header: str = "") -> Path:
    """Write ``data`` as TOML to ``path`` atomically (a temporary file renamed into place).

    Args:
        data: Plain data (:func:`to_dict`).
        path: The file.
        header: Comment lines written first (each gets its ``# ``).
    """
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    return write_text_replacing(path, comment + tomli_w.dumps(dict(data)))


def write_text_replacing(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to a new temporary file beside ``path`` and rename it over ``path``.

    The temporary file is created exclusively (never an existing file or link), and the rename
    replaces a link at ``path`` rather than writing through it.

    Raises:
        OSError: the folder cannot be created or written (the temporary file is removed).
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8", "backslashreplace"))
        os.chmod(name, 0o644)
        os.replace(name, out)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return out
