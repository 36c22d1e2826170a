"""Hostile feature bags (issue 25): a bag holds its own data and stores what it declares.

Each case builds the file (``pathgls.testing.hostile``) and checks that it is refused on open
with a ``BagError`` naming the bag and the dataset, before anything is read from it — through
the validator, the lazy grounding source and the in-memory reader alike.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathgls.errors import BagError
from pathgls.features.bags import BagWriter, read_bag, validate_bag
from pathgls.grounding.sources import open_bag_source
from pathgls.testing.hostile import BAG_D, BAG_N, BAG_W, HOSTILE_BAGS, hostile_bag, write_bag


@pytest.mark.parametrize("kind", sorted(HOSTILE_BAGS))
def test_hostile_bags_are_refused_before_a_byte_is_read(tmp_path: Path, kind: str) -> None:
    path, words = hostile_bag(kind, tmp_path)
    for open_it in (
        validate_bag,
        lambda p: read_bag(p, windows=True),
        lambda p: open_bag_source(p).__enter__(),
    ):
        with pytest.raises(BagError) as info:
            open_it(path)
        assert str(path) in str(info.value) and words in str(info.value), str(info.value)


def test_external_storage_never_shows_the_other_files_bytes(tmp_path: Path) -> None:
    # before: coords were read from the external file: its bytes came out as coordinates
    path, _ = hostile_bag("external-storage", tmp_path)
    with h5py.File(path, "r") as f:  # what h5py itself would hand over
        leaked = f["coords"][:]
    assert leaked.tobytes().startswith(b"root:x:0")
    with pytest.raises(BagError, match="external file"):
        read_bag(path)


def test_a_valid_bag_still_opens_and_its_coordinates_are_checked_against_the_slide(
    tmp_path: Path,
) -> None:
    path = write_bag(tmp_path / "good.h5")
    bag = read_bag(path, slide_size=(BAG_N * 896, 896))
    assert bag.features.shape == (BAG_N, BAG_D) and bag.window_features.shape[1] == BAG_W
    with pytest.raises(BagError, match=r"row 5 is \(4480, 0\), outside the slide \(4480×896\)"):
        validate_bag(path, slide_size=(4480, 896))
    with open_bag_source(path, slide_size=(10_000, 10_000)) as source:
        assert len(source) == BAG_N


def test_a_known_filter_this_hdf5_lacks_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_bag(tmp_path / "gz.h5")
    with h5py.File(path, "r+") as f:
        data = f["window_features"][:]
        del f["window_features"]
        f.create_dataset("window_features", data=data, chunks=(2, BAG_W, BAG_D), compression="gzip")
    real = h5py.h5z.filter_avail
    monkeypatch.setattr(h5py.h5z, "filter_avail", lambda code: code != 1 and real(code))
    with pytest.raises(BagError, match=r"'window_features' uses the HDF5 filter deflate .* not"):
        validate_bag(path)
    monkeypatch.undo()
    assert validate_bag(path).dim == BAG_D  # gzip is fine where HDF5 has it


# -- writing: links and a full disk -------------------------------------------------------------


def _writer(path: Path) -> BagWriter:
    """A writer of the bag :func:`write_bag` writes (its attributes), at ``path``."""
    meta = validate_bag(write_bag(path.with_name("model.h5")))
    coords = np.stack([np.arange(BAG_N) * 896, np.zeros(BAG_N)], 1).astype(np.int64)
    return BagWriter(path, meta=meta, coords=coords)


@pytest.mark.parametrize("which", ["bag", "partial"])
def test_a_bag_is_never_written_through_a_link(tmp_path: Path, which: str) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    target = tmp_path / "b.h5"
    link = target if which == "bag" else target.with_name("b.h5.partial")
    link.symlink_to(victim)
    with pytest.raises(BagError, match="is a symbolic link"):
        _writer(target).open()
    assert victim.read_text() == "keep me"


def test_a_full_disk_is_refused_before_hdf5_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pathgls.features.bags as bags

    writer = _writer(tmp_path / "b.h5").open()
    win = np.ones((BAG_N, BAG_W, BAG_D), np.float32)
    coords = writer.coords
    real = shutil.disk_usage
    monkeypatch.setattr(
        bags.shutil,
        "disk_usage",
        lambda p: real(p)._replace(free=1024),  # the disk filled up
    )
    with pytest.raises(BagError, match=r"no space left on the device .* 1024 bytes free"):
        writer.append(start=0, coords=coords, window_features=win, features=win.mean(1))
    writer.close()  # HDF5 wrote nothing: the partial file closes cleanly and can resume
    monkeypatch.undo()
    again = _writer(tmp_path / "b.h5").open()
    assert again.n_done == 0
    again.close()


ATTR_DTYPES = st.sampled_from(["f2", "f4", "f8", "i4", "i8", "u2", "S4", "bool", "c8"])


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    name=st.sampled_from(["features", "coords", "window_features"]),
    dtype=ATTR_DTYPES,
    rows=st.integers(0, 10**9),
    chunked=st.booleans(),
)
def test_any_dataset_shape_and_type_is_read_or_refused_with_a_bag_error(
    tmp_path_factory: pytest.TempPathFactory, name: str, dtype: str, rows: int, chunked: bool
) -> None:
    """A dataset of any numeric or non-numeric type and any declared length: a BagError naming
    it, or a bag whose arrays really hold what was declared — never a hang or a traceback."""
    path = write_bag(tmp_path_factory.mktemp("fuzz") / "b.h5")
    tail = {"features": (BAG_D,), "coords": (2,), "window_features": (BAG_W, BAG_D)}[name]
    with h5py.File(path, "r+") as f:
        del f[name]
        f.create_dataset(
            name,
            shape=(rows, *tail),
            dtype=dtype,
            chunks=(64, *tail) if chunked else None,
            maxshape=(None, *tail) if chunked else None,
        )
    try:
        bag = read_bag(path)
    except BagError as e:
        assert str(path) in str(e)
        return
    assert len(bag) == rows == BAG_N  # only the honest shape passes
