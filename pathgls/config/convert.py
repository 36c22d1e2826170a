"""Typed dataclass ⇄ plain dict conversion, checked against the field annotations, and TOML I/O.

A config tree is frozen dataclasses whose fields are ``bool``, ``int``, ``float``, ``str``,
``Literal[...]``, ``X | None``, ``tuple[X, ...]``, ``Mapping[str, X]`` or another such dataclass.
:func:`from_dict` turns TOML/JSON-like data into the tree, checking every value on the way and
naming the offending key as ``section.key`` (``fusion.weights.logic``, ``grounding.templates[1]``);
:func:`to_dict` is its inverse, with ``None`` fields left out (TOML has no null; a missing key
loads as its default, and every ``X | None`` field of the tree defaults to None).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import tempfile
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import tomli_w

from pathgls.errors import ConfigError

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
        and math.isfinite(value)
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
    if typing.get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        return " or ".join(_type_name(a) for a in typing.get_args(tp) if a is not type(None))
    if typing.get_origin(tp) is tuple:
        return "an array"
    if typing.get_origin(tp) in (Mapping, dict) or tp in (Mapping, dict):
        return "a table"
    return getattr(tp, "__name__", str(tp))


def convert(tp: Any, value: Any, where: str) -> Any:
    """``value`` as the annotated type ``tp``, checked; ``where`` names it in errors.

    Raises:
        ConfigError: the value does not fit the type.
        TypeError: ``tp`` is an annotation this converter does not know (a programming error).
    """
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where} must be a table, got {value!r}")
        return from_dict(tp, value, where)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(tp)):
            return None
        errors = []
        for arg in args:
            try:
                return convert(arg, value, where)
            except ConfigError as e:
                errors.append(str(e))
        if len(errors) == 1:
            raise ConfigError(errors[0])
        raise ConfigError(f"{where} must be {_type_name(tp)}, got {value!r}")
    if origin is Literal:
        choices = typing.get_args(tp)
        if not any(type(value) is type(c) and value == c for c in choices):
            raise ConfigError(f"{where} must be {_type_name(tp)}, got {value!r}")
        return value
    if origin is tuple:
        item_args = typing.get_args(tp)
        if len(item_args) != 2 or item_args[1] is not Ellipsis:
            raise TypeError(f"{where}: only tuple[X, ...] fields are supported, not {tp}")
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where} must be an array, got {value!r}")
        return tuple(convert(item_args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin in (Mapping, dict) or tp in (Mapping, dict):
        key_tp, value_tp = typing.get_args(tp) or (str, Any)
        if key_tp is not str:
            raise TypeError(f"{where}: only Mapping[str, X] fields are supported, not {tp}")
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where} must be a table, got {value!r}")
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"{where} keys must be strings, got {k!r}")
            out[k] = convert(value_tp, v, f"{where}.{k}")
        return out
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where} must be float, got {value!r}")
        return float(value)
    if tp in (int, str, bool):
        if type(value) is not tp:
            raise ConfigError(f"{where} must be {tp.__name__}, got {value!r}")
        return value
    if tp is Any:
        return value
    raise TypeError(f"{where}: unsupported config annotation {tp!r}")


def _field_types(cls: type) -> dict[str, Any]:
    """Resolved annotation of each ``__init__`` field of the dataclass ``cls``."""
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

    Raises:
        ConfigError: an unknown key, a value of the wrong type, or one its validation refuses;
            the message names the key (``section.key``).
    """
    fields = _field_types(cls)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(_unknown(cls, where, unknown))
    kwargs = {k: convert(fields[k], v, _join(where, k)) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError as e:
        raise ConfigError(qualify(where, cls, str(e))) from e


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
