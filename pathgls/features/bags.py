"""HDF5 feature bags: schema, resumable atomic writer, validating reader.

One file per slide and encoder, readable by CLAM/TRIDENT-style loaders::

    features         (N, D)    float32  one view per patch, or the window mean (views=windows)
    coords           (N, 2)    int64    level-0 top-left (x, y)
    window_features  (N, W, D) float16  HighRes window embeddings (grounding uses these); only
                                        in bags with ``views="windows"``
    attrs: encoder, patch_size, patch_size_level0, target_magnification, target_mpp,
           level0_magnification, level0_mpp, window_size, window_stride, slide_name,
           slide_sha256, pathgls_version, complete, views, views_per_patch (+ provenance
           extras, and the slide's cheap identity: slide_size, slide_mtime_ns,
           slide_header_sha256)

``views`` says what was encoded: ``"patch"`` (one view of each whole patch, as CLAM and TRIDENT
make; no ``window_features``; window_size = window_stride = patch_size) or ``"windows"``
(HighRes windows; bags written before the attribute existed are all ``"windows"``).
``views_per_patch`` is the encoder work per patch (1, or W).

A bag is written to ``<name>.h5.partial`` batch by batch, each batch flushed with the count of
patches done; it is renamed to ``<name>.h5`` only when complete. An interrupted run resumes
from the last flushed batch when the partial file opens and matches what is asked, and
redoes the slide otherwise. Nothing ever reads a ``.partial`` file as a bag.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from pathgls.errors import BagError
from pathgls.features.bag_checks import DATASETS, check_coords, check_storage

if TYPE_CHECKING:
    from pathgls.tiling.identity import FileIdentity

PARTIAL_SUFFIX = ".partial"
_PLANNED = "_planned_coords"  # internal dataset of partial files: the coordinates to write
_DONE = "_n_done"  # attribute of partial files: patches flushed so far
#: Free bytes kept beyond a batch's data when a bag is written (HDF5's chunk index, flushes).
SPACE_HEADROOM = 16 << 20


@dataclass(frozen=True)
class BagMeta:
    """The attributes of a bag. Fields in ``IDENTITY`` decide whether a bag matches a request."""

    encoder: str
    patch_size: int
    patch_size_level0: int
    target_magnification: float
    target_mpp: float
    level0_magnification: float
    level0_mpp: float
    window_size: int
    window_stride: int
    slide_name: str
    slide_sha256: str
    pathgls_version: str
    complete: bool = False
    # provenance extras
    patch_level: int = 0
    mpp_source: str = "metadata"
    tissue_threshold: float = 0.0
    overlap: int = 0
    encoder_model_id: str = ""
    encoder_revision: str = ""
    random_weights: bool = False
    n_windows: int = 0
    dim: int = 0
    config_json: str = ""
    # the filter patches were resized with (ReadPlan.resampling); "" in bags written before it
    # was recorded, which used Lanczos for every resize
    resample: str = ""
    scaled_decode: bool = False  # pathgls decoded JPEG tiles itself (scaled) where possible
    # the slide's cheap identity (pathgls.tiling.identity): a rerun recognises an unchanged
    # slide by these without hashing it in full; 0 / "" in bags written before they were kept
    slide_size: int = 0
    slide_mtime_ns: int = 0
    slide_header_sha256: str = ""
    # "patch": one view per patch, no window_features; "windows": HighRes windows (Grounding)
    views: str = "windows"
    views_per_patch: int = 0  # encoder views per patch (0 in bags written before it was kept)
    extras: dict[str, Any] = field(default_factory=dict, compare=False)

    #: Fields that must agree for an existing or partial bag to be reused.
    IDENTITY = (
        "encoder",
        "encoder_model_id",
        "encoder_revision",
        "patch_size",
        "patch_size_level0",
        "patch_level",
        "target_mpp",
        "level0_mpp",
        "window_size",
        "window_stride",
        "slide_sha256",
        "tissue_threshold",
        "overlap",
        "n_windows",
        "dim",
        "resample",
        "views",
    )

    @property
    def has_windows(self) -> bool:
        """Whether the bag stores HighRes ``window_features`` (Grounding needs them)."""
        return self.views != "patch"

    def slide_identity(self) -> FileIdentity:
        """The identity of the slide the bag was made from (size and hashes; 0 / "" where an
        older bag did not record them)."""
        # imported here: the tiling package's __init__ pulls in scipy (tissue masks), and a
        # command that fails on its inputs must not pay for it (tests/test_fail_fast.py)
        from pathgls.tiling.identity import FileIdentity

        return FileIdentity(
            size=int(self.slide_size),
            mtime_ns=int(self.slide_mtime_ns),
            header_sha256=str(self.slide_header_sha256),
            sha256=str(self.slide_sha256),
        )

    def mismatches(self, other: BagMeta) -> list[str]:
        """Names of identity fields that differ, as ``name: mine != theirs``."""
        out = []
        for name in self.IDENTITY:
            a, b = getattr(self, name), getattr(other, name)
            if name == "resample" and "" in (a, b) and {a, b} <= {"", "none", "lanczos"}:
                continue  # a bag from before resampling was recorded: Lanczos or no resize
            if isinstance(a, float) and isinstance(b, float):
                if not np.isclose(a, b, rtol=1e-9, atol=0):
                    out.append(f"{name}: {a!r} != {b!r}")
            elif a != b:
                out.append(f"{name}: {a!r} != {b!r}")
        return out

    def to_attrs(self) -> dict[str, Any]:
        """Attributes as stored in HDF5."""
        d = asdict(self)
        d.pop("extras")
        d.update(self.extras)
        return d

    @classmethod
    def from_attrs(cls, attrs: Any) -> BagMeta:
        """Parse HDF5 attributes, raising :class:`BagError` for missing required ones."""
        names = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        extras: dict[str, Any] = {}
        for key, raw in attrs.items():
            value = raw.item() if isinstance(raw, np.generic) else raw
            if isinstance(value, bytes):
                try:
                    value = value.decode()
                except UnicodeDecodeError as e:
                    raise BagError(
                        f"bag attribute {key!r} is not UTF-8 text: {value[:20]!r}"
                    ) from e
            if key in names and key != "extras":
                values[key] = value
            elif not key.startswith("_"):
                extras[key] = value
        missing = [f.name for f in fields(cls) if f.name in REQUIRED_ATTRS and f.name not in values]
        if missing:
            raise BagError(f"bag is missing attribute(s): {', '.join(missing)}")
        for key, value in values.items():
            values[key] = _typed(key, value, str(names[key].type))
        values["complete"] = bool(values.get("complete", False))
        values["random_weights"] = bool(values.get("random_weights", False))
        return cls(**values, extras=extras)


#: Attributes that must be > 0.
_POSITIVE = frozenset(
    {"patch_size", "patch_size_level0", "window_size", "window_stride", "target_mpp", "level0_mpp"}
)
#: Largest value each size attribute may have (pixels, µm/px): beyond any real bag, and a
#: bound on what a reader computes from them.
_AT_MOST = {
    "patch_size": 65536,
    "patch_size_level0": 1 << 20,
    "window_size": 65536,
    "window_stride": 65536,
    "target_mpp": 1000.0,
    "level0_mpp": 1000.0,
    "n_windows": 1 << 20,
    "views_per_patch": 1 << 20,
    "dim": 1 << 20,
}


def windows_per_patch(patch_size: int, window: int, stride: int) -> int:
    """HighRes windows per patch (as :func:`pathgls.encoders.highres.window_coords` places
    them), computed without listing them."""
    if window >= patch_size:
        return 1
    per_side = (patch_size - window) // stride + 1
    if (per_side - 1) * stride + window < patch_size:
        per_side += 1  # the last window shifted inward
    return per_side * per_side


def _typed(key: str, value: Any, kind: str) -> Any:
    """``value`` as the field's type (int, float, str, bool).

    Raises:
        BagError: naming the attribute and the value, when it is not of that type, not a finite
            number, or not positive where it must be.
    """

    def bad(what: str) -> str:  # not str.format: the value may hold braces
        return f"bag attribute {key!r} must be {what}, got {value!r}"

    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise BagError(bad("an integer"))
        value = int(value)
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise BagError(bad("a number"))
        value = float(value)
        if not np.isfinite(value):
            raise BagError(bad("a finite number"))
    elif kind == "str" and not isinstance(value, str):
        raise BagError(bad("text"))
    elif kind == "bool":
        if not isinstance(value, bool | np.bool_) and value not in (0, 1):
            raise BagError(bad("true or false"))
        value = bool(value)
    if key in _POSITIVE and value <= 0:
        raise BagError(bad("> 0"))
    if key in _AT_MOST and not 0 <= value <= _AT_MOST[key]:
        raise BagError(bad(f"in [0, {_AT_MOST[key]}]"))
    return value


REQUIRED_ATTRS = (
    "encoder",
    "patch_size",
    "patch_size_level0",
    "target_magnification",
    "target_mpp",
    "level0_magnification",
    "level0_mpp",
    "window_size",
    "window_stride",
    "slide_name",
    "slide_sha256",
    "pathgls_version",
    "complete",
)


@dataclass
class FeatureBag:
    """A bag read into memory (``window_features`` is None when not loaded, or when the bag
    has none: ``meta.views == "patch"``)."""

    features: np.ndarray
    coords: np.ndarray
    window_features: np.ndarray | None
    meta: BagMeta
    path: Path

    def __len__(self) -> int:
        return int(self.coords.shape[0])


def partial_path(path: str | os.PathLike[str]) -> Path:
    """The in-progress file of a bag."""
    return Path(str(path) + PARTIAL_SUFFIX)


def _check_not_partial(path: Path) -> None:
    if path.name.endswith(PARTIAL_SUFFIX):
        raise BagError(f"{path}: is an unfinished (.partial) bag; it is never read as a bag")


def validate_bag(
    path: str | os.PathLike[str], *, slide_size: tuple[int, int] | None = None
) -> BagMeta:
    """Check a bag before anything is read from it; return its attributes.

    The bag must be self-contained and store what it declares
    (:func:`~pathgls.features.bag_checks.check_storage`: no external links, external storage,
    virtual datasets, unknown filters or non-numeric dtypes), have the schema's shapes and
    attributes, be complete, hold finite features and coordinates inside the slide (its
    level-0 ``slide_size`` = ``(width, height)``, when the caller knows the slide).

    Raises:
        BagError: naming the bag (and the dataset or attribute): unreadable, a ``.partial``
            file, incomplete, pointing elsewhere, declaring more than it stores, datasets of
            the wrong shape or type, or coordinates outside the slide.
    """
    p = Path(path)
    _check_not_partial(p)
    try:
        with h5py.File(p, "r") as f:
            return _validate_open(f, p, slide_size=slide_size)
    except OSError as e:
        raise BagError(f"{p}: cannot be opened as HDF5: {e}") from e


def _validate_open(f: h5py.File, p: Path, *, slide_size: tuple[int, int] | None = None) -> BagMeta:
    # before a byte of data is read; a bag of views="patch" has no window_features (checked
    # against its attributes below)
    check_storage(f, p, datasets=DATASETS if "window_features" in f else PATCH_DATASETS)
    try:
        meta = BagMeta.from_attrs(f.attrs)
    except BagError as e:
        raise BagError(f"{p}: {e}") from e
    if meta.views not in VIEWS:
        raise BagError(f"{p}: attribute views must be patch or windows, got {meta.views!r}")
    feats, coords = f["features"], f["coords"]
    if not meta.complete:
        raise BagError(f"{p}: the bag is marked incomplete")
    n = coords.shape[0]
    if coords.ndim != 2 or coords.shape[1] != 2 or not np.issubdtype(coords.dtype, np.integer):
        raise BagError(f"{p}: coords must be (N, 2) integers, got {coords.shape} {coords.dtype}")
    if feats.ndim != 2 or feats.shape[0] != n:
        raise BagError(f"{p}: features must be (N, D) with N={n}, got {feats.shape}")
    if meta.dim and meta.dim != feats.shape[1]:
        raise BagError(f"{p}: attribute dim={meta.dim} but features have D={feats.shape[1]}")
    if meta.has_windows:
        if "window_features" not in f:
            raise BagError(f"{p}: dataset 'window_features' is missing")
        _check_windows(f["window_features"], meta, feats.shape, p)
    elif "window_features" in f:
        raise BagError(f"{p}: a bag of views='patch' must not hold window_features")
    check_coords(coords, p, slide_size=slide_size)
    for start in range(0, n, _CHECK_ROWS):  # window features are checked as they are read
        bad = ~np.isfinite(np.asarray(feats[start : start + _CHECK_ROWS], dtype=np.float32))
        if bad.any():
            row = start + int(np.argwhere(bad)[0][0])
            raise BagError(f"{p}: non-finite (NaN or inf) features, first at patch {row}")
    return meta


def _check_windows(win: Any, meta: BagMeta, feats_shape: tuple[int, ...], p: Path) -> None:
    n = feats_shape[0]
    if win.ndim != 3 or win.shape[0] != n or win.shape[2] != feats_shape[1]:
        raise BagError(
            f"{p}: window_features must be (N, W, D), got {win.shape} for features {feats_shape}"
        )
    if meta.n_windows and meta.n_windows != win.shape[1]:
        raise BagError(f"{p}: attribute n_windows={meta.n_windows} but W={win.shape[1]}")
    expected = windows_per_patch(meta.patch_size, meta.window_size, meta.window_stride)
    if expected != win.shape[1]:
        raise BagError(
            f"{p}: a {meta.patch_size} px patch has {expected} windows of {meta.window_size} px "
            f"at stride {meta.window_stride}, but window_features has W={win.shape[1]}"
        )


#: The datasets of a bag of ``views="patch"`` (TRIDENT/CLAM's two).
PATCH_DATASETS = {k: v for k, v in DATASETS.items() if k != "window_features"}
#: What a bag's ``views`` attribute may say.
VIEWS = ("patch", "windows")
#: What to tell a user whose bag has no HighRes windows where they are needed.
NO_WINDOWS_HINT = (
    "it was extracted with one view per patch (views='patch', the default of `pathgls extract`) "
    "and holds no HighRes window features; Grounding needs them: extract it again with "
    "`pathgls extract --windows` (or encoder.windows = true in the config)"
)


def require_windows(meta: BagMeta, path: str | os.PathLike[str]) -> None:
    """Refuse a bag without HighRes windows where they are needed (Grounding).

    Raises:
        BagError: naming the bag and the ``--windows`` flag.
    """
    if not meta.has_windows:
        raise BagError(f"{path}: {NO_WINDOWS_HINT}")


#: Rows of ``features`` checked at a time when a bag is opened.
_CHECK_ROWS = 65536


def read_bag(
    path: str | os.PathLike[str],
    *,
    windows: bool = True,
    slide_size: tuple[int, int] | None = None,
) -> FeatureBag:
    """Validate (:func:`validate_bag`) and load a bag (``windows=False`` skips the large
    window_features; a bag of ``views="patch"`` has none: they are None)."""
    p = Path(path)
    meta = validate_bag(p, slide_size=slide_size)
    with h5py.File(p, "r") as f:
        return FeatureBag(
            features=f["features"][:],
            coords=f["coords"][:],
            window_features=f["window_features"][:] if windows and meta.has_windows else None,
            meta=meta,
            path=p,
        )


@contextlib.contextmanager
def open_bag(
    path: str | os.PathLike[str], *, slide_size: tuple[int, int] | None = None
) -> Iterator[h5py.File]:
    """Open a bag checked by :func:`validate_bag` lazily (datasets are read on slicing; for
    bags larger than memory)."""
    p = Path(path)
    validate_bag(p, slide_size=slide_size)
    with h5py.File(p, "r") as f:
        yield f


class BagWriter:
    """Writes one bag batch by batch into ``<path>.partial``; :meth:`finalize` renames it.

    Use :meth:`open` to start or resume; ``n_done`` tells where to continue. Batches must be
    appended in order (``start == n_done``), so a resumed bag is identical to an uninterrupted one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        meta: BagMeta,
        coords: np.ndarray,
        compression: str | None = None,
        chunk_rows: int = 64,
    ) -> None:
        self.path = Path(path)
        self.partial = partial_path(self.path)
        self.meta = meta
        self.coords = np.ascontiguousarray(np.asarray(coords, dtype=np.int64).reshape(-1, 2))
        self.compression = compression
        self.chunk_rows = max(1, chunk_rows)
        self.n_done = 0
        self.resume_note = ""
        self._file: h5py.File | None = None

    @property
    def n_total(self) -> int:
        """Patches the bag will hold."""
        return int(self.coords.shape[0])

    def open(self) -> BagWriter:
        """Resume a matching partial file, or start a new one (a stale partial is discarded).

        Raises:
            BagError: the bag or its partial file is a symbolic link, or the disk has not the
                room the bag needs (checked before HDF5 writes a byte: a full disk mid-write
                leaves HDF5 in a state that crashes the process).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for p in (self.path.parent, self.path, self.partial):
            if p.is_symlink():
                raise BagError(
                    f"{p} is a symbolic link (to {os.readlink(p)}); pathgls never writes a bag "
                    "through a link: remove it"
                )
        if self.partial.exists():
            reason = self._try_resume()
            if reason is None:
                return self
            self.resume_note = f"discarded unusable partial bag ({reason}); starting over"
            self.partial.unlink()
        rows = self.n_total - self.n_done if self.compression is None else 0
        self._require_space(rows, "the bag")
        self._create()
        return self

    def _require_space(self, rows: int, what: str) -> None:
        """Refuse to write ``rows`` more patches (uncompressed size, plus headroom for HDF5's
        own records) where the file system has less room.

        Raises:
            BagError: naming the file, the bytes free and needed.
        """
        m = self.meta
        windows = m.n_windows if m.has_windows else 0
        need = rows * (m.dim * 4 + 16 + windows * m.dim * 2) + SPACE_HEADROOM
        try:
            free = shutil.disk_usage(self.partial.parent).free
        except OSError:
            return  # cannot tell: HDF5 reports what it can
        if free < need:
            raise BagError(
                f"{self.partial}: no space left on the device for {what}: {free} bytes free, "
                f"{need} needed (the disk is full); free some space or write the bags elsewhere"
            )

    def _try_resume(self) -> str | None:
        try:
            f = h5py.File(self.partial, "r+")
        except OSError as e:
            return f"cannot open: {e}"
        try:
            try:
                old = BagMeta.from_attrs(f.attrs)
            except BagError as e:
                return str(e)
            diffs = self.meta.mismatches(old)
            if diffs:
                return "made with other settings: " + "; ".join(diffs)
            if _PLANNED not in f or not np.array_equal(f[_PLANNED][:], self.coords):
                return "planned patch coordinates differ"
            n_done = int(f.attrs.get(_DONE, 0))
            if not 0 <= n_done <= self.n_total:
                return f"invalid progress counter {n_done}"
            for name in self._datasets():
                if name not in f or f[name].shape[0] < n_done:
                    return f"dataset {name} is shorter than the progress counter"
                f[name].resize(n_done, axis=0)  # drop rows written after the last flush
        except Exception as e:  # any damage in a partial file means: redo
            f.close()
            return f"damaged: {e}"
        self._file = f
        self.n_done = n_done
        self.resume_note = f"resumed at patch {n_done} of {self.n_total}" if n_done else ""
        return None

    def _create(self) -> None:
        f = h5py.File(self.partial, "w")
        m = self.meta
        rows = self.chunk_rows
        kw: dict[str, Any] = {"compression": self.compression} if self.compression else {}
        f.create_dataset(
            "features",
            shape=(0, m.dim),
            maxshape=(None, m.dim),
            dtype="float32",
            chunks=(rows, m.dim),
            **kw,
        )
        f.create_dataset(
            "coords", shape=(0, 2), maxshape=(None, 2), dtype="int64", chunks=(rows, 2), **kw
        )
        if m.has_windows:
            f.create_dataset(
                "window_features",
                shape=(0, m.n_windows, m.dim),
                maxshape=(None, m.n_windows, m.dim),
                dtype="float16",
                chunks=(max(1, rows // 4), m.n_windows, m.dim),
                **kw,
            )
        f.create_dataset(_PLANNED, data=self.coords)
        for key, value in self.meta.to_attrs().items():
            f.attrs[key] = value
        f.attrs["complete"] = False
        f.attrs[_DONE] = 0
        f["coords"].attrs.update(self._coords_attrs())
        f.flush()
        self._file = f
        self.n_done = 0

    def _datasets(self) -> tuple[str, ...]:
        if self.meta.has_windows:
            return ("features", "coords", "window_features")
        return ("features", "coords")

    def _coords_attrs(self) -> dict[str, Any]:
        # CLAM/TRIDENT loaders read these from the coords dataset.
        m = self.meta
        return {
            "patch_size": m.patch_size,
            "patch_size_level0": m.patch_size_level0,
            "patch_level": m.patch_level,
            "target_magnification": m.target_magnification,
            "level0_magnification": m.level0_magnification,
            "overlap": m.overlap,
            "name": m.slide_name,
        }

    def append(
        self,
        *,
        start: int,
        coords: np.ndarray,
        window_features: np.ndarray | None,
        features: np.ndarray,
    ) -> None:
        """Append one batch and flush it (with the progress counter) to disk.

        ``window_features`` is None for a bag of ``views="patch"`` (and required otherwise).
        """
        f = self._require_open()
        if (window_features is None) == self.meta.has_windows:
            raise BagError(
                f"window_features {'missing' if window_features is None else 'given'} for a bag "
                f"of views={self.meta.views!r}"
            )
        if start != self.n_done:
            raise BagError(f"batch starts at {start} but {self.n_done} patches are written")
        b = len(coords)
        if not np.array_equal(coords, self.coords[start : start + b]):
            raise BagError(f"batch coordinates at {start} differ from the planned ones")
        end = start + b
        self._require_space(b, f"patches {start}..{end - 1}")
        arrays = {"features": features, "coords": coords, "window_features": window_features}
        for name in ("features", "window_features"):
            data = arrays[name]
            if data is not None and not np.isfinite(np.asarray(data, dtype=np.float32)).all():
                raise BagError(
                    f"non-finite (NaN or inf) {name} in patches {start}..{end - 1}: the encoder "
                    "produced unusable features"
                )
        for name in self._datasets():
            ds = f[name]
            ds.resize(end, axis=0)
            ds[start:end] = arrays[name]
        f.flush()
        f.attrs[_DONE] = end
        f.flush()
        self.n_done = end

    def finalize(self) -> Path:
        """Mark complete, drop internal data, close and rename to the final path."""
        f = self._require_open()
        if self.n_done != self.n_total:
            raise BagError(f"cannot finalize: {self.n_done} of {self.n_total} patches written")
        del f[_PLANNED]
        del f.attrs[_DONE]
        f.attrs["complete"] = True
        f.flush()
        f.close()
        self._file = None
        with open(self.partial, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(self.partial, self.path)
        return self.path

    def close(self) -> None:
        """Close without finalizing (the partial file stays for a later resume)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def _require_open(self) -> h5py.File:
        if self._file is None:
            raise BagError("the bag writer is not open")
        return self._file

    def __enter__(self) -> BagWriter:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
