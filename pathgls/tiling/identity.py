"""Which slide file is this, cheaply: size, mtime and a hash of its header and tile table.

A feature bag, a patches file or a ScoreCard made from a slide stores the slide's
:class:`FileIdentity`. A rerun recognises the same slide without reading it: its size, its
modification time and the hash of its *header* — for a TIFF (SVS, generic tiled TIFF, NDPI,
SCN, BIF, ...) every image directory with the values its tags point to (tile offsets and byte
counts, JPEG tables, the description with the scanner's metadata); for other files the first and
last MiB — must equal the stored ones. Only when the cheap identity disagrees in a way that
content alone can settle (the file was touched: same size and header, a new mtime), or when
``verify`` is asked, is the whole file hashed again (SHA-256) and compared with the stored hash.

    same      nothing changed (no pixel read, no full hash)
    touched   the mtime changed, the content is the same (full hash equal)
    changed   the size, the header or the full hash differ: what was made from it is stale
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pathgls.errors import SlideError, SlideIdentityError
from pathgls.io.checksums import file_sha256

#: Bytes read from each end of a non-TIFF file for its header hash.
EDGE_BYTES = 1 << 20
#: Image directories followed at most, and bytes read at most for one tag's value.
_MAX_IFDS = 4096
_MAX_VALUE = 64 << 20
#: TIFF field type → size of one value in bytes.
_TYPE_SIZE = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4}
_TYPE_SIZE |= {16: 8, 17: 8, 18: 8}
_SUBIFDS = 330
#: Companion files that belong to a slide file (OpenSlide reads them with it).
_MRXS = ".mrxs"
_DICOM = ".dcm"

Status = Literal["same", "touched", "changed"]


@dataclass(frozen=True)
class FileIdentity:
    """What identifies a slide file's content, cheapest first.

    Attributes:
        size: Bytes.
        mtime_ns: Modification time (ns since the epoch).
        header_sha256: SHA-256 of the header and tile table (see the module docstring).
        sha256: SHA-256 of the whole file; "" where it was not computed.
    """

    size: int
    mtime_ns: int
    header_sha256: str
    sha256: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (a ScoreCard's ``inputs.slide_identity``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FileIdentity | None:
        """The identity stored in ``data``, or None when it is not one (an older record)."""
        try:
            size, mtime = data["size"], data["mtime_ns"]
            header, full = data.get("header_sha256", ""), data.get("sha256", "")
        except (KeyError, TypeError):
            return None
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (size, mtime))
        if not ints or not isinstance(header, str) or not isinstance(full, str):
            return None
        return cls(size=size, mtime_ns=mtime, header_sha256=header, sha256=full)


@dataclass(frozen=True)
class IdentityCheck:
    """A slide file compared with the identity stored when something was made from it.

    Attributes:
        status: ``same``, ``touched`` or ``changed``.
        current: The file's identity now (``sha256`` set when it was hashed here, or carried
            over from the stored identity when the file is the same).
        reason: Why, in words (for the warning of a recomputation).
        hashed: The whole file was hashed for this check.
    """

    status: Status
    current: FileIdentity
    reason: str = ""
    hashed: bool = False

    @property
    def reusable(self) -> bool:
        """What was made from the stored file is still valid."""
        return self.status != "changed"


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as e:
        raise SlideError(f"{path}: cannot stat the file: {e}", path=str(path)) from e


def header_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a slide's header and tile table (a TIFF's directories and their values; the
    first and last MiB of any other file), plus the names and sizes of its companion files.

    Raises:
        SlideError: the file cannot be read.
    """
    p = Path(path)
    h = hashlib.sha256()
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            h.update(struct.pack("<Q", size))
            if not _hash_tiff(fh, size, h):
                h.update(b"raw")
                fh.seek(0)
                h.update(fh.read(EDGE_BYTES))
                if size > EDGE_BYTES:
                    fh.seek(max(EDGE_BYTES, size - EDGE_BYTES))
                    h.update(fh.read(EDGE_BYTES))
    except OSError as e:
        raise SlideError(f"{p}: cannot read the file's header: {e}", path=str(p)) from e
    for name, nbytes in _companions(p):
        h.update(f"{name}\0{nbytes}\0".encode())
    return h.hexdigest()


def _companions(path: Path) -> list[tuple[str, int]]:
    """Files OpenSlide reads with ``path``: an MRXS's data folder, a DICOM series' other files."""
    suffix = path.suffix.lower()
    if suffix == _MRXS:
        folder = path.with_suffix("")
        files = sorted(folder.iterdir()) if folder.is_dir() else []
    elif suffix == _DICOM:
        files = sorted(f for f in path.parent.iterdir() if f.suffix.lower() == _DICOM and f != path)
    else:
        return []
    out = []
    for f in files:
        try:
            out.append((f.name, f.stat().st_size))
        except OSError:
            continue
    return out


def _hash_tiff(fh: Any, size: int, h: Any) -> bool:
    """Hash a TIFF's image directories and out-of-line tag values; False when not a TIFF."""
    head = fh.read(16)
    if len(head) < 8 or head[:2] not in (b"II", b"MM"):
        return False
    e = "<" if head[:2] == b"II" else ">"
    magic = struct.unpack(e + "H", head[2:4])[0]
    if magic == 42:
        big, first = False, struct.unpack(e + "I", head[4:8])[0]
    elif magic == 43 and len(head) >= 16:
        big, first = True, struct.unpack(e + "Q", head[8:16])[0]
    else:
        return False
    h.update(head[:16] if big else head[:8])
    count_fmt, entry_size, off_fmt = ("Q", 20, "Q") if big else ("H", 12, "I")
    inline = 8 if big else 4
    todo, seen = [first], set[int]()
    while todo and len(seen) < _MAX_IFDS:
        offset = todo.pop()
        if offset == 0 or offset in seen or offset >= size:
            continue
        seen.add(offset)
        fh.seek(offset)
        raw_count = fh.read(8 if big else 2)
        if len(raw_count) < (8 if big else 2):
            return True  # a truncated directory: hashed as far as it goes
        (n,) = struct.unpack(e + count_fmt, raw_count)
        body = fh.read(n * entry_size + inline)
        h.update(raw_count + body)
        for i in range(min(n, len(body) // entry_size)):
            entry = body[i * entry_size : (i + 1) * entry_size]
            tag, typ = struct.unpack(e + "HH", entry[:4])
            (count,) = struct.unpack(e + ("Q" if big else "I"), entry[4 : 4 + inline])
            nbytes = count * _TYPE_SIZE.get(typ, 1)
            value = entry[4 + inline :]
            if nbytes > inline:
                (where,) = struct.unpack(e + off_fmt, value)
                fh.seek(where)
                data = fh.read(min(nbytes, _MAX_VALUE))
                h.update(data)
            else:
                data = value[:nbytes]
            if tag == _SUBIFDS and typ in (4, 13, 16, 18):
                fmt = "Q" if typ in (16, 18) else "I"
                step = struct.calcsize(fmt)
                todo += [
                    struct.unpack(e + fmt, data[j : j + step])[0]
                    for j in range(0, len(data) - step + 1, step)
                ]
        nxt = body[n * entry_size : n * entry_size + inline]
        if len(nxt) == inline:
            todo.append(struct.unpack(e + off_fmt, nxt)[0])
    return True


def file_identity(path: str | os.PathLike[str], *, full: bool = True) -> FileIdentity:
    """The identity of a slide file now; ``full`` hashes the whole file too.

    Raises:
        SlideError: the file cannot be read.
    """
    p = Path(path)
    st = _stat(p)
    ident = FileIdentity(size=st.st_size, mtime_ns=st.st_mtime_ns, header_sha256=header_sha256(p))
    return replace(ident, sha256=full_sha256(p)) if full else ident


def full_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of the whole slide file (for a DICOM series, of the file given).

    Raises:
        SlideError: the file cannot be read.
    """
    try:
        return file_sha256(path)
    except OSError as e:
        raise SlideError(f"{path}: cannot read for hashing: {e}", path=str(path)) from e


def check_identity(
    path: str | os.PathLike[str], stored: FileIdentity, *, verify: bool = False
) -> IdentityCheck:
    """Compare a slide file with the identity stored when something was made from it.

    The whole file is hashed only when the size and header agree but the mtime does not, or
    with ``verify``; without a stored full hash such a file counts as changed.

    Raises:
        SlideError: the file cannot be read.
    """
    p = Path(path)
    st = _stat(p)
    now = FileIdentity(size=st.st_size, mtime_ns=st.st_mtime_ns, header_sha256="")
    if st.st_size != stored.size:
        return IdentityCheck(
            "changed", now, f"its size changed ({stored.size} → {st.st_size} bytes)"
        )
    now = replace(now, header_sha256=header_sha256(p))
    if now.header_sha256 != stored.header_sha256:
        return IdentityCheck("changed", now, "its header or tile table changed")
    cheap_same = now.mtime_ns == stored.mtime_ns
    if cheap_same and not verify:
        return IdentityCheck("same", replace(now, sha256=stored.sha256))
    digest = full_sha256(p)
    now = replace(now, sha256=digest)
    if not stored.sha256:
        why = "it was modified" if not cheap_same else "it cannot be verified"
        return IdentityCheck(
            "changed", now, f"{why} and no full hash was stored with it", hashed=True
        )
    if digest != stored.sha256:
        return IdentityCheck(
            "changed",
            now,
            f"its content changed (SHA-256 {stored.sha256[:12]}… → {digest[:12]}…)",
            hashed=True,
        )
    if cheap_same:
        return IdentityCheck("same", now, hashed=True)
    return IdentityCheck("touched", now, "modified time changed, content the same", hashed=True)


def describe(identity: FileIdentity) -> str:
    """``"2,345,678 bytes, SHA-256 0123456789abcdef…"`` (the header hash when no full hash is
    known; "unknown" parts said as such)."""
    if identity.sha256:
        digest = f"SHA-256 {identity.sha256[:16]}…"
    elif identity.header_sha256:
        digest = f"header SHA-256 {identity.header_sha256[:16]}…"
    else:
        digest = "no hash recorded"
    return f"{identity.size:,} bytes, {digest}"


def require_same(
    path: str | os.PathLike[str], stored: FileIdentity, *, made: str, given: str = "the slide"
) -> IdentityCheck:
    """``path`` must be the file ``stored`` describes; its :class:`IdentityCheck` when it is.

    A stored identity without size or hashes (an older record) cannot tell and is accepted. The
    size and header are compared first; the whole file is hashed only when they agree but the
    mtime does not, and when the file differs (so the error can name its SHA-256).

    Args:
        path: The file given now.
        stored: What was recorded when ``made`` was made from it.
        made: What was made from the recorded file, for the message (``"the bag b.h5"``).
        given: How the file was given, for the message (``"--slide"``).

    Raises:
        SlideIdentityError: another file (the message names both identities and why).
        SlideError: the file cannot be read.
    """
    if not stored.size or not (stored.sha256 or stored.header_sha256):
        return IdentityCheck("same", file_identity(path, full=False), "no identity recorded")
    if stored.header_sha256:
        check = check_identity(path, stored)
    else:  # only size and full hash recorded
        now = file_identity(path, full=True)
        same = now.size == stored.size and now.sha256 == stored.sha256
        check = IdentityCheck("same" if same else "changed", now, "", hashed=True)
    if check.reusable:
        return check
    now = check.current
    if not now.sha256:
        now = replace(now, header_sha256=now.header_sha256 or header_sha256(path))
        now = replace(now, sha256=full_sha256(path))
    raise SlideIdentityError(
        f"{given} {path} is not the slide {made} was made from: that one was "
        f"{describe(stored)}; this one is {describe(now)}"
        + (f" ({check.reason})" if check.reason else ""),
        path=str(path),
    )
