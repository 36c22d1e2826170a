"""One slide for one item: opened at most once, tiled at most once, read by one path.

A :class:`SlideSession` is what every stage of an item shares about its slide: the reader
(opened on first need, at most once, with the same ``mpp`` and ``image_mpp`` for every stage),
the slide's identity (hashed in full at most once), the read plan and tissue grid (loaded from
the run's patches file when the slide is unchanged, else computed once and saved there — see
:mod:`pathgls.features.patches`), and the one read-at-resolution path
(:func:`pathgls.tiling.stream.read_rect`) through which the bag's patches, the montage a subject
is shown and the regions grounding embeds are read. A rerun whose slide is unchanged touches no
pixel: the plan, the grid and the identity come from the patches file.

``stats`` counts what the session did (opens, pixel reads), ``timings`` how long it took, and
``notes`` what a card should say (a slide that changed since its patches were made, a patches
file that could not be used, a slide without resolution metadata).
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pathgls.config import TilingConfig
from pathgls.errors import BagError, GroundingError
from pathgls.features.bags import BagMeta, FeatureBag, read_bag, validate_bag
from pathgls.features.patches import (
    SlideTiling,
    patches_path_for,
    read_patches,
    tiling_json,
    write_patches,
)
from pathgls.io.rundir import make_dir
from pathgls.tiling.grid import make_grid
from pathgls.tiling.identity import FileIdentity, check_identity, file_identity
from pathgls.tiling.readers import SlideReader
from pathgls.tiling.resolution import ReadPlan, plan_read
from pathgls.tiling.slides import open_slide
from pathgls.tiling.stream import read_patch, read_rect

log = logging.getLogger(__name__)


@dataclass
class SessionStats:
    """What a session did to its slide."""

    opens: int = 0  # times the slide was opened (at most 1)
    patch_reads: int = 0  # patches read through the session (views)
    region_reads: int = 0  # regions read (grounding ROIs)
    thumbnails: int = 0  # thumbnails read
    full_hashes: int = 0  # times the whole file was hashed
    tiling_reused: bool = False  # the plan and grid came from the patches file

    @property
    def pixel_reads(self) -> int:
        """Reads of pixel data through the session (the bag's stream is counted apart)."""
        return self.patch_reads + self.region_reads + self.thumbnails


@dataclass
class SlideSession:
    """A slide as one item sees it; use as a context manager (closes the reader).

    Attributes:
        path: The slide file.
        tiling: The ``[tiling]`` section (plan, grid; ``image_mpp`` for plain images).
        mpp: Level-0 µm/px given by the user (overrides the file's metadata).
        out_dir: Run or extraction folder holding the patches file; None keeps nothing.
        name: File stem of the item's files (default: the slide's stem).
        verify: Hash the whole slide to check a stored patches file, even when its size,
            mtime and header are unchanged.
    """

    path: Path
    tiling_config: TilingConfig = field(default_factory=TilingConfig)
    mpp: float | None = None
    out_dir: Path | None = None
    name: str = ""
    verify: bool = False
    stats: SessionStats = field(default_factory=SessionStats)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _reader: SlideReader | None = field(default=None, repr=False)
    _identity: FileIdentity | None = field(default=None, repr=False)
    _tiling: SlideTiling | None = field(default=None, repr=False)
    _plan: ReadPlan | None = field(default=None, repr=False)
    _stored_checked: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.out_dir = None if self.out_dir is None else Path(self.out_dir)
        self.name = self.name or self.path.stem

    def __enter__(self) -> SlideSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the reader (a later need opens it again, counted)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    @contextmanager
    def _timed(self, key: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[key] = self.timings.get(key, 0.0) + time.perf_counter() - t0

    @property
    def reader(self) -> SlideReader:
        """The open slide (opened on first use).

        Raises:
            SlideError: it cannot be opened or its pixels cannot be decoded.
        """
        if self._reader is None:
            with self._timed("slide.open"), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._reader = open_slide(
                    self.path,
                    mpp=self.mpp,
                    image_mpp=self.tiling_config.image_mpp,
                    max_pixels_per_byte=self.tiling_config.max_pixels_per_byte,
                )
            self.stats.opens += 1
            self._note(str(w.message) for w in caught)
            if self._reader.mpp_source == "default":
                self._note(
                    [
                        f"no resolution metadata; assumed {self._reader.mpp:g} µm/px (pass --mpp "
                        "to set it)"
                    ]
                )
        return self._reader

    @property
    def dimensions(self) -> tuple[int, int]:
        """Level-0 ``(width, height)``: the tiling's when it is known (the slide is not opened
        for it), else the reader's.

        Raises:
            SlideError: the slide cannot be opened.
        """
        if self._tiling is not None:
            return self._tiling.dimensions
        w, h = self.reader.dimensions
        return int(w), int(h)

    # -- bags of this slide --------------------------------------------------------------------

    def validate_bag(self, bag: str | os.PathLike[str]) -> BagMeta:
        """Check a feature bag of this slide (:func:`~pathgls.features.bags.validate_bag`)
        with its coordinates required inside the slide: every stage that uses a bag with its
        slide checks it here, the one place the slide's size is given to the bag's checks.

        Raises:
            BagError: the bag is invalid, or a coordinate lies outside the slide.
        """
        return validate_bag(bag, slide_size=self.dimensions)

    def read_bag(self, bag: str | os.PathLike[str], *, windows: bool = True) -> FeatureBag:
        """Load a feature bag of this slide checked as :meth:`validate_bag` does.

        Raises:
            BagError: the bag is invalid, or a coordinate lies outside the slide.
        """
        return read_bag(bag, windows=windows, slide_size=self.dimensions)

    def _note(self, messages: Sequence[str] | Iterator[str]) -> None:
        for m in messages:
            if m not in self.notes:
                self.notes.append(m)

    # -- identity ----------------------------------------------------------------------------

    def identity(self) -> FileIdentity:
        """The slide's identity with its full SHA-256 (hashed at most once per session).

        Raises:
            SlideError: the file cannot be read.
        """
        if self._identity is None or not self._identity.sha256:
            with self._timed("slide.identity"):
                self._identity = file_identity(self.path, full=True)
            self.stats.full_hashes += 1
        return self._identity

    # -- plan and grid -------------------------------------------------------------------------

    @property
    def patches_path(self) -> Path | None:
        """The patches file of this slide (None without an ``out_dir``)."""
        if self.out_dir is None:
            return None
        return patches_path_for(self.out_dir, self.name, self.tiling_config)

    def plan(self) -> ReadPlan:
        """How a patch is read at the target resolution (no grid computed for it).

        Raises:
            MissingResolutionError: the slide has no mpp and none was given.
        """
        if self._tiling is not None:
            return self._tiling.plan
        if self._plan is None:
            stored = self._stored_tiling()
            if stored is not None:
                return stored.plan
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._plan = plan_read(self.reader, self.tiling_config)
            self._note(str(w.message) for w in caught)
        return self._plan

    def tiling(self) -> SlideTiling:
        """The read plan and tissue grid: from the patches file when the slide is unchanged,
        else computed (mask, grid, full hash) and saved there.

        Raises:
            SlideError, MissingResolutionError: the slide cannot be read or located in µm.
        """
        if self._tiling is not None:
            return self._tiling
        stored = self._stored_tiling()
        if stored is not None:
            self._tiling = stored
            return stored
        with self._timed("slide.tiling"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            grid = make_grid(self.reader, self.tiling_config, plan=self._plan)
        self._note(str(w.message) for w in caught)
        made = SlideTiling(
            grid=grid,
            identity=self.identity(),
            dimensions=tuple(self.reader.dimensions),  # type: ignore[arg-type]
            slide_name=self.reader.name,
            tiling_json=tiling_json(self.tiling_config),
            mpp_given=self.mpp,
        )
        self._save(made)
        self._tiling = made
        return made

    def _stored_tiling(self) -> SlideTiling | None:
        """The patches file's tiling when it exists, matches the settings and the slide."""
        path = self.patches_path
        if path is None or self._stored_checked or not path.is_file():
            return None
        self._stored_checked = True
        with self._timed("slide.tiling"):
            try:
                stored = read_patches(path)
            except BagError as e:
                self._note([f"patches file not used, recomputed: {e}"])
                return None
            if stored.tiling_json != tiling_json(self.tiling_config) or not _same_mpp(
                stored.mpp_given, self.mpp
            ):
                log.info("%s: made with other tiling settings or --mpp; recomputed", path)
                return None
            check = check_identity(self.path, stored.identity, verify=self.verify)
        if check.hashed:
            self.stats.full_hashes += 1
        if check.status == "changed":
            self._note(
                [
                    f"the slide changed since its patches were computed ({check.reason}); its "
                    "tiling, feature bags and scores are recomputed"
                ]
            )
            if check.current.sha256:
                self._identity = check.current
            return None
        stored = replace(stored, identity=check.current)
        if check.status == "touched":
            self._save(stored)  # the new mtime, so the next run needs no full hash
        self._identity = stored.identity
        self.stats.tiling_reused = True
        self._tiling = stored
        return stored

    def _save(self, tiling: SlideTiling) -> None:
        path, root = self.patches_path, self.out_dir
        if path is None or root is None:
            return
        try:
            # no folder on the way may be a link planted after the run's check (RunDirError)
            make_dir(root, *path.parent.relative_to(root).parts)
            write_patches(path, tiling)
        except OSError as e:  # the run goes on; the next one recomputes
            self._note([f"patches file {path} could not be written: {e}"])

    # -- pixels --------------------------------------------------------------------------------

    def read_patches(self, coords: np.ndarray, plan: ReadPlan) -> list[np.ndarray]:
        """Patches at level-0 ``coords`` read as the bag reads them (:func:`read_patch`)."""
        out = []
        for x, y in np.asarray(coords, dtype=np.int64).reshape(-1, 2):
            out.append(np.array(read_patch(self.reader, (int(x), int(y)), plan), dtype=np.uint8))
            self.stats.patch_reads += 1
        return out

    def read_region(self, *, x: int, y: int, width: int, height: int) -> tuple[np.ndarray, float]:
        """A level-0 rectangle at the target resolution, by the patches' path.

        Returns:
            ``(image, scale)``: RGB uint8 and the level-0 pixels per image pixel.

        Raises:
            GroundingError: the rectangle is empty or not inside the slide.
            MissingResolutionError: the slide has no mpp and none was given.
        """
        w0, h0 = self.reader.dimensions
        if width < 1 or height < 1 or x < 0 or y < 0 or x + width > w0 or y + height > h0:
            raise GroundingError(
                f"region x={x} y={y} {width}×{height} is not inside {self.path.name} ({w0}×{h0})"
            )
        image = read_rect(self.reader, (x, y), (width, height), self.plan())
        self.stats.region_reads += 1
        return image, width / image.shape[1]

    def thumbnail(self, max_size: int) -> np.ndarray:
        """The whole slide with its longer side at most ``max_size`` px."""
        self.stats.thumbnails += 1
        return self.reader.thumbnail(max_size)


def _same_mpp(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(np.isclose(a, b, rtol=1e-9, atol=0))


def bag_read_plan(meta: BagMeta, level_downsamples: Sequence[float]) -> ReadPlan:
    """The read plan a bag's patches were read with, from its attributes and the slide's levels.

    Raises:
        BagError: the bag's level does not exist in the slide, or its sizes do not fit it.
    """
    level = int(meta.patch_level)
    if not 0 <= level < len(level_downsamples):
        raise BagError(
            f"the bag was read at level {level}; the slide has {len(level_downsamples)} levels"
        )
    ds = float(level_downsamples[level])
    read_size = max(1, round(meta.patch_size_level0 / ds))
    if abs(read_size * ds - meta.patch_size_level0) > max(1.0, ds):
        raise BagError(
            f"the bag's patches ({meta.patch_size_level0} level-0 px) do not fit level {level} "
            f"of this slide (downsample {ds:g})"
        )
    return ReadPlan(
        level=level,
        read_size=read_size,
        patch_size=int(meta.patch_size),
        patch_size_level0=int(meta.patch_size_level0),
        level0_mpp=float(meta.level0_mpp),
        target_mpp=float(meta.target_mpp),
        mpp_source=meta.mpp_source,
        # "": a bag from before the filter was recorded, which resized with Lanczos
        resample="lanczos" if meta.resample in ("lanczos", "") else "area",
        scaled_decode=bool(meta.scaled_decode),
    )


def session_for(
    path: str | os.PathLike[str],
    *,
    tiling: TilingConfig | None = None,
    mpp: float | None = None,
) -> SlideSession:
    """A session that keeps nothing on disk (one-off commands: ground, views)."""
    return SlideSession(Path(path), tiling_config=tiling or TilingConfig(), mpp=mpp)
