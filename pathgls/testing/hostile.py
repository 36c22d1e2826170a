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
from typing import TYPE_CHECKING

import h5py
import numpy as np

if TYPE_CHECKING:
    from pathgls.features.bags import BagMeta

__all__ = [
    "HOSTILE_BAGS",
    "damage_jpeg_tile",
    "hostile_bag",
    "set_tile_byte_count",
    "write_bag",
    "write_sparse_tiff",
]

# TIFF field types used below.
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


def _tile_tags(path: Path, page: int) -> tuple[list[int], list[int]]:
    """``(offsets, counts)`` of a page's tiles."""
    import tifffile

    with tifffile.TiffFile(str(path)) as tif:
        p = tif.pages[page]
        return list(p.dataoffsets), list(p.databytecounts)


def damage_jpeg_tile(
    path: str | os.PathLike[str],
    *,
    tile: int = 0,
    page: int = 0,
    how: str = "truncate",
    seed: int = 0,
) -> Path:
    """Damage one tile's JPEG data in place.

    ``how="truncate"`` cuts the tile's stream to its first quarter (its byte count is lowered:
    "Premature end of JPEG file", which OpenSlide refuses); ``how="garbage"`` overwrites 200
    bytes in its middle with seeded random bytes (libjpeg warns; whether OpenSlide refuses
    depends on the warning).
    """
    p = Path(path)
    offsets, counts = _tile_tags(p, page)
    start, n = offsets[tile], counts[tile]
    if how == "truncate":
        return set_tile_byte_count(p, count=n // 4, tile=tile, page=page)
    if how == "garbage":
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
    """Set one tile's TileByteCounts entry to ``count`` in place.

    A count too large for the tag's type (a 2^60 count in a LONG array) needs a BigTIFF: the
    counts are then rewritten as LONG8 at the end of the file and the tag pointed at them.
    """
    import tifffile

    p = Path(path)
    with tifffile.TiffFile(str(p)) as tif:
        first = tif.pages[page]
        assert isinstance(first, tifffile.TiffPage)  # pages are TiffPages unless useframes
        tag = first.tags["TileByteCounts"]
        counts = list(first.databytecounts)
        bigtiff, entry, kind = tif.is_bigtiff, tag.offset, int(tag.dtype)
        values_at = int(tag.valueoffset)
    if len(counts) == 1:
        raise ValueError("a single-tile page keeps its byte count inside the tag entry")
    size = {3: 2, 4: 4, 16: 8}[kind]
    if count < 1 << (8 * size):
        with p.open("r+b") as fh:
            fh.seek(values_at + tile * size)
            fh.write(count.to_bytes(size, "little"))
        return p
    if not bigtiff:
        raise ValueError(f"a count of {count} needs a BigTIFF (8-byte counts)")
    counts[tile] = count
    with p.open("r+b") as fh:
        fh.seek(0, os.SEEK_END)
        new_at = fh.tell()
        fh.write(np.asarray(counts, dtype="<u8").tobytes())
        fh.seek(entry + 2)  # BigTIFF entry: tag (2), type (2), count (8), value/offset (8)
        fh.write(struct.pack("<H", 16))
        fh.seek(entry + 12)
        fh.write(struct.pack("<Q", new_at))
    return p


# --- feature bags ----------------------------------------------------------------------------

#: Shape of the bags built here: patches, windows per patch, feature size.
BAG_N, BAG_W, BAG_D = 6, 4, 8


def bag_meta(**overrides: object) -> BagMeta:
    """The metadata of a test bag: 448 px patches at 20x (2 × 2 windows of 224 px), :data:`BAG_W`
    windows of :data:`BAG_D` features; ``overrides`` replace fields."""
    from pathgls.features.bags import BagMeta as Meta

    fields: dict[str, object] = dict(
        encoder="hf:tiny",
        patch_size=448,
        patch_size_level0=896,
        target_magnification=20.0,
        target_mpp=0.5,
        level0_magnification=40.0,
        level0_mpp=0.25,
        window_size=224,
        window_stride=224,
        slide_name="s",
        slide_sha256="ab" * 32,
        pathgls_version="0.1.0",
        n_windows=BAG_W,
        dim=BAG_D,
    )
    fields.update(overrides)
    return Meta(**fields)  # type: ignore[arg-type]


def write_bag(path: str | os.PathLike[str]) -> Path:
    """A valid complete bag of :data:`BAG_N` patches (448 px, 2 × 2 windows of 224 px)."""
    from pathgls.features.bags import BagWriter

    meta = bag_meta()
    coords = np.stack([np.arange(BAG_N) * 896, np.zeros(BAG_N)], 1).astype(np.int64)
    win = np.random.default_rng(0).normal(size=(BAG_N, BAG_W, BAG_D)).astype(np.float32)
    with BagWriter(path, meta=meta, coords=coords) as w:
        w.append(start=0, coords=coords, window_features=win, features=win.mean(1))
        w.finalize()
    return Path(path)


def _replace(f: h5py.File, name: str, **kwargs: object) -> None:
    del f[name]
    f.create_dataset(name, **kwargs)


def _other_file(path: Path, shape: tuple[int, ...], dtype: str) -> Path:
    other = path.with_name(path.stem + "-other.h5")
    with h5py.File(other, "w") as g:
        g["x"] = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    return other


def _external_storage(f: h5py.File, path: Path) -> None:
    target = path.with_name(path.stem + "-passwd")
    target.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n" * 8)
    _replace(f, "coords", shape=(BAG_N, 2), dtype="int64", external=[(str(target), 0, 1 << 20)])


def _external_link(f: h5py.File, path: Path) -> None:
    other = _other_file(path, (BAG_N, 2), "int64")
    del f["coords"]
    f["coords"] = h5py.ExternalLink(str(other), "x")


def _soft_link(f: h5py.File, path: Path) -> None:
    f["elsewhere"] = f["coords"][:]
    del f["coords"]
    f["coords"] = h5py.SoftLink("/elsewhere")


def _virtual(f: h5py.File, path: Path) -> None:
    other = _other_file(path, (BAG_N, BAG_D), "float32")
    layout = h5py.VirtualLayout(shape=(BAG_N, BAG_D), dtype="float32")
    layout[:] = h5py.VirtualSource(str(other), "x", shape=(BAG_N, BAG_D))
    del f["features"]
    f.create_virtual_dataset("features", layout)


def _unknown_filter(f: h5py.File, path: Path) -> None:
    data = f["features"][:]
    _replace(f, "features", data=data, chunks=(2, BAG_D), compression=32001,
             allow_unknown_filter=True)  # fmt: skip


def _string_features(f: h5py.File, path: Path) -> None:
    _replace(f, "features", data=np.full((BAG_N, BAG_D), b"0.5", dtype="S3"))


def _compound_coords(f: h5py.File, path: Path) -> None:
    rec = np.zeros((BAG_N, 2), dtype=[("x", "i8"), ("y", "i8")])
    _replace(f, "coords", data=rec)


def _float_coords(f: h5py.File, path: Path) -> None:
    _replace(f, "coords", data=f["coords"][:].astype("float64"))


def _declare(f: h5py.File, n: int, **storage: object) -> None:
    """Every dataset of the bag declared with ``n`` rows (shapes consistent), stored as
    ``storage`` says (chunks, compression); no data written."""
    tails = {"features": (BAG_D,), "coords": (2,), "window_features": (BAG_W, BAG_D)}
    dtypes = {"features": "float32", "coords": "int64", "window_features": "float16"}
    for name, tail in tails.items():
        chunks = storage.get("chunks")
        _replace(f, name, shape=(n, *tail), dtype=dtypes[name],
                 **{**storage, "chunks": (chunks, *tail) if chunks else None})  # fmt: skip


def _declared_chunked(f: h5py.File, path: Path) -> None:  # 20 M patches, nothing stored
    _declare(f, 20_000_000, chunks=64)


def _declared_contiguous(f: h5py.File, path: Path) -> None:
    _declare(f, 20_000_000)


def _declared_compressed(f: h5py.File, path: Path) -> None:  # the first chunk stored only
    _declare(f, 20_000_000, chunks=64, compression="gzip")
    f["features"][:64] = np.ones((64, BAG_D), np.float32)


def _compression_bomb(f: h5py.File, path: Path) -> None:
    """Every chunk stored, each a few bytes of deflated zeros: 224 MB declared in ~0.3 MB."""
    n, rows = 2_000_000, 1 << 16
    _declare(f, n, chunks=rows, compression="gzip", compression_opts=9)
    for name in ("features", "coords", "window_features"):
        ds = f[name]
        zeros = np.zeros((rows, *ds.shape[1:]), ds.dtype)
        for start in range(0, n, rows):
            ds[start : start + rows] = zeros[: n - start]


def _negative_coords(f: h5py.File, path: Path) -> None:
    c = f["coords"][:]
    c[2] = (-896, 0)
    f["coords"][...] = c


def _huge_coords(f: h5py.File, path: Path) -> None:
    c = f["coords"][:]
    c[3] = (1 << 40, 0)
    f["coords"][...] = c


def _huge_patch_attr(f: h5py.File, path: Path) -> None:
    f.attrs["patch_size"] = 10**12


def _window_mismatch(f: h5py.File, path: Path) -> None:
    f.attrs["window_stride"] = 112  # 3 × 3 windows for a 448 px patch, but W = 4


def _group_not_dataset(f: h5py.File, path: Path) -> None:
    del f["coords"]
    f.create_group("coords")


#: Hostile variants of a valid bag: name → (edit of the open file, words the refusal holds).
HOSTILE_BAGS = {
    "external-storage": (_external_storage, "keeps its data in the external file"),
    "external-link": (_external_link, "is an external link"),
    "soft-link": (_soft_link, "is a soft link"),
    "virtual-dataset": (_virtual, "is a virtual dataset"),
    "unknown-filter": (_unknown_filter, "unknown HDF5 filter 32001"),
    "string-features": (_string_features, "must hold floating-point numbers"),
    "compound-coords": (_compound_coords, "must hold integers"),
    "float-coords": (_float_coords, "must hold integers"),
    "declared-not-stored-chunked": (_declared_chunked, "but stores 0"),
    "declared-not-stored-contiguous": (_declared_contiguous, "but stores 0"),
    "declared-not-stored-compressed": (_declared_compressed, "stores 1 of its 312500 chunks"),
    "compression-bomb": (_compression_bomb, "what real features compress to"),
    "negative-coords": (_negative_coords, "row 2 is (-896, 0), out of range"),
    "huge-coords": (_huge_coords, "row 3 is (1099511627776, 0), out of range"),
    "huge-patch-attribute": (_huge_patch_attr, "'patch_size' must be in [0, 65536]"),
    "window-count-mismatch": (_window_mismatch, "window_features has W=4"),
    "group-not-dataset": (_group_not_dataset, "'coords' is a Group, not a dataset"),
}


def hostile_bag(kind: str, directory: str | os.PathLike[str]) -> tuple[Path, str]:
    """A bag of :data:`HOSTILE_BAGS` kind ``kind`` in ``directory``, and the words its
    refusal must hold."""
    edit, words = HOSTILE_BAGS[kind]
    path = write_bag(Path(directory) / f"{kind}.h5")
    with h5py.File(path, "r+") as f:
        edit(f, path)
    return path, words


def remove_deep_tree(top: str | os.PathLike[str]) -> None:
    """Remove a folder chain too deep for ``shutil.rmtree`` (which recurses once per level and
    paths longer than the system allows), going down by folder descriptors and back up."""
    fds = [os.open(top, os.O_RDONLY)]
    try:
        while True:  # down the chain: each folder holds at most one folder
            subdirs = [e.name for e in os.scandir(fds[-1]) if e.is_dir(follow_symlinks=False)]
            if not subdirs:
                break
            fds.append(os.open(subdirs[0], os.O_RDONLY, dir_fd=fds[-1]))
        while fds:  # back up: empty each folder, then remove it from its parent
            fd = fds.pop()
            for entry in os.scandir(fd):
                if entry.is_dir(follow_symlinks=False):
                    os.rmdir(entry.name, dir_fd=fd)
                else:
                    os.unlink(entry.name, dir_fd=fd)
            os.close(fd)
    finally:
        for fd in fds:
            os.close(fd)
    os.rmdir(top)
