"""What a feature bag must be before a byte of its data is read: self-contained and honest.

An HDF5 file can point elsewhere and can declare more than it holds. A bag whose ``coords``
used *external storage* on ``/etc/passwd`` passed the schema check and that file's bytes came
out as coordinates; external links and virtual datasets pulled another file's data into S_g;
an 8 kB bag declaring 20 M patches made the reader decode fill values for ever. So, on open
(:func:`check_storage`, called by :func:`pathgls.features.bags.validate_bag`):

* each dataset of the bag is a plain dataset of this file: no external link or soft link at its
  name, no virtual dataset, no external storage (and no external link anywhere at the root);
* its filters are ones pathgls knows (deflate, shuffle, fletcher32, szip, n-bit, scale-offset,
  LZF) and this HDF5 can run;
* its dtype is numeric: floats for ``features`` and ``window_features``, integers for
  ``coords`` (no strings, compounds or objects);
* what it declares is stored: an uncompressed dataset stores at least its declared bytes, a
  compressed one stores every chunk its shape needs, and the whole bag declares at most
  :data:`MAX_EXPANSION` times the file's size (more than compression ever gives real features).

:func:`check_coords` then checks the coordinates: non-negative and, when the slide is known,
inside it. Every refusal is a :class:`~pathgls.errors.BagError` naming the bag and the dataset.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

import h5py
import numpy as np

from pathgls.errors import BagError

#: The datasets a bag is read through, each with the numpy dtype kinds it may hold.
DATASETS: Mapping[str, str] = MappingProxyType(
    {"features": "f", "coords": "iu", "window_features": "f"}
)
#: HDF5 filters a bag may use: id → name (what h5py itself writes).
KNOWN_FILTERS = {
    1: "deflate (gzip)",
    2: "shuffle",
    3: "fletcher32",
    4: "szip",
    5: "n-bit",
    6: "scale-offset",
    32000: "lzf",
}
#: Declared bytes per stored byte, at most: deflate tops out near 1000:1 on constant data, and
#: real embeddings compress less than 2:1; more is a bag that is not what it says.
MAX_EXPANSION = 256
#: Largest level-0 coordinate accepted (2^31 px: beyond any slide).
MAX_COORD = 2**31 - 1
#: Rows of ``coords`` checked at a time.
_ROWS = 1 << 20


def check_storage(f: h5py.File, path: Path, *, datasets: Mapping[str, str] = DATASETS) -> None:
    """Refuse a bag that is not self-contained or declares more than it stores.

    Args:
        f: The open file.
        path: Its path (for messages and its size).
        datasets: The datasets read from it, each with the numpy dtype kinds it may hold
            (a bag's by default; a patches file passes its own).

    Raises:
        BagError: naming the bag, the dataset and the reason (see the module docstring).
    """
    for name, link in _root_links(f):
        if isinstance(link, h5py.ExternalLink):
            raise BagError(
                f"{path}: {name!r} is an external link to {link.filename}:{link.path}; a bag "
                "must hold its own data"
            )
    declared_total = 0
    for name, kinds in datasets.items():
        link = f.get(name, getlink=True)
        if link is None:
            raise BagError(f"{path}: dataset {name!r} is missing")
        if isinstance(link, h5py.SoftLink):
            raise BagError(f"{path}: dataset {name!r} is a soft link to {link.path}; not read")
        obj = f.get(name)
        if not isinstance(obj, h5py.Dataset):
            raise BagError(f"{path}: {name!r} is a {type(obj).__name__}, not a dataset")
        declared_total += _check_dataset(obj, name, path, kinds)
    size = path.stat().st_size
    if declared_total > MAX_EXPANSION * max(size, 1) + (1 << 20):
        raise BagError(
            f"{path}: its datasets declare {declared_total} bytes in a {size}-byte file, more "
            f"than {MAX_EXPANSION}× what real features compress to; not read"
        )


def _root_links(f: h5py.File) -> Iterable[tuple[str, object]]:
    for name in f:
        yield name, f.get(name, getlink=True)


def _check_dataset(ds: h5py.Dataset, name: str, path: Path, kinds: str) -> int:
    """Checks of one dataset (see the module docstring); returns its declared bytes."""
    where = f"{path}: dataset {name!r}"
    if ds.is_virtual:
        sources = sorted({s.file_name for s in ds.virtual_sources()})
        raise BagError(f"{where} is a virtual dataset over {', '.join(sources)}; not read")
    plist = ds.id.get_create_plist()
    if plist.get_external_count():
        target = plist.get_external(0)[0].decode(errors="replace")
        raise BagError(f"{where} keeps its data in the external file {target!r}; not read")
    for i in range(plist.get_nfilters()):
        code, _, _, label = plist.get_filter(i)
        shown = label.decode(errors="replace") if isinstance(label, bytes) else str(label)
        if code not in KNOWN_FILTERS:
            raise BagError(f"{where} uses the unknown HDF5 filter {code} ({shown!r}); not read")
        if not h5py.h5z.filter_avail(code):
            raise BagError(f"{where} uses the HDF5 filter {KNOWN_FILTERS[code]}, not available")
    if ds.dtype.kind not in kinds or ds.dtype.fields is not None:
        want = "floating-point numbers" if kinds == "f" else "integers"
        raise BagError(f"{where} must hold {want}, got dtype {ds.dtype}")
    declared = int(math.prod(ds.shape)) * ds.dtype.itemsize
    if declared == 0:
        return 0
    stored = int(ds.id.get_storage_size())
    if plist.get_nfilters() == 0:
        if stored < declared:
            raise BagError(
                f"{where} declares shape {ds.shape} ({declared} bytes) but stores {stored}; "
                "not read"
            )
    elif ds.chunks is not None:
        needed = math.prod(-(-n // c) for n, c in zip(ds.shape, ds.chunks, strict=True))
        have = int(ds.id.get_num_chunks())
        if have < needed:
            raise BagError(
                f"{where} declares shape {ds.shape} but stores {have} of its {needed} chunks; "
                "not read"
            )
    return declared


def check_coords(
    coords: h5py.Dataset | np.ndarray,
    path: Path,
    *,
    slide_size: tuple[int, int] | None = None,
) -> None:
    """Refuse coordinates that are negative, beyond :data:`MAX_COORD`, or (``slide_size`` =
    level-0 ``(width, height)``) outside the slide; read in blocks of rows.

    Raises:
        BagError: naming the bag, the first bad row and its value.
    """
    limit_x, limit_y = (MAX_COORD, MAX_COORD) if slide_size is None else slide_size
    where = "outside the slide" if slide_size is not None else "out of range"
    for start in range(0, int(coords.shape[0]), _ROWS):
        block = np.asarray(coords[start : start + _ROWS])
        bad = (block < 0).any(axis=1) | (block[:, 0] >= limit_x) | (block[:, 1] >= limit_y)
        if bad.any():
            row = start + int(np.flatnonzero(bad)[0])
            x, y = (int(v) for v in np.asarray(coords[row]))
            size = f" ({limit_x}×{limit_y})" if slide_size is not None else ""
            raise BagError(
                f"{path}: dataset 'coords' row {row} is ({x}, {y}), {where}{size}; the bag "
                "does not belong to this slide or is damaged"
            )
