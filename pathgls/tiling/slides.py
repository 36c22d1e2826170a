"""Finding slides on disk and opening them with the right reader."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

import numpy as np

from pathgls.config import DEFAULT_PIXELS_PER_BYTE
from pathgls.errors import NoSlidesFoundError, SlideError, SlideOpenError, SlideReadError
from pathgls.io.checksums import file_sha256
from pathgls.io.names import printable
from pathgls.io.walk import files_below
from pathgls.tiling.readers import (
    IMAGE_EXTENSIONS,
    WSI_EXTENSIONS,
    ImageReader,
    OpenSlideReader,
    SlideReader,
)

log = logging.getLogger(__name__)

#: Files next to slides that are never slides themselves.
_SIDECAR_SUFFIXES = frozenset(
    {".partial", ".h5", ".json", ".toml", ".log", ".txt", ".md", ".csv", ".tsv"}
)


def open_slide(
    path: str | os.PathLike[str],
    *,
    mpp: float | None = None,
    image_mpp: float = 0.5,
    probe: bool = True,
    max_pixels_per_byte: float = DEFAULT_PIXELS_PER_BYTE,
) -> SlideReader:
    """Open a WSI with OpenSlide, or a plain image as a single-level ROI.

    TIFF files OpenSlide does not recognise (flat, untiled TIFFs) are read with Pillow as plain
    images. With ``probe`` the coarsest level is read once so that a slide whose pixels cannot
    be decoded fails here, with a clear error, rather than halfway through extraction.

    Args:
        path: slide or image file (one file of a DICOM series is enough).
        mpp: µm/px at level 0 given by the user; overrides the file's metadata.
        image_mpp: µm/px assumed for plain images when ``mpp`` is None and the file says nothing.
        probe: read a small region to check that pixels decode.
        max_pixels_per_byte: a single-file slide declaring more level-0 pixels per byte of
            file is refused before any pixel is read (``tiling.max_pixels_per_byte``).

    Raises:
        SlideOpenError: not a file, empty, no reader can open it, or it declares far more
            pixels than its size can hold.
        SlideReadError: it opens but its pixels cannot be read.
    """
    p = Path(path)
    if not p.is_file():
        raise SlideOpenError(f"{p}: no such file", path=str(p))
    if p.stat().st_size == 0:
        raise SlideOpenError(f"{p}: the file is empty (0 bytes)", path=str(p))
    suffix = p.suffix.lower()
    reader: SlideReader
    if suffix in WSI_EXTENSIONS:
        try:
            reader = OpenSlideReader(p, mpp=mpp)
        except SlideOpenError as e:
            if suffix not in IMAGE_EXTENSIONS:
                raise
            try:
                reader = ImageReader(p, mpp=mpp, default_mpp=image_mpp)
            except SlideOpenError as e2:
                raise SlideOpenError(
                    f"{p}: neither OpenSlide nor Pillow can read it "
                    f"(OpenSlide: {e.__cause__ or e}; Pillow: {e2.__cause__ or e2})",
                    path=str(p),
                ) from e2
            warnings.warn(
                f"{p.name}: OpenSlide cannot open it; read as a plain image", stacklevel=2
            )
    elif suffix in IMAGE_EXTENSIONS:
        reader = ImageReader(p, mpp=mpp, default_mpp=image_mpp)
    else:
        raise SlideOpenError(
            f"{p}: unsupported file type {suffix or '(none)'}; expected one of "
            f"{', '.join(sorted(WSI_EXTENSIONS | IMAGE_EXTENSIONS))}",
            path=str(p),
        )
    _check_declared_size(reader, p, max_pixels_per_byte)
    if probe:
        _probe(reader)
    return reader


#: Formats whose pixels all live in the one file given (MRXS, VMS and DICOM keep them in other
#: files beside it, so their size says nothing).
_SINGLE_FILE = frozenset({".svs", ".tif", ".tiff", ".ndpi", ".scn", ".bif", ".svslide"})


def _check_declared_size(reader: SlideReader, path: Path, limit: float) -> None:
    """Refuse a slide whose level 0 declares more pixels than ``limit`` per byte of its file,
    or (a TIFF) whose tiles or strips lie outside it."""
    if path.suffix.lower() not in _SINGLE_FILE:
        return
    w, h = reader.dimensions
    size = path.stat().st_size
    problem = tiff_layout_problem(path, size) if isinstance(reader, OpenSlideReader) else None
    if problem:
        reader.close()
        raise SlideOpenError(
            f"{path}: {problem}; the file is damaged (or not what it says) and is not read",
            path=str(path),
        )
    if w * h > limit * size:
        reader.close()
        raise SlideOpenError(
            f"{path}: declares {w}×{h} px ({w * h:.3g}) in a {size}-byte file, more than "
            f"tiling.max_pixels_per_byte = {limit:g} per byte (real slides hold under 1000): "
            "damaged or not a real slide",
            path=str(path),
        )


def tiff_layout_problem(path: Path, size: int) -> str | None:
    """Why the tiles (or strips) of a TIFF-based slide cannot all be in the file, or None.

    A tile whose offset plus byte count lies beyond the file is damage or a lie; OpenSlide
    asked for a 2^60-byte tile aborts the whole process (GLib cannot allocate it), so such a
    slide is refused before any pixel is read. Files tifffile cannot parse are left to OpenSlide.
    """
    import tifffile

    try:
        with tifffile.TiffFile(str(path)) as tif:
            for index, page in enumerate(tif.pages):
                offsets = np.asarray(page.dataoffsets, dtype=np.uint64)
                counts = np.asarray(page.databytecounts, dtype=np.uint64)
                if not counts.size:
                    continue
                ends = offsets.astype(np.float64) + counts.astype(np.float64)
                worst = int(np.argmax(ends))
                if ends[worst] > size:
                    return (
                        f"directory {index} says its block {worst} is {int(counts[worst])} bytes "
                        f"at offset {int(offsets[worst])}, beyond the file's {size} bytes"
                    )
    except Exception:  # not a TIFF tifffile reads (a vendor variant): OpenSlide decides
        return None
    return None


def _probe(reader: SlideReader) -> None:
    level = reader.level_count - 1
    w, h = reader.level_dimensions[level]
    try:
        reader.read_region((0, 0), level, (min(w, 64), min(h, 64)))
    except SlideReadError:
        reader.close()
        raise
    except Exception as e:  # a decoder failing in an unexpected way is still a read error
        reader.close()
        raise SlideReadError(f"{reader.path}: reading pixels failed: {e}", path=reader.path) from e


def find_slides(path: str | os.PathLike[str]) -> list[Path]:
    """Slides under ``path`` (a file, or a directory searched recursively), sorted.

    A DICOM series (several ``.dcm`` files in one folder) is one slide, represented by its
    first file. Files that are clearly not slides (bags, logs, configs) are skipped, and so are
    hidden files (``.x.svs``, ``..png``, macOS ``._x.svs``): those with a slide or image
    extension are named in a warning.

    Raises:
        NoSlidesFoundError: the path does not exist or the directory holds no slide.
    """
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise NoSlidesFoundError(f"{p}: no such file or directory", path=str(p))
    known = WSI_EXTENSIONS | IMAGE_EXTENSIONS
    found: list[Path] = []
    hidden: list[Path] = []
    dicom_dirs: set[Path] = set()
    for f in files_below(p):  # no recursion: 2,100 nested folders are walked too
        suffix = f.suffix.lower()
        if f.name.startswith("."):  # ._x.svs (macOS resource forks), .x.png: not slides...
            if suffix in known and not f.name.endswith(".tmp"):
                hidden.append(f)  # ... but never skipped without saying so
            continue
        if suffix in _SIDECAR_SUFFIXES or suffix not in known:
            continue
        if suffix == ".dcm":
            if f.parent in dicom_dirs:
                continue
            dicom_dirs.add(f.parent)
        found.append(f)
    if hidden:
        shown = ", ".join(printable(str(h.relative_to(p))) for h in hidden[:10])
        more = f" and {len(hidden) - 10} more" if len(hidden) > 10 else ""
        log.warning(
            "%s: skipped %d hidden file(s) whose name starts with '.': %s%s (rename them to "
            "evaluate them)",
            p,
            len(hidden),
            shown,
            more,
        )
    if not found:
        extra = f"; {len(hidden)} hidden file(s) skipped" if hidden else ""
        raise NoSlidesFoundError(
            f"{p}: no slides found (looked for {', '.join(sorted(known))}){extra}", path=str(p)
        )
    return found


def slide_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a slide file (for a DICOM series, of the file given)."""
    try:
        return file_sha256(path)
    except OSError as e:
        raise SlideError(f"{path}: cannot read for hashing: {e}", path=str(path)) from e
