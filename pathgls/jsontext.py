"""The one strict reader of JSON text that comes from outside (servers, models, files).

:func:`loads_strict` is :func:`json.loads` with the failures a hostile or broken document can
cause turned into one :class:`JSONTextError` (a ``ValueError``) whose message says what is
wrong:

* a key repeated in one object (``{"score": 1, "score": 5}``): ``json.loads`` silently keeps the
  last value, so a reply or a file could say two things at once and be read as one;
* nesting deeper than ``max_depth`` (``[[[[...]]]]``): refused before the parser recurses, so it
  never ends in a ``RecursionError``;
* bytes that are not UTF-8.

:func:`valid_unicode` replaces lone surrogates (``"\\ud800"`` is valid JSON, but no UTF-8 file
can hold it) so text read from outside can always be written again.

It sits on the bottom floor, beside :mod:`pathgls.types` (whose ScoreCards it reads), and
imports only :mod:`pathgls.errors`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pathgls.errors import JSONTextError

#: Deepest nesting of arrays and objects accepted by default (ScoreCards nest about 8 deep).
MAX_DEPTH = 512

_SURROGATE = re.compile("[\ud800-\udfff]")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JSONTextError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def nesting_depth(text: str) -> int:
    """Deepest nesting of ``[``/``{`` in JSON ``text`` (brackets inside strings not counted)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def loads_strict(
    text: str | bytes,
    *,
    max_depth: int = MAX_DEPTH,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """``json.loads(text)`` that refuses repeated keys and deep nesting (see the module doc).

    Args:
        text: JSON text (bytes are decoded as UTF-8).
        max_depth: Deepest nesting of arrays and objects accepted.
        parse_constant: Called for ``NaN``, ``Infinity`` and ``-Infinity`` (default: read as
            floats, as :func:`json.loads` does).

    Raises:
        JSONTextError: the text is not valid JSON, repeats a key in an object, nests deeper
            than ``max_depth`` or is not UTF-8; the message says which.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise JSONTextError(f"not UTF-8 text ({e})") from e
    if text.count("[") + text.count("{") > max_depth:  # only then can it nest that deep
        depth = nesting_depth(text)
        if depth > max_depth:
            raise JSONTextError(f"nested {depth} levels deep, more than the {max_depth} allowed")
    kwargs: dict[str, Any] = {"object_pairs_hook": _unique_keys}
    if parse_constant is not None:
        kwargs["parse_constant"] = parse_constant
    try:
        return json.loads(text, **kwargs)
    except JSONTextError:
        raise
    except RecursionError as e:  # never with the depth test above; kept as a guard
        raise JSONTextError(f"nested more than {max_depth} levels deep") from e
    except ValueError as e:  # json.JSONDecodeError
        raise JSONTextError(str(e)) from e


def valid_unicode(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (so it can be written as UTF-8)."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text
