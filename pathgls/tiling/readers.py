"""Slide readers: OpenSlide for WSIs, Pillow for plain images (ROIs).

Both satisfy :class:`SlideReader`. :func:`open_slide` picks one, probes that pixels can be
read, and turns every library failure into a :class:`~pathgls.errors.SlideError` that names
the file and what went wrong.
"""

from __future__ import annotations

import logging
import math
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from PIL import Image

from pathgls.config import DEFAULT_LEVEL_READ_PIXELS
from pathgls.errors import DamagedTileError, SlideOpenError, SlideReadError
from pathgls.io.names import printable
from pathgls.tiling.jpeg_tiles import JpegTiles

log = logging.getLogger(__name__)

#: Extensions OpenSlide reads (with openslide-bin ≥ 4, DICOM too).
WSI_EXTENSIONS = frozenset(
    {".svs", ".tif", ".tiff", ".ndpi", ".vms", ".vmu", ".scn", ".mrxs", ".svslide", ".bif", ".dcm"}
)
#: Extensions read as plain single-level images (ROIs).
IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp"})


@runtime_checkable
class SlideReader(Protocol):
    """What pathgls needs from a slide: geometry, resolution and RGB pixels."""

    path: str
    name: str
    #: Microns per pixel at level 0, or None when the file does not say.
    mpp: float | None
    #: Where ``mpp`` came from: metadata, objective, user, default or none.
    mpp_source: str
    #: Objective magnification of level 0 when known.
    objective: float | None

    @property
    def dimensions(self) -> tuple[int, int]: ...

    @property
    def level_count(self) -> int: ...

    @property
    def level_dimensions(self) -> tuple[tuple[int, int], ...]: ...

    @property
    def level_downsamples(self) -> tuple[float, ...]: ...

    def read_region(
        self, xy_level0: tuple[int, int], level: int, size: tuple[int, int]
    ) -> np.ndarray:
        """RGB uint8 array (H, W, 3) of ``size`` = (w, h) pixels at ``level``."""
        ...

    def thumbnail(self, max_size: int) -> np.ndarray:
        """RGB uint8 array whose longer side is at most ``max_size``."""
        ...

    def close(self) -> None: ...


def rgba_to_rgb(rgba: np.ndarray) -> np.ndarray:
    """Composite an RGBA uint8 array on white (transparent = outside the scanned area)."""
    rgb = rgba[..., :3]
    alpha = rgba[..., 3]
    if alpha.min() == 255:
        return np.ascontiguousarray(rgb)
    a = alpha[..., None].astype(np.uint16)
    out = (rgb.astype(np.uint16) * a + 255 * (255 - a) + 127) // 255
    return out.astype(np.uint8)


class OpenSlideReader:
    """Reader over ``openslide.OpenSlide`` (SVS, NDPI, MRXS, generic tiled TIFF, DICOM, ...)."""

    def __init__(self, path: str | Path, *, mpp: float | None = None) -> None:
        import openslide

        self.path = str(path)
        self.name = printable(Path(path).stem)  # a non-UTF-8 byte as \xNN
        try:
            self._slide = openslide.OpenSlide(self.path)
        except openslide.OpenSlideUnsupportedFormatError as e:
            raise SlideOpenError(
                f"{self.path}: not a slide format OpenSlide supports ({e or 'unsupported format'})",
                path=self.path,
            ) from e
        except (openslide.OpenSlideError, OSError) as e:
            raise SlideOpenError(
                f"{self.path}: OpenSlide cannot open it: {e}", path=self.path
            ) from e
        props = self._slide.properties
        self.objective = _float_or_none(props.get(openslide.PROPERTY_NAME_OBJECTIVE_POWER))
        meta_mpp = _float_or_none(props.get(openslide.PROPERTY_NAME_MPP_X))
        self.mpp, self.mpp_source = _resolve_mpp(
            user=mpp, metadata=meta_mpp, objective=self.objective
        )
        self.properties = dict(props)
        # the geometry is read once: after a failed read OpenSlide answers every later call,
        # these included, with that error ("Premature end of JPEG file")
        self._level_dimensions = tuple((int(w), int(h)) for w, h in self._slide.level_dimensions)
        self._level_downsamples = tuple(float(d) for d in self._slide.level_downsamples)
        self._scaled: dict[int, JpegTiles | None] = {}  # level → scaled JPEG reader, if usable
        self._scaled_lock = threading.Lock()

    @property
    def dimensions(self) -> tuple[int, int]:
        return self._level_dimensions[0]

    @property
    def level_count(self) -> int:
        return len(self._level_dimensions)

    @property
    def level_dimensions(self) -> tuple[tuple[int, int], ...]:
        return self._level_dimensions

    @property
    def level_downsamples(self) -> tuple[float, ...]:
        return self._level_downsamples

    def read_region(
        self, xy_level0: tuple[int, int], level: int, size: tuple[int, int]
    ) -> np.ndarray:
        import openslide

        try:
            region = self._slide.read_region((int(xy_level0[0]), int(xy_level0[1])), level, size)
        except openslide.OpenSlideError as e:
            raise SlideReadError(
                f"{self.path}: reading pixels failed at {xy_level0}, level {level}: {e}",
                path=self.path,
            ) from e
        return rgba_to_rgb(np.asarray(region))

    def read_region_scaled(
        self,
        xy_level0: tuple[int, int],
        level: int,
        size: tuple[int, int],
        factor: int,
        *,
        out: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """``read_region`` reduced ``factor``× by decoding JPEG tiles at reduced scale.

        Returns None where that is not possible (not a JPEG-tiled TIFF level, a request not
        aligned to ``factor``); the caller then reads through OpenSlide and resizes. A tile the
        strict decoder refuses is not handed to OpenSlide (which decodes damaged tiles without
        a word): :class:`~pathgls.errors.DamagedTileError` names the level and the tile. See
        :mod:`pathgls.tiling.jpeg_tiles` for the numerical difference to read + area filter.
        ``out`` (uint8, the reduced shape) receives the pixels when given.
        """
        tiles = self._scaled_level(level)
        if tiles is None:
            return None
        ds = self.level_downsamples[level]
        x, y = xy_level0[0] / ds, xy_level0[1] / ds
        if x != int(x) or y != int(y):
            return None
        shape = (size[1] // factor, size[0] // factor, 3)
        if out is not None and (out.shape != shape or out.dtype != np.uint8):
            raise SlideReadError(
                f"{self.path}: out must be uint8 {shape}, got {out.dtype} {out.shape}",
                path=self.path,
            )
        try:
            return tiles.read((int(x), int(y)), size, factor, out=out)
        except DamagedTileError as e:
            # never handed to OpenSlide, which decodes a damaged tile without a word
            index, column, row = e.tile or (-1, -1, -1)
            raise DamagedTileError(
                f"{self.path}: JPEG tile {index} (column {column}, row {row}) of level {level} "
                f"is damaged ({e.__cause__ or e}), read for the patch at level-0 {xy_level0}; "
                "the slide is refused: re-export or re-scan it (tiling.scaled_decode = false "
                "lets OpenSlide decode it as it can)",
                path=self.path,
                level=level,
                tile=e.tile,
            ) from e
        except (OSError, ValueError) as e:  # reading the file failed: OpenSlide reads it
            log.debug(
                "%s: own JPEG read failed at %s, level %d: %s", self.path, xy_level0, level, e
            )
            return None

    def _scaled_level(self, level: int) -> JpegTiles | None:
        with self._scaled_lock:
            if level not in self._scaled:
                ds = self.level_downsamples[level]

                def reference(xy: tuple[int, int], size: tuple[int, int]) -> np.ndarray:
                    return self.read_region((round(xy[0] * ds), round(xy[1] * ds)), level, size)

                self._scaled[level] = JpegTiles.probe(
                    self.path,
                    level_dimensions=self.level_dimensions[level],
                    vendor=self.properties.get("openslide.vendor"),
                    reference=reference,
                )
            return self._scaled[level]

    def thumbnail(self, max_size: int) -> np.ndarray:
        w, h = self.dimensions
        return read_downsampled(self, max(w, h) / max_size)

    @contextmanager
    def one_pass(self) -> Iterator[OpenSlideReader]:
        """A second handle on the file for a one-off pass (the mask thumbnail), closed on exit.

        OpenSlide keeps decoded tiles in a per-handle cache (32 MiB). A pass over a whole
        coarse level would leave it full of tiles that patch streaming never reads again, for
        the rest of the extraction: up to 32 MiB more resident memory on a large slide, none on
        a small one. The second handle's cache is disabled (each tile is read once) and freed.
        """
        import openslide

        other = OpenSlideReader(self.path, mpp=self.mpp)
        try:
            # OpenSlide < 4 has no settable cache: the handle's own, freed when it closes
            with suppress(AttributeError, openslide.OpenSlideVersionError):
                other._slide.set_cache(openslide.OpenSlideCache(0))
            yield other
        finally:
            other.close()

    def close(self) -> None:
        with self._scaled_lock:
            for tiles in self._scaled.values():
                if tiles is not None:
                    tiles.close()
            self._scaled.clear()
        self._slide.close()


class ImageReader:
    """A plain image (PNG, JPEG, flat TIFF) as a single-level slide; for ROIs."""

    mpp: float | None  # always set here; typed as SlideReader's
    objective: float | None

    def __init__(
        self, path: str | Path, *, mpp: float | None = None, default_mpp: float = 0.5
    ) -> None:
        self.path = str(path)
        self.name = printable(Path(path).stem)  # a non-UTF-8 byte as \xNN
        try:
            with Image.open(self.path) as im:
                im.load()
                tiff_mpp = _tiff_mpp(im)
                self._pixels = np.asarray(_to_rgb(im))
        except (OSError, ValueError, Image.DecompressionBombError) as e:
            raise SlideOpenError(
                f"{self.path}: cannot be read as an image: {e}", path=self.path
            ) from e
        self.objective = None
        if mpp is not None:
            self.mpp, self.mpp_source = float(mpp), "user"
        elif tiff_mpp is not None:
            self.mpp, self.mpp_source = tiff_mpp, "metadata"
        else:
            self.mpp, self.mpp_source = float(default_mpp), "default"
        self.properties: dict[str, str] = {}

    @classmethod
    def from_array(
        cls, rgb: np.ndarray, *, name: str, mpp: float, mpp_source: str = "user"
    ) -> ImageReader:
        """An in-memory RGB uint8 image as a reader (ROIs cut from slides, tests)."""
        self = cls.__new__(cls)
        self.path, self.name = f"<array:{name}>", name
        self._pixels = np.ascontiguousarray(rgb[..., :3].astype(np.uint8, copy=False))
        self.objective, self.properties = None, {}
        self.mpp, self.mpp_source = float(mpp), mpp_source
        return self

    @property
    def dimensions(self) -> tuple[int, int]:
        h, w = self._pixels.shape[:2]
        return (w, h)

    @property
    def level_count(self) -> int:
        return 1

    @property
    def level_dimensions(self) -> tuple[tuple[int, int], ...]:
        return (self.dimensions,)

    @property
    def level_downsamples(self) -> tuple[float, ...]:
        return (1.0,)

    def read_region(
        self, xy_level0: tuple[int, int], level: int, size: tuple[int, int]
    ) -> np.ndarray:
        if level != 0:
            raise SlideReadError(f"{self.path}: a plain image has only level 0", path=self.path)
        x, y = int(xy_level0[0]), int(xy_level0[1])
        w, h = int(size[0]), int(size[1])
        out = np.full((h, w, 3), 255, dtype=np.uint8)
        H, W = self._pixels.shape[:2]
        x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, W), min(y + h, H)
        if x1 > x0 and y1 > y0:
            out[y0 - y : y1 - y, x0 - x : x1 - x] = self._pixels[y0:y1, x0:x1]
        return out

    def thumbnail(self, max_size: int) -> np.ndarray:
        w, h = self.dimensions
        return read_downsampled(self, max(w, h) / max_size)

    def close(self) -> None:
        self._pixels = np.zeros((0, 0, 3), np.uint8)


def read_downsampled(
    reader: SlideReader,
    downsample: float,
    *,
    strip_pixels: int = 1 << 20,
    max_read_pixels: int = DEFAULT_LEVEL_READ_PIXELS,
) -> np.ndarray:
    """The whole slide at ``downsample`` (level-0 px per output px), memory flat in slide size.

    Reads the finest level that is not finer than needed, in strips, and resizes each strip, so
    a single-level 100k-pixel slide never has to fit in memory at full resolution. A reader
    with a ``one_pass()`` context (OpenSlide) is read through it, so the tiles of this pass do
    not stay in the reader's tile cache.

    Raises:
        SlideReadError: the level to read holds more than ``max_read_pixels`` pixels (a slide
            without a coarse enough level; ``tiling.max_level_read_pixels``), before a pixel is
            read.
    """
    level = best_level_for_downsample(reader.level_downsamples, max(float(downsample), 1.0))
    lw, lh = reader.level_dimensions[level]
    if lw * lh > max_read_pixels:
        raise SlideReadError(
            f"{reader.path}: a whole-slide pass would read level {level} in full ({lw}×{lh} = "
            f"{lw * lh:.3g} px), more than tiling.max_level_read_pixels = {max_read_pixels:.3g}; "
            "the slide has no coarser level: build a pyramid for it (e.g. `vips tiffsave in "
            "out.tif --tile --pyramid --compression jpeg`) or raise the setting",
            path=reader.path,
        )
    one_pass = getattr(reader, "one_pass", None)
    with one_pass() if one_pass is not None else nullcontext(reader) as source:
        return _read_downsampled(source, downsample, strip_pixels=strip_pixels)


def _read_downsampled(reader: SlideReader, downsample: float, *, strip_pixels: int) -> np.ndarray:
    downsample = max(float(downsample), 1.0)
    w0, h0 = reader.dimensions
    out_w, out_h = max(1, round(w0 / downsample)), max(1, round(h0 / downsample))
    level = best_level_for_downsample(reader.level_downsamples, downsample)
    ds = reader.level_downsamples[level]
    lw, lh = reader.level_dimensions[level]
    out = np.empty((out_h, out_w, 3), dtype=np.uint8)
    rows_per_strip = max(8, strip_pixels // max(lw, 1))  # ~4 MB of RGBA per read
    y_out = 0
    for ly in range(0, lh, rows_per_strip):
        lh_strip = min(rows_per_strip, lh - ly)
        region = reader.read_region((0, round(ly * ds)), level, (lw, lh_strip))
        y_end = (
            out_h if ly + lh_strip >= lh else min(out_h, round((ly + lh_strip) * ds / downsample))
        )
        rows = y_end - y_out
        if rows <= 0:
            continue
        im = Image.fromarray(region).resize((out_w, rows), Image.Resampling.BOX)
        out[y_out:y_end] = np.asarray(im)
        y_out = y_end
    return out


def best_level_for_downsample(level_downsamples: tuple[float, ...], downsample: float) -> int:
    """Index of the coarsest level whose downsample does not exceed ``downsample`` (1e-3 slack)."""
    best = 0
    for i, d in enumerate(level_downsamples):
        if d <= downsample * (1 + 1e-3) and d >= level_downsamples[best]:
            best = i
    return best


def _to_rgb(im: Image.Image) -> Image.Image:
    if im.mode == "RGB":
        return im
    if im.mode in ("RGBA", "LA", "P", "PA"):
        rgba = im.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    if im.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        arr = np.asarray(im, dtype=np.float64)
        hi = arr.max() or 1.0
        return Image.fromarray((arr / hi * 255).astype(np.uint8)).convert("RGB")
    return im.convert("RGB")


def _tiff_mpp(im: Image.Image) -> float | None:
    """µm/px from TIFF resolution tags, trusted only when the unit is centimetres."""
    tags = getattr(im, "tag_v2", None)
    if not tags:
        return None
    unit, xres = tags.get(296), tags.get(282)  # ResolutionUnit, XResolution
    try:
        if unit == 3 and xres and float(xres) > 0:
            return 1e4 / float(xres)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return None


def _float_or_none(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        f = float(value)
    except ValueError:
        return None
    return f if math.isfinite(f) and f > 0 else None


def _resolve_mpp(
    *, user: float | None, metadata: float | None, objective: float | None
) -> tuple[float | None, str]:
    from pathgls.config import MPP_AT_1X

    if user is not None:
        return float(user), "user"
    if metadata is not None:
        return metadata, "metadata"
    if objective is not None:
        warnings.warn(
            f"no mpp metadata; using {MPP_AT_1X / objective:.4g} µm/px "
            f"from objective power {objective:g}×",
            stacklevel=3,
        )
        return MPP_AT_1X / objective, "objective"
    return None, "none"
