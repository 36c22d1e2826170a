"""The one reader of user tables (reports, references, labels, expert scores): TSV or CSV.

Every table a user hands pathgls goes through :func:`read_table`, which

- strips a UTF-8 byte-order mark (Excel writes one; it would hide the first column's name);
- strips spaces around column names;
- refuses a quote that is never closed, naming the line where it opened;
- refuses a quoted field that swallowed what look like whole rows (a stray quote closed by
  another one many lines later), so that no row silently disappears;
- refuses a row with more fields than the header;
- refuses a file, a field or a row count past the caps of :mod:`pathgls.io.limits`;
- returns each row with the line it starts on (the header is line 1).

Quoted fields may hold line breaks (multi-line reports); ``.csv`` files are comma-separated,
anything else tab-separated.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path

from pathgls.errors import InputTooLargeError, TableError
from pathgls.io.limits import ENV, check_nesting, check_size, limits
from pathgls.io.sniff import file_binary_format


@dataclass(frozen=True)
class Table:
    """A table read by :func:`read_table`."""

    path: Path
    columns: tuple[str, ...]  # the header, names stripped
    rows: list[dict[str, str | None]] = field(default_factory=list)  # None: a missing field
    lines: list[int] = field(default_factory=list)  # the line each row starts on


def delimiter_for(path: str | os.PathLike[str]) -> str:
    """``,`` for a ``.csv`` file, a tab for anything else."""
    return "," if Path(path).suffix.lower() == ".csv" else "\t"


def read_table(
    path: str | os.PathLike[str],
    *,
    required: tuple[str, ...] = (),
    delimiter: str | None = None,
    what: str = "table",
) -> Table:
    """Read a TSV/CSV table with its header.

    Args:
        path: The file.
        required: Columns that must be in the header.
        delimiter: Field separator (default: :func:`delimiter_for`).
        what: What the table is, for messages ("references", "expert table").

    Raises:
        TableError: unreadable, binary (a spreadsheet, a PDF, ...: the format is named) or
            not UTF-8, no header, a missing column, an unclosed quote, a
            quoted field that swallowed rows, or a row longer than the header (the message
            names the line).
    """
    p = Path(path)
    sep = delimiter or delimiter_for(p)
    caps = limits()
    csv.field_size_limit(caps.text_bytes)  # one field (a report) is at most a text file
    try:
        check_size(p, what=what, table=True)  # refused by its size before any read
        found = file_binary_format(p)  # a spreadsheet, a PDF, an image: named, not decoded
        if found is not None:
            raise TableError(f"{what} {p} is {found}, not a TSV/CSV table")
        with p.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=sep, strict=True)
            return _read(reader, p, sep, required, what, caps.rows)
    except UnicodeDecodeError as e:
        raise TableError(f"{what} {p}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    except OSError as e:
        raise TableError(f"cannot read the {what} {p}: {e.strerror or e}") from e


def _read(
    reader: csv.Reader,  # type: ignore[name-defined]
    p: Path,
    sep: str,
    required: tuple[str, ...],
    what: str,
    max_rows: int,
) -> Table:
    start = 1
    try:
        header = next(reader, None)
        if header is None or not any(h.strip() for h in header):
            raise TableError(f"{what} {p}: empty file (need a header line)")
        columns = tuple(h.strip() for h in header)
        missing = [c for c in required if c not in columns]
        if missing:
            raise TableError(
                f"{what} {p}: missing column(s) {', '.join(missing)}; the header has "
                f"{', '.join(c for c in columns if c) or 'nothing'}"
            )
        table = Table(path=p, columns=columns)
        start = reader.line_num + 1
        for row in reader:
            end = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip() and len(columns) > 1):
                start = end + 1
                continue  # a blank line
            where = f"{what} {p}, line {start}"
            if len(row) > len(columns):
                raise TableError(
                    f"{where}: more values than columns ({len(row)} fields, the header has "
                    f"{len(columns)}; separator {sep!r})"
                )
            _check_swallowed(row, len(columns), sep, where, end)
            if len(table.rows) >= max_rows:
                raise InputTooLargeError(
                    f"{what} {p} has more than {max_rows:,} rows, the cap; not read (raise it "
                    f"with {ENV['rows']}=N, or split the table)"
                )
            for value in row:
                check_nesting(value, what=what, where=where)
            values = {c: (row[i] if i < len(row) else None) for i, c in enumerate(columns)}
            table.rows.append(values)
            table.lines.append(start)
            start = end + 1
    except csv.Error as e:
        if "field larger than field limit" in str(e):
            raise InputTooLargeError(
                f"{what} {p}, line {start}: a field is longer than {limits().text_bytes:,} "
                f"bytes, the cap; not read (raise it with {ENV['text_bytes']}=N)"
            ) from e
        raise TableError(
            f"{what} {p}, line {start}: {e}; a quote opened there is never closed"
            if "end of data" in str(e)
            else f"{what} {p}, line {start}: {e}"
        ) from e
    return table


def _check_swallowed(row: list[str], n_columns: int, sep: str, where: str, end: int) -> None:
    """Refuse a quoted field whose lines look like rows of the table (a stray quote)."""
    if n_columns < 2:
        return
    for value in row:
        if "\n" not in value:
            continue
        rows_inside = sum(line.count(sep) == n_columns - 1 for line in value.splitlines()[1:])
        if rows_inside:
            raise TableError(
                f"{where}: a quoted field runs to line {end} and holds {rows_inside} line(s) "
                "that look like rows of the table: a quote is not closed where it should be"
            )
