"""What a file holds, from its first bytes: text, or which binary format.

A report, a table or a replay file that is really an image, a PDF, a spreadsheet or a feature
bag must be refused with its format named, not decoded byte by byte into "text" and scored
(an image's bytes read as a report once gave S_l = 0.141 with contradictions quoted from
binary noise). :func:`binary_format` names the format from the file's signature, else from
NUL bytes or a high share of control characters; :func:`read_text_bytes` reads a text file
or raises :class:`~pathgls.errors.NotTextError`.

Core floor: imports only :mod:`pathgls.errors` and :mod:`pathgls.io.limits`.
"""

from __future__ import annotations

import os
from pathlib import Path

from pathgls.errors import NotTextError

#: How many leading bytes are looked at.
SNIFF_BYTES = 65536
#: A text file has at most this share of control characters (other than tab, line feed,
#: carriage return, form feed and escape) in its first :data:`SNIFF_BYTES`.
MAX_CONTROL_SHARE = 0.02

#: Signatures at offset 0 and what they mean (the longest prefixes first where they overlap).
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image or slide"),
    (b"MM\x00*", "a TIFF image or slide"),
    (b"II+\x00", "a BigTIFF image or slide"),
    (b"MM\x00+", "a BigTIFF image or slide"),
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n", "a JPEG 2000 image"),
    (b"\xff\x4f\xff\x51", "a JPEG 2000 codestream"),
    (b"%PDF-", "a PDF document (export its text first)"),
    (b"PK\x03\x04", "a ZIP archive (a .docx/.xlsx/.zip file: save it as plain text, TSV or CSV)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an OLE2 document (.doc/.xls: save it as plain text)"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file (a feature bag?)"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"(\xb5/\xfd", "a zstd-compressed file"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x93NUMPY", "a NumPy array (.npy)"),
    (b"\x7fELF", "an executable (ELF)"),
    (b"PAR1", "a Parquet table (use summary.csv or a TSV)"),
    (b"ARROW1", "an Arrow file"),
)
# RIFF containers: the format is at offset 8.
_RIFF = {b"WEBP": "a WebP image", b"WAVE": "a WAV audio file", b"AVI ": "an AVI video"}
# Text encodings clean_report decodes that use NUL bytes: their byte-order marks.
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
# Control bytes a text file should not have (tab, LF, CR, form feed and escape are allowed).
_CONTROL_BYTES = bytes(b for b in (*range(32), 127) if b not in b"\t\n\r\f\x1b")


def signature_format(head: bytes) -> str | None:
    """The binary format ``head`` (a file's first bytes) names by its signature; None when it
    has no known signature (it may still be binary: :func:`binary_format`)."""
    for magic, what in SIGNATURES:
        if head.startswith(magic):
            return what
    if head[:4] == b"RIFF" and head[8:12] in _RIFF:
        return _RIFF[head[8:12]]
    if len(head) >= 132 and head[128:132] == b"DICM":
        return "a DICOM file"
    if head.startswith(b"BM") and len(head) >= 26 and head[6:10] == b"\x00\x00\x00\x00":
        return "a BMP image"
    return None


def binary_format(head: bytes) -> str | None:
    """What ``head`` (a file's first bytes) is when it is not text; None for text.

    Known signatures name their format (:func:`signature_format`); otherwise a NUL byte
    (outside UTF-16 with a byte-order mark) or more than :data:`MAX_CONTROL_SHARE` control
    characters make it "binary data".
    """
    named = signature_format(head)
    if named is not None:
        return named
    if head.startswith(_UTF16_BOMS):
        return None
    if b"\x00" in head:
        return "binary data (it has NUL bytes)"
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    if head and controls / len(head) > MAX_CONTROL_SHARE:
        return f"binary data ({controls} control bytes in the first {len(head)})"
    return None


def file_binary_format(path: str | os.PathLike[str]) -> str | None:
    """:func:`binary_format` of a file's first bytes.

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        return binary_format(f.read(SNIFF_BYTES))


def file_signature_format(path: str | os.PathLike[str]) -> str | None:
    """:func:`signature_format` of a file's first bytes.

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        return signature_format(f.read(SNIFF_BYTES))


def read_text_bytes(path: str | os.PathLike[str], *, what: str = "report") -> bytes:
    """The bytes of a text file (its decoding is the reader's job).

    Args:
        path: The file.
        what: What the file should be, for messages ("report", "reference report", ...).

    Raises:
        NotTextError: the path is missing, a directory, unreadable, or not text (the message
            names the format found).
        InputTooLargeError: larger than the text cap, by its size or while streaming (a pipe,
            ``/dev/zero``), or nested deeper than the nesting cap (:mod:`pathgls.io.limits`).
    """
    from pathgls.io.limits import check_nesting, check_size, read_capped

    p = Path(path)
    if not p.exists():
        raise NotTextError(f"{what} {p}: no such file")
    if p.is_dir():
        raise NotTextError(f"{what} {p} is a directory, not a text file")
    try:
        check_size(p, what=what)  # a 60 GB file is refused before any read
        with p.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)  # a pipe or device (/dev/zero): judged on its head
            found = binary_format(head)
            if found is not None:
                raise NotTextError(f"{what} {p} is {found}, not a text {what}")
            data = head + read_capped(fh, what=what, where=p, already=len(head))
    except OSError as e:
        raise NotTextError(f"cannot read {what} {p}: {e}") from e
    check_nesting(data, what=what, where=p)
    return data
