"""Text that pathgls did not write, made safe for where it is shown: a terminal, a log, a
spreadsheet.

File and folder names, model answers and report text are input: a name may hold an escape
sequence (``\\x1b]0;title\\x07`` retitles the terminal, ``\\x1b[2J`` clears it), a carriage return
or line feed that forges a line of the run log ("... finished"), Rich markup (``[red]``) that
the console would interpret, or a leading ``=``/``+``/``-``/``@`` that a spreadsheet runs as a
formula (``=HYPERLINK(...)``, ``+cmd|' /C calc'!A0``). Every writer uses one of:

* :func:`terminal_text`: control characters (C0, DEL, C1, and the bidirectional and
  zero-width formatting characters) written as visible escapes (``\\x1b``, ``\\n``,
  ``\\u202e``); the text is otherwise kept;
* :func:`markup_text`: :func:`terminal_text`, then Rich markup escaped (what a console
  message built from input needs);
* :func:`log_text`: for a log record that may span lines: control characters escaped except
  line feeds, and every continuation line indented under the record, so no text can start a
  line that reads as a record of its own;
* :func:`csv_cell`: a table cell neutralised the OWASP way (a cell starting with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return gets a leading ``'``; numbers are left as they are).

Core floor: imports nothing from pathgls.
"""

from __future__ import annotations

import math
import re
from numbers import Number

# C0 and C1 controls, DEL, and the Unicode formatting characters that reorder or hide text
# (bidirectional overrides and isolates, zero-width characters, the line/paragraph separators).
_OTHER = "\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"[\x00-\x1f{_OTHER}]")
_CONTROL_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHER}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: What a log record's continuation lines start with (never a timestamp).
LOG_CONTINUATION = "    | "
#: Leading characters a spreadsheet reads as the start of a formula (OWASP: CSV injection).
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: object) -> str:
    """``str(text)`` with every control and formatting character written as a visible escape
    (``"a\\x1b[2Jb\\n"`` → ``"a\\\\x1b[2Jb\\\\n"``): one line, nothing a terminal acts on."""
    return _CONTROL.sub(_escape, str(text))


def markup_text(text: object) -> str:
    """:func:`terminal_text`, with Rich markup escaped (``[red]`` is shown, not applied)."""
    from rich.markup import escape

    return escape(terminal_text(text))


def log_text(text: object) -> str:
    """A log record's text: controls escaped except line feeds; continuation lines indented
    with :data:`LOG_CONTINUATION`, so no input can forge a record of its own."""
    lines = _CONTROL_BUT_NEWLINE.sub(_escape, str(text)).split("\n")
    return "\n".join([lines[0], *(LOG_CONTINUATION + line for line in lines[1:])])


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text)) or text.strip().lower() in ("nan", "inf", "-inf")
    except ValueError:
        return False


def csv_cell(value: object) -> object:
    """``value`` as a CSV/TSV cell no spreadsheet runs as a formula.

    A string starting with one of :data:`FORMULA_LEADS` gets a leading ``'`` (shown by
    spreadsheets as text), unless it is a plain number (``-0.25`` stays a number); numbers,
    None and booleans are returned unchanged.
    """
    if value is None or isinstance(value, Number | bool):
        return value
    text = str(value)
    if text.startswith(FORMULA_LEADS) and not _is_number(text):
        return "'" + text
    return text


def csv_row(row: dict[str, object]) -> dict[str, object]:
    """:func:`csv_cell` of every value of ``row``."""
    return {key: csv_cell(value) for key, value in row.items()}


def replace_unencodable_output() -> None:
    """Let stdout and stderr write what their encoding cannot hold as backslash escapes
    (``PYTHONIOENCODING=ascii`` and a file name ``é.png``: ``\\xe9.png``), never raising
    ``UnicodeEncodeError``. Called once by the command line's entry point."""
    import contextlib
    import sys

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a closed or detached stream
                reconfigure(errors="backslashreplace")
