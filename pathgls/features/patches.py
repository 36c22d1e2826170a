"""The patches file: a slide's read plan and tissue grid, computed once, kept apart from features.

TRIDENT keeps a slide's patch coordinates in ``<job>/<mag>x_<size>px_<overlap>px_overlap/
patches/<slide>_patches.h5`` and each encoder's features elsewhere; pathgls does the same, so
the tissue mask, the grid and the slide's full hash are computed once per slide and reused by
every encoder and every rerun::

    OUT/20x_512px_0px_overlap/patches/<slide>_patches.h5
      coords           (N, 2) int64    level-0 top-left (x, y), row-major; TRIDENT/CLAM attrs
                                       (patch_size, patch_size_level0, patch_level,
                                       level0_magnification, target_magnification, overlap, name)
      tissue_fraction  (N,)   float32  tissue fraction of each patch
      tissue_mask      (h, w) uint8    the tissue mask (1 = tissue); attrs downsample, threshold
      attrs            the read plan (level, read_size, patch_size, patch_size_level0,
                       level0_mpp, target_mpp, mpp_source, resample, scaled_decode), step_level0,
                       slide_width / slide_height, the slide's identity (slide_name, slide_size,
                       slide_mtime_ns, slide_header_sha256, slide_sha256), tiling_json (the
                       [tiling] section it was made with), mpp_given (0: none), format,
                       format_version, pathgls_version

The file is written whole to a temporary file and renamed, so it is either absent or complete.
A file made with another ``[tiling]`` section, another ``--mpp``, or from a slide whose identity
no longer matches is not used (the caller recomputes and replaces it); one that cannot be read
as this layout, is not self-contained or declares more than it stores (checked as a bag is,
before a byte is read: :func:`~pathgls.features.bag_checks.check_storage`), or whose
coordinates lie outside the slide it records is refused with :class:`~pathgls.errors.BagError`
naming what is wrong.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from pathgls.config import TilingConfig, config_to_dict
from pathgls.errors import BagError
from pathgls.features.bag_checks import check_coords, check_storage
from pathgls.io.atomic import write_via
from pathgls.tiling.grid import PatchGrid
from pathgls.tiling.identity import FileIdentity
from pathgls.tiling.resolution import ReadPlan
from pathgls.tiling.tissue import TissueMask
from pathgls.version import __version__

FORMAT = "pathgls-patches"
FORMAT_VERSION = 1
SUFFIX = "_patches.h5"


@dataclass(frozen=True)
class SlideTiling:
    """A slide's read plan and tissue grid, with the identity of the file they were made from.

    Attributes:
        grid: Coordinates, tissue fractions, read plan, tissue mask.
        identity: The slide's identity (its full ``sha256`` included).
        dimensions: Level-0 ``(width, height)``.
        slide_name: The slide's name (file stem).
        tiling_json: The ``[tiling]`` section it was made with (canonical JSON).
        mpp_given: Level-0 µm/px the user gave, or None.
    """

    grid: PatchGrid
    identity: FileIdentity
    dimensions: tuple[int, int]
    slide_name: str
    tiling_json: str
    mpp_given: float | None

    @property
    def plan(self) -> ReadPlan:
        """How a patch is read."""
        return self.grid.plan


def tiling_json(config: TilingConfig) -> str:
    """The ``[tiling]`` section as canonical JSON (what a patches file records)."""
    return json.dumps(config_to_dict(config), sort_keys=True)


def patches_dir_name(config: TilingConfig) -> str:
    """TRIDENT's folder name of a tiling: ``20x_512px_0px_overlap``."""
    return f"{config.magnification:g}x_{config.patch_size}px_{config.overlap}px_overlap"


def patches_path_for(
    out_dir: str | os.PathLike[str], slide_name: str, config: TilingConfig
) -> Path:
    """Where the patches file of ``slide_name`` lives under ``out_dir``."""
    return Path(out_dir) / patches_dir_name(config) / "patches" / f"{slide_name}{SUFFIX}"


def write_patches(path: str | os.PathLike[str], tiling: SlideTiling) -> Path:
    """Write a patches file atomically (a temporary file renamed over ``path``).

    Raises:
        OSError: the folder cannot be written.
    """
    grid, plan, ident = tiling.grid, tiling.plan, tiling.identity
    if not ident.sha256:
        raise BagError(f"{path}: a patches file needs the slide's full SHA-256")

    def write(tmp: Path) -> None:
        with h5py.File(tmp, "w") as f:
            coords = f.create_dataset("coords", data=np.asarray(grid.coords, dtype=np.int64))
            coords.attrs.update(
                {
                    "patch_size": plan.patch_size,
                    "patch_size_level0": plan.patch_size_level0,
                    "patch_level": plan.level,
                    "level0_magnification": plan.level0_magnification,
                    "target_magnification": plan.target_magnification,
                    "overlap": int(json.loads(tiling.tiling_json).get("overlap", 0)),
                    "name": tiling.slide_name,
                }
            )
            f.create_dataset(
                "tissue_fraction", data=np.asarray(grid.tissue_fraction, dtype=np.float32)
            )
            mask = f.create_dataset(
                "tissue_mask", data=np.asarray(grid.mask.mask, dtype=np.uint8), compression="gzip"
            )
            mask.attrs.update(
                {"downsample": float(grid.mask.downsample), "threshold": grid.mask.threshold}
            )
            f.attrs.update(
                {
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "pathgls_version": __version__,
                    "level": plan.level,
                    "read_size": plan.read_size,
                    "patch_size": plan.patch_size,
                    "patch_size_level0": plan.patch_size_level0,
                    "level0_mpp": plan.level0_mpp,
                    "target_mpp": plan.target_mpp,
                    "mpp_source": plan.mpp_source,
                    "resample": plan.resample,
                    "scaled_decode": plan.scaled_decode,
                    "step_level0": grid.step_level0,
                    "slide_width": tiling.dimensions[0],
                    "slide_height": tiling.dimensions[1],
                    "slide_name": tiling.slide_name,
                    "slide_size": ident.size,
                    "slide_mtime_ns": ident.mtime_ns,
                    "slide_header_sha256": ident.header_sha256,
                    "slide_sha256": ident.sha256,
                    "tiling_json": tiling.tiling_json,
                    "mpp_given": float(tiling.mpp_given or 0.0),
                }
            )

    return write_via(path, write)


#: The datasets of a patches file and the numpy dtype kinds each may hold (checked as a bag's
#: are: :func:`~pathgls.features.bag_checks.check_storage`).
_DATASETS = {"coords": "iu", "tissue_fraction": "f", "tissue_mask": "iub"}

#: File attributes and the Python type each must have.
_ATTRS: dict[str, type] = {
    "format": str,
    "format_version": int,
    "level": int,
    "read_size": int,
    "patch_size": int,
    "patch_size_level0": int,
    "level0_mpp": float,
    "target_mpp": float,
    "mpp_source": str,
    "resample": str,
    "scaled_decode": bool,
    "step_level0": int,
    "slide_width": int,
    "slide_height": int,
    "slide_name": str,
    "slide_size": int,
    "slide_mtime_ns": int,
    "slide_header_sha256": str,
    "slide_sha256": str,
    "tiling_json": str,
    "mpp_given": float,
}
_POSITIVE = ("read_size", "patch_size", "patch_size_level0", "level0_mpp", "target_mpp")


def _attr(p: Path, attrs: Any, key: str, kind: type) -> Any:
    if key not in attrs:
        raise BagError(f"{p}: patches file attribute {key!r} is missing")
    value = attrs[key]
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    ok = {
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, int | float) and not isinstance(value, bool),
        str: isinstance(value, str),
        bool: isinstance(value, bool | int) and value in (0, 1),
    }[kind]
    if not ok or (kind is float and not math.isfinite(value)):
        raise BagError(f"{p}: patches file attribute {key!r} must be {kind.__name__}: {value!r}")
    value = kind(value)
    if key in _POSITIVE and value <= 0:
        raise BagError(f"{p}: patches file attribute {key!r} must be > 0, got {value!r}")
    return value


def read_patches(path: str | os.PathLike[str]) -> SlideTiling:
    """Read and check a patches file.

    Raises:
        BagError: not a patches file of this layout, or datasets of the wrong shape or type.
    """
    p = Path(path)
    try:
        with h5py.File(p, "r") as f:
            a = {k: _attr(p, f.attrs, k, t) for k, t in _ATTRS.items()}
            if a["format"] != FORMAT or a["format_version"] != FORMAT_VERSION:
                raise BagError(
                    f"{p}: not a {FORMAT} file of version {FORMAT_VERSION} "
                    f"({a['format']!r} version {a['format_version']})"
                )
            check_storage(f, p, datasets=_DATASETS)  # as a bag's: before a byte is read
            coords = np.asarray(f["coords"][:])
            fractions = np.asarray(f["tissue_fraction"][:])
            mask_ds = f["tissue_mask"]
            mask = np.asarray(mask_ds[:])
            downsample = _attr(p, mask_ds.attrs, "downsample", float)
            threshold = _attr(p, mask_ds.attrs, "threshold", float)
    except OSError as e:
        raise BagError(f"{p}: cannot be opened as HDF5: {e}") from e
    n = coords.shape[0] if coords.ndim == 2 else -1
    if coords.ndim != 2 or coords.shape[1] != 2 or not np.issubdtype(coords.dtype, np.integer):
        raise BagError(f"{p}: coords must be (N, 2) integers, got {coords.shape} {coords.dtype}")
    if fractions.shape != (n,) or not np.isfinite(fractions).all():
        raise BagError(f"{p}: tissue_fraction must be (N,) finite numbers, got {fractions.shape}")
    if mask.ndim != 2 or downsample <= 0:
        raise BagError(f"{p}: tissue_mask must be a 2-D mask with a downsample > 0")
    check_coords(coords, p, slide_size=(a["slide_width"], a["slide_height"]))
    plan = ReadPlan(
        level=a["level"],
        read_size=a["read_size"],
        patch_size=a["patch_size"],
        patch_size_level0=a["patch_size_level0"],
        level0_mpp=a["level0_mpp"],
        target_mpp=a["target_mpp"],
        mpp_source=a["mpp_source"],
        resample=a["resample"],
        scaled_decode=a["scaled_decode"],
    )
    grid = PatchGrid(
        coords=np.ascontiguousarray(coords, dtype=np.int64),
        tissue_fraction=fractions.astype(np.float32),
        plan=plan,
        mask=TissueMask(mask.astype(bool), downsample, threshold),
        step_level0=a["step_level0"],
    )
    identity = FileIdentity(
        size=a["slide_size"],
        mtime_ns=a["slide_mtime_ns"],
        header_sha256=a["slide_header_sha256"],
        sha256=a["slide_sha256"],
    )
    return SlideTiling(
        grid=grid,
        identity=identity,
        dimensions=(a["slide_width"], a["slide_height"]),
        slide_name=a["slide_name"],
        tiling_json=a["tiling_json"],
        mpp_given=a["mpp_given"] or None,
    )
