"""Synthetic Aperio-style pyramids built from real pixels, for tests and benchmarks.

:func:`write_aperio_pyramid` writes a tiled, multi-level TIFF that OpenSlide opens with its
Aperio driver, so ``openslide.mpp-x`` and ``openslide.objective-power`` are set. The pixels
come from a *source*: an RGB array, or a callable ``source(x, y, w, h)`` that returns level-0
pixels of a region, so a 60k × 60k slide never exists in memory. :func:`upsampled_source`
serves a real image magnified by an integer factor (e.g. a 20× region as "40×") and
:func:`tiled_source` repeats a real image to any size.

What OpenSlide's Aperio driver needs (``src/openslide-vendor-aperio.c``):

- the first directory is tiled and its ImageDescription starts with ``Aperio``; the text after
  the first ``|`` is ``key = value`` pairs separated by ``|``, exposed as ``aperio.<key>``;
  ``MPP`` becomes ``openslide.mpp-x``/``-y`` and ``AppMag`` ``openslide.objective-power``;
- every tiled directory is a pyramid level, in file order; a stripped directory at index 1 is
  the ``thumbnail`` associated image;
- JPEG tiles are decoded in the colour space that PhotometricInterpretation names (YCbCr or
  RGB), so the tag must match what the encoder wrote. Tiles here are JPEG YCbCr with 2 × 2
  chroma subsampling (PhotometricInterpretation = YCbCr), as Aperio scanners write them;
  ``subsampling=(1, 1)`` keeps full chroma (about a third of the error on busy H&E texture).

Memory is flat in the slide's height and linear in its width only through one tile-high strip
per level (about ``3 × tile_size × width`` bytes in all, 46 MB for a 60k-wide slide with
256 px tiles): level-0 tiles are made on demand, each is encoded and box-reduced into the
strip of the next level, and a full strip is tiled, encoded and reduced in turn. The encoded
lower levels wait in temporary files (next to the output) until level 0 is written.
"""

from __future__ import annotations

import importlib.util
import io
import os
import tempfile
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np
from PIL import Image

#: ``source(x, y, w, h) -> (h, w, 3) uint8`` level-0 pixels of a region.
RegionSource = Callable[[int, int, int, int], np.ndarray]
Compression = Literal["jpeg", "deflate"]

#: The thumbnail directory's longer side is at most this many pixels.
THUMBNAIL_MAX = 1024
#: Bytes of encoded tiles (and their reductions) kept for sources with ``region_key``.
TILE_CACHE_BYTES = 128 << 20
_DESCRIPTION_HEAD = "Aperio Image Library pathgls"

__all__ = [
    "RegionSource",
    "TiledSource",
    "UpsampledSource",
    "tiled_source",
    "upsampled_source",
    "write_aperio_pyramid",
    "write_mosaic_40x",
]


@dataclass(frozen=True, eq=False)
class UpsampledSource:
    """A real RGB image magnified by an integer factor, served by region.

    ``nearest`` repeats each pixel ``factor × factor`` times (exact, blocky); ``bilinear``
    interpolates between pixel centres (``(X + 0.5) / factor - 0.5``, edges clamped), which
    looks like a finer scan of the same tissue. Neither adds detail.
    """

    rgb: np.ndarray
    factor: int
    mode: Literal["nearest", "bilinear"] = "bilinear"

    @property
    def width(self) -> int:
        """Width of the magnified image in pixels."""
        return self.rgb.shape[1] * self.factor

    @property
    def height(self) -> int:
        """Height of the magnified image in pixels."""
        return self.rgb.shape[0] * self.factor

    def __call__(self, x: int, y: int, w: int, h: int) -> np.ndarray:
        if x < 0 or y < 0 or x + w > self.width or y + h > self.height:
            raise ValueError(
                f"region ({x}, {y}, {w}, {h}) is outside the {self.width}×{self.height} image"
            )
        f = self.factor
        if self.mode == "nearest":
            sub = self.rgb[y // f : (y + h - 1) // f + 1, x // f : (x + w - 1) // f + 1]
            big = np.repeat(np.repeat(sub, f, axis=0), f, axis=1)
            return np.ascontiguousarray(big[y % f : y % f + h, x % f : x % f + w])
        r0, r1, ty = _bilinear_axis(y, h, f, self.rgb.shape[0])
        c0, c1, tx = _bilinear_axis(x, w, f, self.rgb.shape[1])
        lo_r, hi_r = int(r0.min()), int(r1.max()) + 1
        lo_c, hi_c = int(c0.min()), int(c1.max()) + 1
        sub = self.rgb[lo_r:hi_r, lo_c:hi_c].astype(np.float32)
        rows = sub[r0 - lo_r] * (1 - ty)[:, None, None] + sub[r1 - lo_r] * ty[:, None, None]
        out = rows[:, c0 - lo_c] * (1 - tx)[None, :, None] + rows[:, c1 - lo_c] * tx[None, :, None]
        return np.clip(out + 0.5, 0, 255).astype(np.uint8)


@dataclass(frozen=True, eq=False)
class TiledSource:
    """A real RGB image repeated without end (``block`` is one period).

    Regions with the same position modulo the period have the same pixels, which
    :meth:`region_key` tells the writer so it encodes each distinct tile once.
    """

    block: np.ndarray

    def region_key(self, x: int, y: int, w: int, h: int) -> Hashable:
        """A key equal for any two regions with identical pixels."""
        ph, pw = self.block.shape[:2]
        return (x % pw, y % ph, w, h)

    def __call__(self, x: int, y: int, w: int, h: int) -> np.ndarray:
        ph, pw = self.block.shape[:2]
        out = np.empty((h, w, 3), dtype=np.uint8)
        yy = 0
        while yy < h:
            sy = (y + yy) % ph
            dh = min(ph - sy, h - yy)
            xx = 0
            while xx < w:
                sx = (x + xx) % pw
                dw = min(pw - sx, w - xx)
                out[yy : yy + dh, xx : xx + dw] = self.block[sy : sy + dh, sx : sx + dw]
                xx += dw
            yy += dh
        return out


def upsampled_source(
    rgb: np.ndarray, *, factor: int, mode: Literal["nearest", "bilinear"] = "bilinear"
) -> UpsampledSource:
    """A source serving ``rgb`` magnified ``factor`` times (see :class:`UpsampledSource`).

    Args:
        rgb: real image, (H, W, 3) uint8.
        factor: integer magnification, ≥ 1 (2 turns 0.5 µm/px into 0.25 µm/px).
        mode: ``bilinear`` (default) or ``nearest``.

    Raises:
        ValueError: the image is not RGB uint8, or the factor or mode is invalid.
    """
    arr = _check_rgb(rgb, "rgb")
    if int(factor) != factor or factor < 1:
        raise ValueError(f"factor must be a positive integer, got {factor!r}")
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"mode must be 'nearest' or 'bilinear', got {mode!r}")
    return UpsampledSource(rgb=arr, factor=int(factor), mode=mode)


def tiled_source(rgb: np.ndarray, *, tile: int | None = None, mirror: bool = True) -> TiledSource:
    """A source that fills any size by repeating the real image ``rgb``.

    Args:
        rgb: real image, (H, W, 3) uint8.
        tile: when given, ``rgb`` is first cropped (centred) to a multiple of ``tile`` on each
            side, so its repeats line up with a pyramid tile grid of that size (pass the
            writer's ``tile_size``): identical tiles are then encoded once, which makes huge
            slides fast to write.
        mirror: repeat as alternating mirror images (seamless tissue) instead of plain copies.

    Raises:
        ValueError: the image is not RGB uint8, or smaller than one ``tile``.
    """
    arr = _check_rgb(rgb, "rgb")
    if tile is not None:
        if tile < 1:
            raise ValueError(f"tile must be >= 1, got {tile}")
        h, w = (arr.shape[0] // tile) * tile, (arr.shape[1] // tile) * tile
        if h == 0 or w == 0:
            raise ValueError(
                f"image {arr.shape[1]}×{arr.shape[0]} is smaller than one {tile} px tile"
            )
        y0, x0 = (arr.shape[0] - h) // 2, (arr.shape[1] - w) // 2
        arr = arr[y0 : y0 + h, x0 : x0 + w]
    if mirror:
        arr = np.concatenate([arr, arr[:, ::-1]], axis=1)
        arr = np.concatenate([arr, arr[::-1]], axis=0)
    return TiledSource(block=np.ascontiguousarray(arr))


def write_aperio_pyramid(
    path: str | os.PathLike[str],
    *,
    source: np.ndarray | RegionSource,
    width: int,
    height: int,
    mpp: float,
    magnification: float,
    tile_size: int = 256,
    levels_down: int | None = None,
    min_size: int = 512,
    level_factor: int = 2,
    compression: Compression = "jpeg",
    quality: int = 90,
    subsampling: tuple[int, int] = (2, 2),
    thumbnail: bool = True,
    extra_properties: Mapping[str, str] | None = None,
    bigtiff: bool | None = None,
    workers: int = 2,
) -> Path:
    """Write an Aperio-style pyramidal TIFF (``.svs``) that OpenSlide opens.

    Level 0 is ``width × height`` pixels at ``mpp`` µm/px; each further level is reduced by
    ``level_factor`` with area averaging (edge blocks averaged with their replicated edge),
    until the longer side is at most ``min_size`` or ``levels_down`` levels exist below
    level 0. A stripped thumbnail (longer side ≤ 1024) follows level 0, as in real SVS files.
    The file is written under a temporary name and renamed when complete.

    Args:
        path: output file (``.svs`` by convention); its directory must exist.
        source: (height, width, 3) uint8 array, or callable ``source(x, y, w, h)`` returning
            level-0 pixels of that region as (h, w, 3) uint8. A callable may also have
            ``region_key(x, y, w, h)`` returning a key equal for regions with equal pixels;
            tiles with a known key are then encoded once.
        width: level-0 width in pixels.
        height: level-0 height in pixels.
        mpp: microns per pixel at level 0 (written as ``MPP``).
        magnification: objective power at level 0 (written as ``AppMag``).
        tile_size: tile side in pixels; a multiple of 16 (JPEG 2 × 2 chroma blocks).
        levels_down: number of levels below level 0; None: reduce until ``min_size``.
        min_size: with ``levels_down`` None, stop once the longer side is at most this.
        level_factor: downsample between consecutive levels (2 or 4; Aperio uses 4).
        compression: ``jpeg`` (YCbCr, see ``subsampling``) or ``deflate`` (lossless, exact).
            Uncompressed tiles are not offered: OpenSlide 4.0 (libtiff) fails on them once the
            uncompressed thumbnail has been read.
        quality: JPEG quality, 1–100.
        subsampling: JPEG chroma subsampling, (2, 2) like Aperio, (2, 1) or (1, 1) (none).
        thumbnail: write the stripped thumbnail directory.
        extra_properties: more ``key = value`` pairs for the ImageDescription (OpenSlide shows
            them as ``aperio.<key>``), e.g. where the pixels came from.
        bigtiff: write BigTIFF; None: when the uncompressed pyramid would exceed 4 GiB.
        workers: threads that make, encode and reduce tiles.

    Returns:
        The path written.

    Raises:
        ValueError: an argument is invalid, or the source returns pixels of the wrong shape.
        ModuleNotFoundError: ``compression="jpeg"`` without imagecodecs (the dev extra).
    """
    import tifffile

    out = Path(path)
    spec = _Spec.build(
        width=width, height=height, tile=tile_size, factor=level_factor, levels_down=levels_down,
        min_size=min_size, compression=compression, quality=quality, subsampling=subsampling,
        thumbnail=thumbnail,
    )  # fmt: skip
    if not (mpp > 0 and magnification > 0):
        raise ValueError(f"mpp and magnification must be > 0, got {mpp} and {magnification}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if compression == "jpeg" and importlib.util.find_spec("imagecodecs") is None:
        # not a runtime dependency of pathgls: the dev extra installs it
        raise ModuleNotFoundError(
            "a JPEG pyramid needs imagecodecs, through which tifffile writes JPEG TIFFs "
            "(pip install 'pathgls[dev]'); compression='deflate' needs nothing more",
            name="imagecodecs",
        )
    region = _as_region_source(source, width, height)
    if bigtiff is None:
        bigtiff = width * height * 3 * 4 // 3 >= 2**32
    desc0 = _description(spec, mpp, magnification, out.stem, extra_properties)
    partial = out.with_name(out.name + ".partial")
    try:
        with (
            _PyramidBuilder(spec, region, out.parent, workers) as builder,
            tifffile.TiffWriter(partial, bigtiff=bigtiff) as tif,
        ):
            for level, (lw, lh) in enumerate(spec.dims[: spec.n_written + 1]):
                chunks = builder.level0_chunks() if level == 0 else builder.spilled_chunks(level)
                desc = desc0 if level == 0 else _level_description(spec, level)
                tif.write(
                    chunks, shape=(lh, lw, 3), dtype=np.uint8, tile=(spec.tile, spec.tile),
                    description=desc, **_tiff_args(spec, mpp * spec.factor**level),
                )  # fmt: skip
                if level == 0 and thumbnail:  # Aperio: the stripped thumbnail is directory 1
                    thumb = builder.thumbnail()
                    tw, th = thumb.shape[1], thumb.shape[0]
                    tif.write(
                        thumb, rowsperstrip=64,
                        description=f"{_DESCRIPTION_HEAD}\n{width}x{height} -> {tw}x{th} - "
                        f"|AppMag = {magnification:g}|MPP = {mpp:.6g}",
                        **_tiff_args(spec, mpp * width / tw),
                    )  # fmt: skip
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return out


# --- internals -----------------------------------------------------------------------------


#: JPEG chroma subsampling (horizontal, vertical) → Pillow's code: 4:4:4, 4:2:2, 4:2:0.
_PIL_SUBSAMPLING = {(1, 1): 0, (2, 1): 1, (2, 2): 2}


@dataclass(frozen=True)
class _Spec:
    """Validated geometry of the pyramid."""

    tile: int
    factor: int
    dims: tuple[tuple[int, int], ...]  # every level that is computed, level 0 first
    n_written: int  # levels 0..n_written are written
    thumb_level: int | None  # level whose full image is the thumbnail
    compression: Compression
    quality: int
    subsampling: tuple[int, int]

    @classmethod
    def build(
        cls, *, width: int, height: int, tile: int, factor: int, levels_down: int | None,
        min_size: int, compression: Compression, quality: int, subsampling: tuple[int, int],
        thumbnail: bool,
    ) -> _Spec:  # fmt: skip
        if width < 1 or height < 1:
            raise ValueError(f"width and height must be >= 1, got {width}×{height}")
        if tile < 16 or tile % 16:
            raise ValueError(f"tile_size must be a positive multiple of 16, got {tile}")
        if factor not in (2, 4):
            raise ValueError(f"level_factor must be 2 or 4, got {factor}")
        if levels_down is not None and not 0 <= levels_down <= 24:
            raise ValueError(f"levels_down must be in [0, 24] or None, got {levels_down}")
        if min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {min_size}")
        if compression not in ("jpeg", "deflate"):
            raise ValueError(f"compression must be 'jpeg' or 'deflate', got {compression!r}")
        if not 1 <= quality <= 100:
            raise ValueError(f"quality must be in [1, 100], got {quality}")
        subsampling = tuple(subsampling)  # type: ignore[assignment]
        if subsampling not in ((1, 1), (2, 1), (2, 2)):
            raise ValueError(f"subsampling must be (1, 1), (2, 1) or (2, 2), got {subsampling}")
        dims = [(width, height)]

        def more(k: int) -> bool:
            if levels_down is not None:
                return k < levels_down
            return max(dims[k]) > min_size and max(dims[k]) > 1

        while more(len(dims) - 1):
            w, h = dims[-1]
            dims.append((-(-w // factor), -(-h // factor)))
        n_written = len(dims) - 1
        thumb_level = None
        if thumbnail:
            k = 0
            while True:
                if k == len(dims):
                    w, h = dims[-1]
                    dims.append((-(-w // factor), -(-h // factor)))
                if max(dims[k]) <= THUMBNAIL_MAX:
                    break
                k += 1
            thumb_level = k
        return cls(
            tile, factor, tuple(dims), n_written, thumb_level, compression, quality, subsampling
        )

    @property
    def last(self) -> int:
        return len(self.dims) - 1

    def grid(self, level: int) -> tuple[int, int]:
        w, h = self.dims[level]
        return -(-w // self.tile), -(-h // self.tile)

    def encode(self, tile: np.ndarray) -> bytes:
        # Runtime dependencies only (Pillow's libjpeg-turbo, the standard zlib): the same bytes
        # as imagecodecs' jpeg8_encode and zlib_encode, which encoded the tiles before
        if self.compression == "jpeg":
            out = io.BytesIO()
            Image.fromarray(tile, "RGB").save(
                out,
                format="JPEG",
                quality=self.quality,
                subsampling=_PIL_SUBSAMPLING[self.subsampling],
            )
            return out.getvalue()
        return zlib.compress(np.ascontiguousarray(tile).tobytes(), 6)


class _TileCache:
    """Thread-safe LRU of (encoded bytes, reduced pixels) by content key, bounded in bytes."""

    def __init__(self, max_bytes: int) -> None:
        self._items: OrderedDict[Hashable, tuple[bytes | None, np.ndarray | None]] = OrderedDict()
        self._bytes, self._max = 0, max_bytes
        self._lock = threading.Lock()

    @staticmethod
    def _size(item: tuple[bytes | None, np.ndarray | None]) -> int:
        return len(item[0] or b"") + (item[1].nbytes if item[1] is not None else 0)

    def get(self, key: Hashable) -> tuple[bytes | None, np.ndarray | None] | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: Hashable, item: tuple[bytes | None, np.ndarray | None]) -> None:
        size = self._size(item)
        if size > self._max:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = item
            self._bytes += size
            while self._bytes > self._max:
                _, old = self._items.popitem(last=False)
                self._bytes -= self._size(old)


class _PyramidBuilder:
    """Makes every level's tiles in one pass over level 0 (see the module docstring)."""

    def __init__(self, spec: _Spec, source: RegionSource, tmp_dir: Path, workers: int) -> None:
        self.spec, self.source = spec, source
        self.key_fn: Callable[..., Hashable] | None = getattr(source, "region_key", None)
        t = spec.tile
        # strips[k]: one tile row of level k (k >= 1), filled by reducing level k - 1.
        self.strips: dict[int, np.ndarray] = {
            k: np.empty((t, spec.grid(k)[0] * t, 3), np.uint8) for k in range(1, spec.last + 1)
        }
        self.spill: dict[int, BinaryIO] = {
            k: tempfile.TemporaryFile(dir=tmp_dir, prefix=".pathgls-level-")  # noqa: SIM115
            for k in range(1, spec.n_written + 1)
        }
        self.spill_sizes: dict[int, list[int]] = {k: [] for k in self.spill}
        self.thumb: np.ndarray | None = None
        if spec.thumb_level is not None and spec.thumb_level > 0:
            w, h = spec.dims[spec.thumb_level]
            self.thumb = np.empty((h, w, 3), np.uint8)
        self.cache = _TileCache(TILE_CACHE_BYTES)
        self.pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
        self.level0_done = False

    def __enter__(self) -> _PyramidBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        for fh in self.spill.values():
            fh.close()

    # -- driving -------------------------------------------------------------------------------

    def level0_chunks(self) -> Iterator[bytes]:
        """Encoded level-0 tiles in row-major order; fills the lower levels on the way."""
        rows = self.spec.grid(0)[1]
        for ty in range(rows):
            encoded = self._row(0, ty)
            self._row_done(0, ty)
            # The writer stops pulling after the last tile: finish the work before yielding.
            self.level0_done = ty == rows - 1
            for chunk in encoded:
                assert chunk is not None  # level 0 is always written (n_written >= 0)
                yield chunk

    def spilled_chunks(self, level: int) -> Iterator[bytes]:
        """Encoded tiles of a lower level, read back in row-major order."""
        assert self.level0_done, "level 0 must be written first"
        fh = self.spill[level]
        fh.seek(0)
        for size in self.spill_sizes[level]:
            yield fh.read(size)

    def thumbnail(self) -> np.ndarray:
        """The full image of the thumbnail level (after level 0 is done)."""
        if self.spec.thumb_level == 0:
            w, h = self.spec.dims[0]
            return _checked(self.source(0, 0, w, h), 0, 0, w, h)
        assert self.thumb is not None and self.level0_done
        return self.thumb

    def _map(self, fn: Callable[[int], Any], n: int) -> list[Any]:
        if self.pool is None:
            return [fn(i) for i in range(n)]
        return list(self.pool.map(fn, range(n)))

    def _row(self, level: int, ty: int) -> list[bytes | None]:
        return self._map(lambda tx: self._tile(level, tx, ty), self.spec.grid(level)[0])

    def _row_done(self, level: int, ty: int) -> None:
        spec, nxt = self.spec, level + 1
        strip_full = ty % spec.factor == spec.factor - 1 or ty == spec.grid(level)[1] - 1
        if nxt > spec.last or not strip_full:
            return
        row = ty // spec.factor
        self._pad_strip(nxt, row)
        if nxt == spec.thumb_level and self.thumb is not None:
            y0 = row * spec.tile
            rows = min(spec.tile, self.thumb.shape[0] - y0)
            self.thumb[y0 : y0 + rows] = self.strips[nxt][:rows, : self.thumb.shape[1]]
        if nxt <= spec.n_written or nxt < spec.last:
            encoded = self._row(nxt, row)
            if nxt <= spec.n_written:
                for chunk in encoded:
                    assert chunk is not None
                    self.spill[nxt].write(chunk)
                    self.spill_sizes[nxt].append(len(chunk))
            self._row_done(nxt, row)

    def _pad_strip(self, level: int, row: int) -> None:
        """Replicate the last valid row/column of a strip into its padding."""
        w, h = self.spec.dims[level]
        strip = self.strips[level]
        valid = min(self.spec.tile, h - row * self.spec.tile)
        if valid < strip.shape[0]:
            strip[valid:] = strip[valid - 1]
        if w < strip.shape[1]:
            strip[:, w:] = strip[:, w - 1 : w]

    # -- one tile ------------------------------------------------------------------------------

    def _tile(self, level: int, tx: int, ty: int) -> bytes | None:
        spec, t = self.spec, self.spec.tile
        scale = spec.factor**level
        key = None
        if self.key_fn is not None:
            w0, h0 = spec.dims[0]
            x0, y0 = tx * t * scale, ty * t * scale
            sub = self.key_fn(x0, y0, min(t * scale, w0 - x0), min(t * scale, h0 - y0))
            key = None if sub is None else (level, sub)
        item = self.cache.get(key) if key is not None else None
        if item is None:
            pixels = self._pixels(level, tx, ty)
            encoded = spec.encode(pixels) if level <= spec.n_written else None
            reduced = None
            if level < spec.last:
                reduced = np.asarray(Image.fromarray(pixels).reduce(spec.factor))
            item = (encoded, reduced)
            if key is not None:
                self.cache.put(key, item)
        encoded, reduced = item
        if reduced is not None:
            r = t // spec.factor
            oy = (ty % spec.factor) * r
            self.strips[level + 1][oy : oy + r, tx * r : (tx + 1) * r] = reduced
        return encoded

    def _pixels(self, level: int, tx: int, ty: int) -> np.ndarray:
        t = self.spec.tile
        if level > 0:
            return np.ascontiguousarray(self.strips[level][:, tx * t : (tx + 1) * t])
        w0, h0 = self.spec.dims[0]
        x, y = tx * t, ty * t
        w, h = min(t, w0 - x), min(t, h0 - y)
        px = _checked(self.source(x, y, w, h), x, y, w, h)
        if (h, w) != (t, t):
            px = np.pad(px, ((0, t - h), (0, t - w), (0, 0)), mode="edge")
        return px


def write_mosaic_40x(
    path: str | os.PathLike[str], *, rgb: np.ndarray, size: int, level_factor: int = 2
) -> Path:
    """A ``size`` × ``size`` 40× (0.25 µm/px) Aperio pyramid of a real 20× image, for benchmarks.

    Level 0 is ``rgb`` upsampled 2× (nearest, so the real texture sits at the 40× scale) and
    tiled as a mirrored mosaic up to any slide size; JPEG tiles of 256 px, quality 90.
    ``level_factor=4`` writes 40×, 10×, 2.5×, ... — **no 20× level**, so 20× patches are 2×
    reductions of level 0, as on many scanners' files; 2 gives a native 20× level.
    """
    up = _check_rgb(rgb, "rgb").repeat(2, axis=0).repeat(2, axis=1)
    return write_aperio_pyramid(
        path,
        source=tiled_source(up, tile=256),
        width=size,
        height=size,
        mpp=0.25,
        magnification=40,
        level_factor=level_factor,
    )


def _checked(px: Any, x: int, y: int, w: int, h: int) -> np.ndarray:
    arr = np.asarray(px)
    if arr.shape != (h, w, 3) or arr.dtype != np.uint8:
        raise ValueError(
            f"source returned shape {arr.shape} {arr.dtype} for region x={x} y={y} w={w} h={h}; "
            f"expected ({h}, {w}, 3) uint8"
        )
    return np.ascontiguousarray(arr)


def _as_region_source(source: np.ndarray | RegionSource, width: int, height: int) -> RegionSource:
    if isinstance(source, np.ndarray):
        arr = _check_rgb(source, "source")
        if arr.shape[:2] != (height, width):
            raise ValueError(
                f"source array is {arr.shape[1]}×{arr.shape[0]} but the slide is {width}×{height}; "
                "use upsampled_source or tiled_source to change its size"
            )
        return lambda x, y, w, h: arr[y : y + h, x : x + w]
    if not callable(source):
        raise ValueError(f"source must be an RGB array or a callable, got {type(source).__name__}")
    sw, sh = getattr(source, "width", None), getattr(source, "height", None)
    if isinstance(sw, int) and isinstance(sh, int) and (width > sw or height > sh):
        raise ValueError(f"source serves {sw}×{sh} pixels, smaller than the slide {width}×{height}")
    return source


def _check_rgb(rgb: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8 or 0 in arr.shape:
        raise ValueError(
            f"{what} must be a non-empty (H, W, 3) uint8 array, got {arr.shape} {arr.dtype}"
        )
    return arr


def _bilinear_axis(start: int, n: int, factor: int, size: int) -> tuple[np.ndarray, ...]:
    """Source indices (i0, i1) and weights of ``n`` output pixels from ``start``."""
    s = (np.arange(start, start + n, dtype=np.float64) + 0.5) / factor - 0.5
    s = np.clip(s, 0, size - 1)
    i0 = np.floor(s).astype(np.intp)
    i1 = np.minimum(i0 + 1, size - 1)
    return i0, i1, (s - i0).astype(np.float32)


def _codec_label(spec: _Spec) -> str:
    if spec.compression == "jpeg":
        return f"JPEG/RGB Q={spec.quality}"
    return "Deflate"


def _clean(text: str) -> str:
    return " ".join(str(text).replace("|", "/").split())


def _description(
    spec: _Spec, mpp: float, mag: float, name: str, extra: Mapping[str, str] | None
) -> str:
    w, h = spec.dims[0]
    props = {"AppMag": f"{mag:g}", "MPP": f"{mpp:.6g}", "Filename": name}
    props["Generator"] = "pathgls.testing.synthetic"
    for k, v in (extra or {}).items():
        key = _clean(k).replace("=", "-")
        if not key or key in props:
            raise ValueError(f"extra property name {k!r} is empty or reserved")
        props[key] = _clean(v)
    head = f"{_DESCRIPTION_HEAD}\r\n{w}x{h} ({spec.tile}x{spec.tile}) {_codec_label(spec)}"
    return head + "".join(f"|{k} = {v}" for k, v in props.items())


def _level_description(spec: _Spec, level: int) -> str:
    (w, h), (lw, lh) = spec.dims[0], spec.dims[level]
    t = spec.tile
    return f"{_DESCRIPTION_HEAD}\r\n{w}x{h} ({t}x{t}) -> {lw}x{lh} {_codec_label(spec)}"


def _tiff_args(spec: _Spec, mpp: float) -> dict[str, Any]:
    args: dict[str, Any] = {
        "photometric": "rgb",
        "metadata": None,
        "software": "pathgls",
        "resolution": (1e4 / mpp, 1e4 / mpp),
        "resolutionunit": "CENTIMETER",
    }
    if spec.compression == "jpeg":
        args.update(compression="jpeg", subsampling=spec.subsampling)
        args["compressionargs"] = {"level": spec.quality}
    else:
        args["compression"] = "zlib"
    return args
