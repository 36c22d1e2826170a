"""`pathgls extract` makes one view per patch by default (CLAM/TRIDENT layout); HighRes windows
only when asked (``--windows``, ``encoder.windows``, the runner); Grounding refuses a bag
without them and names the flag."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.encoders import build_encoder
from pathgls.errors import BagError
from pathgls.features.bags import read_bag, validate_bag
from pathgls.features.extract import extract_slide
from pathgls.grounding.sources import open_bag_source
from pathgls.tiling import make_grid, open_slide


def _extract_cli(tmp_path: Path, tiny_clip: Path, slide: Path, *extra: str):
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            "extract",
            str(slide),
            "--out",
            str(out),
            "--encoder",
            f"hf:{tiny_clip}",
            "--batch-size",
            "4",
            *extra,
        ],
    )
    assert res.exit_code == 0, res.output
    return res, out / "features_hf-tiny-clip" / f"{slide.stem}.h5"


def _reference_views(enc, slide: Path, coords: np.ndarray) -> np.ndarray:
    """Each whole patch read on its own and encoded as one image (a CLAM/TRIDENT loop)."""
    from pathgls.tiling.stream import read_patch

    reader = open_slide(slide)
    plan = make_grid(reader, load_config().tiling).plan
    patches = np.stack([read_patch(reader, (int(x), int(y)), plan) for x, y in coords])
    reader.close()
    return enc.encode_images(patches).numpy()


def test_default_extract_is_one_view_per_patch_in_the_clam_layout(
    tmp_path: Path, tiny_clip: Path, cmu_slide: Path
) -> None:
    res, bag_path = _extract_cli(tmp_path, tiny_clip, cmu_slide)
    assert "one view per patch" in res.output
    with h5py.File(bag_path, "r") as f:
        assert set(f) == {"features", "coords"}  # TRIDENT/CLAM's two datasets, nothing else
        assert f.attrs["views"] == "patch" and int(f.attrs["views_per_patch"]) == 1
        assert int(f.attrs["n_windows"]) == 0
        assert int(f.attrs["window_size"]) == int(f.attrs["patch_size"]) == 512
    meta = validate_bag(bag_path)
    bag = read_bag(bag_path)
    assert bag.window_features is None and not meta.has_windows
    enc = build_encoder(load_config(encoder={"name": f"hf:{tiny_clip}"}).encoder)
    grid = make_grid(open_slide(cmu_slide), load_config().tiling)
    assert np.array_equal(bag.coords, grid.coords)
    # each feature is the encoder's embedding of the whole (resized) patch, not a window mean
    np.testing.assert_allclose(
        bag.features, _reference_views(enc, cmu_slide, bag.coords), atol=1e-4
    )
    log = next((tmp_path / "run" / "logs").glob("extract-*.log")).read_text()
    assert "one view per patch" in log and "--windows" in log
    # Grounding cannot use it, and says which flag makes what it needs
    with pytest.raises(BagError, match="--windows") as err, open_bag_source(bag_path):
        pass
    assert str(bag_path) in str(err.value)


def test_windows_flag_and_config_key_make_highres_windows(
    tmp_path: Path, tiny_clip: Path, cmu_slide: Path
) -> None:
    res, bag_path = _extract_cli(tmp_path, tiny_clip, cmu_slide, "--windows")
    assert "9 HighRes windows per patch" in res.output
    meta = validate_bag(bag_path)
    assert meta.views == "windows" and meta.views_per_patch == meta.n_windows == 9
    bag = read_bag(bag_path)
    assert bag.window_features is not None and bag.window_features.shape[1] == 9
    with open_bag_source(bag_path) as source:
        assert source.window_offsets.shape == (9, 2)
    # the config key does the same; a one-view bag is never reused for a windows request
    cfg = load_config(encoder={"name": f"hf:{tiny_clip}", "windows": True})
    enc = build_encoder(cfg.encoder)
    again = extract_slide(slide=cmu_slide, out_dir=tmp_path / "run", encoder=enc, config=cfg)
    assert again.status == "skipped" and again.views_per_patch == 9
    one = extract_slide(
        slide=cmu_slide, out_dir=tmp_path / "run", encoder=enc, config=cfg, windows=False
    )
    assert one.status == "failed" and "views: 'patch' != 'windows'" in (one.error or "")


def test_a_bag_claiming_windows_without_them_is_refused(
    tmp_path: Path, tiny_clip: Path, cmu_slide: Path
) -> None:
    _, bag_path = _extract_cli(tmp_path, tiny_clip, cmu_slide)
    with h5py.File(bag_path, "r+") as f:
        f.attrs["views"] = "windows"
    with pytest.raises(BagError, match="window_features' is missing"):
        validate_bag(bag_path)
    with h5py.File(bag_path, "r+") as f:
        f.attrs["views"] = "tiles"
    with pytest.raises(BagError, match="views must be patch or windows"):
        validate_bag(bag_path)
