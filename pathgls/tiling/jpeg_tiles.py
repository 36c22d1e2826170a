"""Reduced-scale decoding of JPEG-tiled TIFF levels in the DCT domain.

A 40× slide without a 20× level is read at level 0 and reduced 2×. Decoding the full-size
JPEG tiles and then resizing spends most of its time on pixels that are thrown away; libjpeg
can instead run its inverse DCT at 1/2, 1/4 or 1/8 scale (Pillow's ``Image.draft``), which
decodes each 8×8 block straight into 4×4 (2×2, 1×1) pixels — a reduction close to an area
(box) filter, at a fraction of the cost. Patches read without resize (a slide with a native
20× level) are decoded here too, at full scale: OpenSlide's exact pixels (tested), without its
ARGB conversion and PIL round trip.

:class:`JpegTiles` reads the raw tiles of one TIFF level itself (``os.pread`` on the offsets
tifffile lists, so reader threads never share a file position), joins the level's shared
``JPEGTables`` to each abbreviated tile stream, and decodes it scaled. It is only used where
the file layout makes that exact: OpenSlide's ``aperio`` and ``generic-tiff`` formats, tiled
JPEG levels with RGB or YCbCr photometric interpretation. :meth:`JpegTiles.probe` checks each
level against OpenSlide's own pixels on one tile before it is trusted; anything else (JPEG 2000
SVS, NDPI, MRXS, DICOM, stripped TIFFs) returns ``None`` and the caller reads through
OpenSlide as before.

Tiles are decoded by libjpeg-turbo through ``simplejpeg`` (a thin wrapper that releases the GIL
and writes into a given buffer, 2–4× faster per tile than going through Pillow's Python JPEG
parser, which held the GIL for about half of each decode). Pillow's ``draft`` gives the same
pixels (tested) but is only used when asked for by name: it decodes a damaged tile that libjpeg
warns about ("Corrupt JPEG data") without a word, where OpenSlide and ``simplejpeg`` refuse it.

**Damaged tiles are refused.** ``simplejpeg`` treats libjpeg's warnings ("Corrupt JPEG data:
53 extraneous bytes before marker") as errors; OpenSlide does not, and decodes such a tile
into whatever the damaged stream gives. So a tile of a probed level that simplejpeg refuses is
not handed to OpenSlide (that gave a bag of garbage pixels, exit 0, no word): :meth:`JpegTiles.read`
raises :class:`~pathgls.errors.DamagedTileError` naming the tile (index, column, row), and the
reader adds the level and the level-0 place. The probe tries up to :data:`PROBE_TILES` tiles, so
a damaged first tile does not send the whole level to OpenSlide; a level none of whose tried
tiles decodes is read through OpenSlide with a warning that says so. A level whose tile offsets
or byte counts point outside the file (a 2^60-byte tile) is never decoded here. With
``tiling.scaled_decode = false`` pathgls does not decode tiles at all: OpenSlide alone decides.
An
RGB-coded level (TIFF photometric RGB, as Aperio writes) gets an Adobe APP14 marker with
transform 0, which tells libjpeg the components are R, G, B and not to convert them — what
OpenSlide does by setting the JPEG colour space itself.

Difference to OpenSlide + area filter, measured on the real CMU-1 region (``tests``): mean
absolute difference ≤ 0.1 grey levels at 1/2 scale; the bound tested is 1.0 mean and 12 at the
99.9th percentile (JPEG's own quantisation error is larger).
"""

from __future__ import annotations

import io
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image

from pathgls.errors import DamagedTileError

try:  # libjpeg-turbo without Pillow's Python marker parsing; Pillow's draft() otherwise
    import simplejpeg
except ImportError:  # pragma: no cover - simplejpeg is a declared dependency
    simplejpeg = None

log = logging.getLogger(__name__)

#: Reduction factors libjpeg decodes directly.
SCALES = (1, 2, 4, 8)
#: OpenSlide formats whose levels are plain TIFF directories with the level's pixels.
TIFF_VENDORS = frozenset({"aperio", "generic-tiff"})
_JPEG = 7  # TIFF Compression tag: JPEG ("new style")
_RGB, _YCBCR = 2, 6  # TIFF PhotometricInterpretation
#: Mean absolute difference (grey levels) to OpenSlide on the probe tile above which the fast
#: path is refused for a level (a colour-space or layout mismatch gives tens of levels).
PROBE_TOLERANCE = 2.0
#: Full tiles the probe tries before a level is given to OpenSlide (a damaged first tile).
PROBE_TILES = 4
#: Adobe APP14 marker, transform 0: the three components are R, G, B (no colour conversion).
_ADOBE_RGB = b"\xff\xee\x00\x0eAdobe\x00\x64\x00\x00\x00\x00\x00"
Decoder = Literal["simplejpeg", "pillow"]


def default_decoder() -> Decoder:
    """``simplejpeg`` when it is installed, else ``pillow``."""
    return "pillow" if simplejpeg is None else "simplejpeg"


@dataclass(frozen=True, eq=False)
class _Level:
    width: int
    height: int
    tile_w: int
    tile_h: int
    # (n_tiles,) int64 byte offsets and counts: 16 bytes a tile; tuples of Python ints took
    # ~72 (3.8 MiB traced for the 55k tiles of a 60k² level 0, 0.8 MiB as arrays)
    offsets: np.ndarray
    counts: np.ndarray
    tables: bytes
    # Pillow draft mode: "RGB" converts YCbCr to RGB; "YCbCr" keeps the components as coded,
    # which is what an RGB-coded JPEG (TIFF photometric RGB) needs.
    draft_mode: str

    @property
    def tiles_across(self) -> int:
        return -(-self.width // self.tile_w)


class JpegTiles:
    """Scaled reads of one JPEG-tiled TIFF level; thread-safe.

    Use :meth:`probe` to get one; :meth:`read` returns RGB uint8 pixels of a level region
    reduced by ``factor``. Decoded tiles are kept in a small LRU cache, so patches that share
    a tile (tiles not aligned with patches) decode it once.
    """

    def __init__(
        self,
        path: str | Path,
        level: _Level,
        *,
        cache_tiles: int = 128,
        decoder: Decoder | None = None,
    ) -> None:
        self.path = str(path)
        self._level = level
        self.decoder: Decoder = decoder or default_decoder()
        if self.decoder == "simplejpeg" and simplejpeg is None:
            raise ValueError("the simplejpeg decoder is not installed (pip install simplejpeg)")
        self._fd = os.open(self.path, os.O_RDONLY)
        self._cache: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self._cache_tiles = cache_tiles
        self._lock = threading.Lock()

    @classmethod
    def probe(
        cls,
        path: str | Path,
        *,
        level_dimensions: tuple[int, int],
        vendor: str | None,
        reference: Callable[[tuple[int, int], tuple[int, int]], np.ndarray],
        decoder: Decoder | None = None,
    ) -> JpegTiles | None:
        """The scaled reader of the TIFF level with these dimensions, or None if not usable.

        Args:
            path: the slide file.
            level_dimensions: (width, height) of the OpenSlide level to read.
            vendor: OpenSlide's ``openslide.vendor`` property.
            reference: reads ``size`` = (w, h) RGB pixels at level coordinates ``xy`` through
                OpenSlide; one tile is decoded both ways and must agree.
            decoder: ``simplejpeg`` or ``pillow`` (default: :func:`default_decoder`).
        """
        if vendor not in TIFF_VENDORS:
            return None
        try:
            level = _find_level(path, level_dimensions)
        except Exception as e:  # tifffile cannot parse what OpenSlide opened: not for us
            log.debug("%s: no scaled JPEG decoding (%s)", path, e)
            return None
        if level is None:
            return None
        # only a decoder as strict as OpenSlide's by default (see the module docstring); a
        # level simplejpeg refuses is read through OpenSlide
        strict: list[Decoder] = [] if simplejpeg is None else ["simplejpeg"]
        for name in [decoder] if decoder else strict:
            tiles = cls(path, level, decoder=name)
            try:
                agreement = tiles._agreement(reference)
            except Exception as e:
                log.warning(
                    "%s: pathgls's strict JPEG decoder (%s) refuses the %d×%d level (%s); it is "
                    "read through OpenSlide, which decodes damaged tiles without a word",
                    path,
                    name,
                    *level_dimensions,
                    e,
                )
                agreement = None
            if agreement is not None and agreement <= PROBE_TOLERANCE:
                return tiles
            tiles.close()
        return None

    def read(
        self,
        xy: tuple[int, int],
        size: tuple[int, int],
        factor: int,
        *,
        out: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """RGB uint8 ``(h // factor, w // factor, 3)`` of the level region at ``xy``, ``size``.

        Returns None when the request is not aligned to ``factor`` (the caller falls back).
        Pixels outside the level are white, as OpenSlide composites them. ``out``, when given,
        receives the pixels (it must have that shape and dtype) and is returned.
        """
        lv = self._level
        (x, y), (w, h) = xy, size
        f = int(factor)
        if (
            f not in SCALES
            or x % f
            or y % f
            or w % f
            or h % f
            or lv.tile_w % f
            or lv.tile_h % f
            or w <= 0
            or h <= 0
        ):
            return None
        shape = (h // f, w // f, 3)
        if out is None:
            out = np.empty(shape, dtype=np.uint8)
        elif out.shape != shape or out.dtype != np.uint8:
            raise ValueError(f"out must be uint8 {shape}, got {out.dtype} {out.shape}")
        x0, y0 = max(x, 0), max(y, 0)
        x1, y1 = min(x + w, lv.width), min(y + h, lv.height)
        if (x0, y0, x1, y1) != (x, y, x + w, y + h):
            out.fill(255)  # part of the request lies outside the level
        if x1 <= x0 or y1 <= y0:
            return out
        for ty in range(y0 // lv.tile_h, (y1 - 1) // lv.tile_h + 1):
            for tx in range(x0 // lv.tile_w, (x1 - 1) // lv.tile_w + 1):
                tile = self._tile(tx, ty, f)
                # the part of this tile inside the request and inside the level, in level px
                ax0, ay0 = max(tx * lv.tile_w, x0), max(ty * lv.tile_h, y0)
                ax1, ay1 = min((tx + 1) * lv.tile_w, x1), min((ty + 1) * lv.tile_h, y1)
                # round the level edge outwards: a partial last pixel is still drawn
                sx0, sy0 = (ax0 - tx * lv.tile_w) // f, (ay0 - ty * lv.tile_h) // f
                sx1 = -(-(ax1 - tx * lv.tile_w) // f)
                sy1 = -(-(ay1 - ty * lv.tile_h) // f)
                dx0, dy0 = (ax0 - x) // f, (ay0 - y) // f
                piece = tile[sy0:sy1, sx0:sx1]
                out[dy0 : dy0 + piece.shape[0], dx0 : dx0 + piece.shape[1]] = piece
        return out

    def close(self) -> None:
        """Close the file descriptor."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
                self._cache.clear()

    def _tile(self, tx: int, ty: int, factor: int) -> np.ndarray:
        key = (ty * self._level.tiles_across + tx, factor)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        try:
            tile = self._decode(key[0], factor)
        except (ValueError, OSError) as e:
            if isinstance(e, OSError) and e.errno:
                raise  # the file could not be read (I/O): not the tile's data
            raise DamagedTileError(
                f"{self.path}: JPEG tile {key[0]} (column {tx}, row {ty}) is damaged: {e}",
                path=self.path,
                tile=(key[0], tx, ty),
            ) from e
        with self._lock:
            self._cache[key] = tile
            if len(self._cache) > self._cache_tiles:
                self._cache.popitem(last=False)
        return tile

    def _decode(self, index: int, factor: int) -> np.ndarray:
        lv = self._level
        shape = (lv.tile_h // factor, lv.tile_w // factor, 3)
        count = int(lv.counts[index])
        if count == 0:  # a tile the scanner never wrote: background, as OpenSlide shows it
            return np.full(shape, 255, dtype=np.uint8)
        data = os.pread(self._fd, count, int(lv.offsets[index]))
        if self.decoder == "simplejpeg":
            arr = np.empty(shape, dtype=np.uint8)
            rgb_coded = lv.draft_mode == "YCbCr"  # TIFF photometric RGB: keep components as is
            head = b"\xff\xd8" + (_ADOBE_RGB if rgb_coded else b"")
            body = lv.tables[2:-2] if lv.tables else b""
            stream = head + body + (data[2:] if data[:2] == b"\xff\xd8" else data)
            arr = simplejpeg.decode_jpeg(
                stream,
                colorspace="RGB",
                min_factor=factor,
                min_height=shape[0],
                min_width=shape[1],
                buffer=arr,
            )
        else:
            if lv.tables and data[:2] == b"\xff\xd8":
                data = lv.tables[:-2] + data[2:]  # tables SOI..(no EOI) + tile after its SOI
            with Image.open(io.BytesIO(data)) as im:
                im.draft(lv.draft_mode, (lv.tile_w // factor, lv.tile_h // factor))
                arr = np.asarray(im)
        if arr.shape != shape:
            raise ValueError(f"tile {index} decoded to {arr.shape}, expected {shape}")
        return arr

    def _agreement(
        self, reference: Callable[[tuple[int, int], tuple[int, int]], np.ndarray]
    ) -> float | None:
        """Mean absolute difference to OpenSlide on the first written full tile that decodes
        (of the first :data:`PROBE_TILES`; a damaged tile is refused when it is read).

        Raises:
            ValueError, OSError: none of the tiles tried decodes (the last error).
        """
        lv = self._level
        failed: Exception | None = None
        tried = 0
        for index, count in enumerate(lv.counts):
            tx, ty = index % lv.tiles_across, index // lv.tiles_across
            x, y = tx * lv.tile_w, ty * lv.tile_h
            if count and x + lv.tile_w <= lv.width and y + lv.tile_h <= lv.height:
                tried += 1
                try:
                    mine = self._decode(index, 1).astype(np.int16)
                except (ValueError, OSError) as e:
                    failed = e
                    if tried >= PROBE_TILES:
                        break
                    continue
                theirs = reference((x, y), (lv.tile_w, lv.tile_h)).astype(np.int16)
                return float(np.abs(mine - theirs).mean())
        if failed is not None:
            raise failed
        return None


#: Largest tile accepted for decoding here, in bytes (a 512² RGB tile is 768 KiB uncompressed).
MAX_TILE_BYTES = 64 << 20


def _find_level(path: str | Path, dims: tuple[int, int]) -> _Level | None:
    """The tiled JPEG TIFF directory with these dimensions, as a :class:`_Level`.

    None when there is none, or when a tile's offset or byte count lies outside the file or
    exceeds :data:`MAX_TILE_BYTES` (a damaged or hostile file: OpenSlide reads it, or refuses).
    """
    import tifffile

    size = os.path.getsize(path)
    with tifffile.TiffFile(str(path)) as tif:
        for page in tif.pages:
            if not isinstance(page, tifffile.TiffPage):  # a TiffFrame only with useframes
                continue
            if (page.imagewidth, page.imagelength) != tuple(dims):
                continue
            if not page.is_tiled or page.compression != _JPEG or page.tiledepth != 1:
                return None
            if page.photometric not in (_RGB, _YCBCR) or page.samplesperpixel != 3:
                return None
            if page.planarconfig != 1:  # contiguous
                return None
            offsets = np.array(page.dataoffsets, dtype=np.uint64).astype(np.float64)
            counts = np.array(page.databytecounts, dtype=np.uint64).astype(np.float64)
            if counts.size and (counts.max() > MAX_TILE_BYTES or (offsets + counts).max() > size):
                log.warning(
                    "%s: a JPEG tile of the %d×%d level lies outside the file or is larger than "
                    "%d bytes; the level is read through OpenSlide",
                    path,
                    *dims,
                    MAX_TILE_BYTES,
                )
                return None
            return _Level(
                width=page.imagewidth,
                height=page.imagelength,
                tile_w=page.tilewidth,
                tile_h=page.tilelength,
                offsets=np.array(page.dataoffsets, dtype=np.int64),
                counts=np.array(page.databytecounts, dtype=np.int64),
                tables=bytes(page.jpegtables or b""),
                draft_mode="YCbCr" if page.photometric == _RGB else "RGB",
            )
    return None
