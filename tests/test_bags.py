"""HDF5 feature bag schema, resumable writing and validation."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from pathgls.errors import BagError
from pathgls.features.bags import BagMeta, BagWriter, open_bag, partial_path, read_bag, validate_bag
from pathgls.testing.hostile import bag_meta

N, W, D = 10, 9, 8


def _meta(**kw) -> BagMeta:
    return bag_meta(patch_size=512, patch_size_level0=1024, n_windows=W, dim=D, **kw)


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    coords = np.stack([np.arange(N) * 1024, np.zeros(N)], 1).astype(np.int64)
    win = rng.normal(size=(N, W, D)).astype(np.float32)
    return coords, win, win.mean(1)


def _write(
    path: Path, *, stop_after: int | None = None, batch: int = 4, meta: BagMeta | None = None
) -> BagWriter:
    coords, win, feats = _data()
    w = BagWriter(path, meta=meta or _meta(), coords=coords, chunk_rows=batch).open()
    for s in range(w.n_done, N, batch):
        if stop_after is not None and s >= stop_after:
            w.close()
            return w
        e = min(s + batch, N)
        w.append(start=s, coords=coords[s:e], window_features=win[s:e], features=feats[s:e])
    w.finalize()
    return w


def test_roundtrip_schema_and_clam_names(tmp_path: Path) -> None:
    p = tmp_path / "s.h5"
    _write(p)
    assert p.exists() and not partial_path(p).exists()
    bag = read_bag(p)
    coords, win, feats = _data()
    assert np.array_equal(bag.coords, coords)
    assert bag.features.dtype == np.float32 and bag.window_features.dtype == np.float16
    np.testing.assert_allclose(bag.features, feats, rtol=0, atol=1e-6)
    np.testing.assert_allclose(bag.window_features, win, atol=2e-3)
    assert bag.meta.complete and bag.meta.slide_name == "s"
    with h5py.File(p, "r") as f:  # what CLAM/TRIDENT loaders read
        assert f["features"].shape == (N, D) and f["coords"].shape == (N, 2)
        assert f["coords"].attrs["patch_size"] == 512 and f["coords"].attrs["patch_level"] == 0
        assert "_planned_coords" not in f and "_n_done" not in f.attrs
        for key in (
            "encoder",
            "patch_size_level0",
            "target_magnification",
            "level0_mpp",
            "window_size",
            "window_stride",
            "slide_sha256",
            "pathgls_version",
            "complete",
        ):
            assert key in f.attrs
    with open_bag(p) as f:
        assert f["window_features"][2:4].shape == (2, W, D)


def test_resume_gives_the_same_bag(tmp_path: Path) -> None:
    full, part = tmp_path / "full" / "s.h5", tmp_path / "part" / "s.h5"
    _write(full)
    _write(part, stop_after=8)
    assert not part.exists() and partial_path(part).exists()
    with pytest.raises(BagError, match="partial"):
        validate_bag(partial_path(part))
    w = _write(part)
    assert w.resume_note == f"resumed at patch 8 of {N}"
    a, b = read_bag(full), read_bag(part)
    for name in ("features", "coords", "window_features"):
        assert np.array_equal(getattr(a, name), getattr(b, name))


def test_rows_after_the_last_flush_are_dropped(tmp_path: Path) -> None:
    p = tmp_path / "s.h5"
    _write(p, stop_after=4)
    with h5py.File(partial_path(p), "r+") as f:  # a batch written but its counter never flushed
        for name in ("features", "coords", "window_features"):
            f[name].resize(6, axis=0)
        f["features"][4:6] = 99.0
    w = _write(p)
    assert w.resume_note.startswith("resumed at patch 4")
    assert read_bag(p).features.max() < 99.0


def test_mismatched_or_damaged_partial_is_redone(tmp_path: Path) -> None:
    p = tmp_path / "s.h5"
    _write(p, stop_after=4)
    w = _write(p, meta=_meta(encoder="hf:other"))
    assert "other settings" in w.resume_note and "encoder" in w.resume_note
    assert read_bag(p).meta.encoder == "hf:other"
    q = tmp_path / "q.h5"
    partial_path(q).write_bytes(b"\x89HDF\r\n\x1a\n" + b"garbage" * 100)
    w = _write(q)
    assert "cannot open" in w.resume_note
    assert read_bag(q).meta.complete


def test_validate_rejects_broken_bags(tmp_path: Path) -> None:
    p = tmp_path / "s.h5"
    _write(p)
    with h5py.File(p, "r+") as f:
        f.attrs["complete"] = False
    with pytest.raises(BagError, match="incomplete"):
        validate_bag(p)
    with h5py.File(p, "r+") as f:
        f.attrs["complete"] = True
        del f["window_features"]
    with pytest.raises(BagError, match="window_features"):
        validate_bag(p)
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    with pytest.raises(BagError, match="cannot be opened"):
        read_bag(junk)


def test_writer_refuses_out_of_order_batches(tmp_path: Path) -> None:
    coords, win, feats = _data()
    w = BagWriter(tmp_path / "s.h5", meta=_meta(), coords=coords).open()
    with pytest.raises(BagError, match="starts at 4"):
        w.append(start=4, coords=coords[4:8], window_features=win[4:8], features=feats[4:8])
    with pytest.raises(BagError, match="cannot finalize"):
        w.finalize()
    w.close()


def test_meta_identity() -> None:
    assert _meta().mismatches(_meta(slide_name="other")) == []  # the name is not identity
    assert _meta().mismatches(_meta(level0_mpp=0.26)) == ["level0_mpp: 0.25 != 0.26"]


def test_resampling_is_part_of_a_bags_identity() -> None:
    # an area-filtered bag is never resumed or reused as a Lanczos one; a bag written before
    # the filter was recorded (all Lanczos, or no resize) still matches those two
    area, lanczos = _meta(resample="area"), _meta(resample="lanczos")
    assert area.mismatches(lanczos) == ["resample: 'area' != 'lanczos'"]
    legacy = _meta()
    assert legacy.resample == ""
    assert lanczos.mismatches(legacy) == [] and _meta(resample="none").mismatches(legacy) == []
    assert area.mismatches(legacy) == ["resample: 'area' != ''"]
    back = BagMeta.from_attrs(_meta(resample="area", scaled_decode=True).to_attrs())
    assert back.resample == "area" and back.scaled_decode is True
