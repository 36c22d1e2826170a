"""Hostile inputs for tests and ``benchmarks/bench_hostile.py``: files that lie about themselves.

Each builder writes one small file whose header claims what its body cannot back: a TIFF
declaring 200000² pixels in a few hundred kilobytes, a slide whose JPEG tile is damaged or
whose tile byte count is 2^60, feature bags that point at other files or declare millions of
patches they do not store. They are written from scratch or patched in place with the format's
own offsets (no data is fetched), and each is a few MB at most.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import h5py
import numpy as np

__all__ = [
    "damage_jpeg_tile",
    "set_tile_byte_count",
    "write_sparse_tiff",
]

# TIFF tag numbers and field types used below.
_SHORT, _LONG = 3, 4


def write_sparse_tiff(
    path: str | os.PathLike[str],
    *,
    width: int,
    height: int,
    tile: int = 1024,
    pad_bytes: int = 0,
) -> Path:
    """A tiled TIFF declaring ``width × height`` RGB pixels whose tiles all share one body.

    Every entry of TileOffsets points at the same deflate-compressed white tile, so the file is
    ``8 × tiles`` bytes plus a few kB, whatever it declares (OpenSlide opens it as
    ``generic-tiff``). ``pad_bytes`` of zeros are appended to raise the file size (to pass a
    pixels-per-byte check and reach the read budget instead).
    """
    across, down = -(-width // tile), -(-height // tile)
    n = across * down
    body = zlib.compress(np.full((tile, tile, 3), 255, np.uint8).tobytes(), 9)
    tags = [
        (256, _LONG, 1, width),
        (257, _LONG, 1, height),
        (258, _SHORT, 3, None),  # BitsPerSample 8, 8, 8 (stored out of line)
        (259, _SHORT, 1, 8),  # Compression: deflate
        (262, _SHORT, 1, 2),  # PhotometricInterpretation: RGB
        (277, _SHORT, 1, 3),  # SamplesPerPixel
        (284, _SHORT, 1, 1),  # PlanarConfiguration: contiguous
        (322, _LONG, 1, tile),  # TileWidth
        (323, _LONG, 1, tile),  # TileLength
        (324, _LONG, n, None),  # TileOffsets
        (325, _LONG, n, None),  # TileByteCounts
    ]
    ifd_at = 8
    ifd_size = 2 + 12 * len(tags) + 4
    bits_at = ifd_at + ifd_size
    offsets_at = bits_at + 6
    counts_at = offsets_at + 4 * n
    body_at = counts_at + 4 * n
    entries = []
    for tag, kind, count, value in tags:
        if tag == 258:
            value = bits_at
        elif tag == 324:
            value = offsets_at if n > 1 else body_at
        elif tag == 325:
            value = counts_at if n > 1 else len(body)
        if kind == _SHORT and count == 1:
            entries.append(struct.pack("<HHIHH", tag, kind, count, value, 0))
        else:
            entries.append(struct.pack("<HHII", tag, kind, count, value))
    out = Path(path)
    with out.open("wb") as fh:
        fh.write(b"II*\x00" + struct.pack("<I", ifd_at))
        fh.write(struct.pack("<H", len(tags)) + b"".join(entries) + struct.pack("<I", 0))
        fh.write(struct.pack("<HHH", 8, 8, 8))
        fh.write(np.full(n, body_at, "<u4").tobytes())
        fh.write(np.full(n, len(body), "<u4").tobytes())
        fh.write(body)
        fh.write(b"\0" * pad_bytes)
    return out


def _tile_tags(path: Path, page: int) -> tuple[list[int], list[int], int, int]:
    """``(offsets, counts, counts_tag_offset, count_item_size)`` of a page's tiles."""
    import tifffile

    with tifffile.TiffFile(str(path)) as tif:
        p = tif.pages[page]
        tag = p.tags["TileByteCounts"]
        item = 8 if tif.is_bigtiff else 4
        if tag.dtype in (3,):  # SHORT counts
            item = 2
        return list(p.dataoffsets), list(p.databytecounts), int(tag.valueoffset), item


def damage_jpeg_tile(
    path: str | os.PathLike[str],
    *,
    tile: int = 0,
    page: int = 0,
    how: str = "truncate",
    seed: int = 0,
) -> Path:
    """Damage one tile's JPEG data in place.

    ``how="truncate"`` zeroes the second half of the tile's bytes ("Premature end of JPEG
    file": OpenSlide refuses the tile); ``how="garbage"`` overwrites 200 bytes in its middle with
    seeded random bytes (libjpeg warns; whether OpenSlide refuses depends on the warning).
    """
    p = Path(path)
    offsets, counts, _, _ = _tile_tags(p, page)
    start, n = offsets[tile], counts[tile]
    if how == "truncate":
        at, data = start + n // 2, b"\0" * (n - n // 2)
    elif how == "garbage":
        at = start + n // 2
        data = np.random.default_rng(seed).integers(0, 256, 200, dtype=np.uint8).tobytes()
    else:
        raise ValueError(f"how must be 'truncate' or 'garbage', got {how!r}")
    with p.open("r+b") as fh:
        fh.seek(at)
        fh.write(data)
    return p


def set_tile_byte_count(
    path: str | os.PathLike[str], *, count: int, tile: int = 0, page: int = 0
) -> Path:
    """Set one tile's TileByteCounts entry to ``count`` in place (a BigTIFF takes 2^60)."""
    p = Path(path)
    _, counts, at, item = _tile_tags(p, page)
    if len(counts) == 1:
        raise ValueError("a single-tile page keeps its byte count inside the tag entry")
    fmt = {2: "<H", 4: "<I", 8: "<Q"}[item]
    with p.open("r+b") as fh:
        fh.seek(at + tile * item)
        fh.write(struct.pack(fmt, count))
    return p


def _unused(_: h5py.File) -> None:  # pragma: no cover - keeps h5py imported for bag builders
    return None
