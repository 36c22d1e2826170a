"""Scaled JPEG tile decoding (40× → 20× without decoding the discarded pixels), the area
filter, the fallback to OpenSlide, and HighRes windows cut in one gather."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from pathgls.config import TilingConfig
from pathgls.encoders.highres import cut_windows, window_coords
from pathgls.errors import SlideReadError
from pathgls.tiling import open_slide, stream_patches
from pathgls.tiling.jpeg_tiles import JpegTiles
from pathgls.tiling.readers import OpenSlideReader
from pathgls.tiling.resolution import plan_read
from pathgls.tiling.stream import area_reduce, read_patch

#: Documented bound (pathgls/tiling/jpeg_tiles.py) of scaled decoding against OpenSlide's
#: pixels reduced with the area filter, in grey levels.
MEAN_BOUND, P999_BOUND = 1.0, 12.0


@pytest.fixture(scope="module")
def cmu_40x_no_20x(tmp_path_factory: pytest.TempPathFactory, cmu_slide: Path) -> Path:
    """A 40× pyramid (YCbCr JPEG tiles, levels 40×/10×/2.5×) from the CMU slide's real pixels,
    with no 20× level, as many scanners write them."""
    import openslide

    from pathgls.testing.synthetic import upsampled_source, write_aperio_pyramid

    with openslide.OpenSlide(str(cmu_slide)) as s:
        rgb = np.asarray(s.read_region((0, 0), 0, (1200, 1200)).convert("RGB"))
    out = tmp_path_factory.mktemp("no20x") / "cmu-40x-no20x.svs"
    return write_aperio_pyramid(
        out,
        source=upsampled_source(rgb, factor=2),
        width=2400,
        height=2400,
        mpp=0.25,
        magnification=40,
        level_factor=4,
    )


def _difference(reader: OpenSlideReader, xy: tuple[int, int], size: int, k: int) -> np.ndarray:
    fast = reader.read_region_scaled(xy, 0, (size, size), k)
    assert fast is not None and fast.shape == (size // k, size // k, 3) and fast.dtype == np.uint8
    slow = area_reduce(reader.read_region(xy, 0, (size, size)), k)
    return np.abs(fast.astype(np.int16) - slow.astype(np.int16))


@pytest.mark.parametrize("k", [2, 4, 8])
def test_scaled_decode_matches_openslide_and_area_filter_on_real_aperio(
    cmu_slide: Path, k: int
) -> None:
    # the real CMU region: RGB-coded JPEG tiles of 240 px with shared JPEGTables
    reader = OpenSlideReader(cmu_slide)
    try:
        for xy in [(0, 0), (480, 960), (1040, 1520)]:  # tile-aligned and not
            d = _difference(reader, xy, 960, k)
            assert d.mean() <= MEAN_BOUND and np.percentile(d, 99.9) <= P999_BOUND, (xy, k)
    finally:
        reader.close()


def test_scaled_decode_matches_on_ycbcr_tiles_and_is_white_outside(cmu_40x_no_20x: Path) -> None:
    reader = OpenSlideReader(cmu_40x_no_20x)
    try:
        d = _difference(reader, (512, 256), 1024, 2)
        assert d.mean() <= MEAN_BOUND and np.percentile(d, 99.9) <= P999_BOUND
        # a patch hanging over the right and bottom edges: outside is white, as in OpenSlide
        edge = reader.read_region_scaled((1888, 1888), 0, (1024, 1024), 2)
        assert edge is not None and (edge[300:, :] == 255).all() and (edge[:, 300:] == 255).all()
        assert edge[:250, :250].mean() < 250  # tissue inside
        d = _difference(reader, (1888, 1888), 1024, 2)
        assert d.mean() <= MEAN_BOUND
    finally:
        reader.close()


@pytest.mark.parametrize("fixture", ["cmu_slide", "cmu_40x_no_20x"])
def test_simplejpeg_and_pillow_decoders_give_the_same_pixels(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    # RGB-coded tiles with shared tables (real Aperio) and YCbCr tiles: libjpeg-turbo through
    # simplejpeg (with the Adobe RGB marker) and through Pillow's draft decode the same pixels,
    # and both agree with OpenSlide at full scale
    path = request.getfixturevalue(fixture)
    reader = OpenSlideReader(path)
    try:

        def reference(xy, size):
            return reader.read_region(xy, 0, size)

        made = {
            name: JpegTiles.probe(
                path,
                level_dimensions=reader.dimensions,
                vendor="aperio",
                reference=reference,
                decoder=name,
            )
            for name in ("simplejpeg", "pillow")
        }
        assert all(t is not None for t in made.values())
        assert made["simplejpeg"].decoder == "simplejpeg" and made["pillow"].decoder == "pillow"
        for xy, size in [((0, 0), 960), ((480, 720), 960), ((1000, 520), 512)]:
            for k in (1, 2, 4, 8):
                fast = made["simplejpeg"].read(xy, (size, size), k)
                slow = made["pillow"].read(xy, (size, size), k)
                assert fast is not None and np.array_equal(fast, slow), (xy, k)
                if k == 1:
                    d = np.abs(fast.astype(np.int16) - reference(xy, (size, size)))
                    assert d.mean() < 0.5, xy
        for t in made.values():
            t.close()
    finally:
        reader.close()


def test_scaled_reads_into_a_given_buffer(cmu_40x_no_20x: Path) -> None:
    # a dirty buffer is fully overwritten, white outside the level included
    reader = OpenSlideReader(cmu_40x_no_20x)
    try:
        for xy in [(512, 256), (1888, 1888), (4000, 4000)]:
            want = reader.read_region_scaled(xy, 0, (1024, 1024), 2)
            buf = np.full((512, 512, 3), 7, dtype=np.uint8)
            got = reader.read_region_scaled(xy, 0, (1024, 1024), 2, out=buf)
            assert got is buf and np.array_equal(buf, want), xy
        with pytest.raises(SlideReadError, match="out must be uint8"):
            reader.read_region_scaled((0, 0), 0, (1024, 1024), 2, out=np.zeros((4, 4, 3)))
    finally:
        reader.close()


def test_a_level_simplejpeg_refuses_is_left_to_openslide(
    cmu_slide: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pillow decodes damaged tiles that libjpeg only warns about, where OpenSlide refuses them
    # (issue 25: one decode policy), so it is never the fallback decoder of a level
    import pathgls.tiling.jpeg_tiles as jt

    class Refusing:
        @staticmethod
        def decode_jpeg(*args, **kwargs):
            raise ValueError("Unsupported JPEG process")

    monkeypatch.setattr(jt, "simplejpeg", Refusing)
    reader = OpenSlideReader(cmu_slide)
    try:
        tiles = JpegTiles.probe(
            cmu_slide,
            level_dimensions=reader.dimensions,
            vendor="aperio",
            reference=lambda xy, size: reader.read_region(xy, 0, size),
        )
        assert tiles is None
    finally:
        reader.close()


def test_patches_read_without_resize_decode_tiles_to_openslides_exact_pixels(
    cmu_slide: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real CMU region is 20×: patches are read at level 0 without resize; pathgls decodes
    # the 240 px RGB-coded tiles itself (patches straddle tiles) and gets OpenSlide's pixels
    reader = open_slide(cmu_slide)
    try:
        plan = plan_read(reader, TilingConfig(patch_size=512))
        assert not plan.needs_resize and plan.resampling == "none"
        seen: list[int] = []
        real = reader.read_region_scaled

        def spy(xy, level, size, factor, *, out=None):
            seen.append(factor)
            return real(xy, level, size, factor, out=out)

        monkeypatch.setattr(reader, "read_region_scaled", spy)
        for xy in [(0, 0), (100, 37), (1488, 1488), (1900, 2700)]:  # the last over both edges
            buf = np.zeros((512, 512, 3), dtype=np.uint8)
            got = read_patch(reader, xy, plan, out=buf)
            assert got is buf
            assert np.array_equal(got, reader.read_region(xy, 0, (512, 512))), xy
        assert seen == [1, 1, 1, 1]
        off = plan_read(reader, TilingConfig(patch_size=512, scaled_decode=False))
        read_patch(reader, (0, 0), off)
        assert seen == [1, 1, 1, 1]  # turned off: OpenSlide reads it
    finally:
        reader.close()


def test_unaligned_requests_and_other_codecs_fall_back(shared_data: Path, cmu_slide: Path) -> None:
    reader = OpenSlideReader(cmu_slide)
    try:
        assert reader.read_region_scaled((1, 0), 0, (960, 960), 2) is None  # odd x
        assert reader.read_region_scaled((0, 0), 0, (961, 960), 2) is None  # odd size
        assert reader.read_region_scaled((0, 0), 0, (960, 960), 3) is None  # not a DCT scale
    finally:
        reader.close()
    # JPEG 2000 tiles (TCGA SVS; no mpp, so read as 40× by the user's --mpp): no scaled path,
    # read_patch reads and area-filters instead
    tcga = open_slide(shared_data / "slides" / "tcga-cr-7395-01a-01-ts1.svs", mpp=0.25)
    try:
        assert tcga.read_region_scaled((0, 0), 0, (1024, 1024), 2) is None
        plan = plan_read(tcga, TilingConfig(magnification=5, patch_size=128))
        assert (plan.level, plan.reduction) == (1, 4)
        patch = read_patch(tcga, (1024, 1024), plan)
        want = area_reduce(tcga.read_region((1024, 1024), 1, (512, 512)), 4)
        assert np.array_equal(patch, want)
    finally:
        tcga.close()


def test_a_probe_that_disagrees_with_openslide_is_refused(cmu_slide: Path) -> None:
    reader = OpenSlideReader(cmu_slide)
    try:

        def inverted(xy, size):
            return 255 - reader.read_region(xy, 0, size)

        tiles = JpegTiles.probe(
            cmu_slide, level_dimensions=reader.dimensions, vendor="aperio", reference=inverted
        )
        assert tiles is None
        assert (
            JpegTiles.probe(
                cmu_slide,
                level_dimensions=reader.dimensions,
                vendor="hamamatsu",
                reference=lambda xy, size: reader.read_region(xy, 0, size),
            )
            is None
        )
    finally:
        reader.close()


def test_area_reduce_is_the_rounded_block_mean() -> None:
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (64, 48, 3), dtype=np.uint8)
    for k in (2, 4):
        want = np.floor(img.reshape(64 // k, k, 48 // k, k, 3).mean(axis=(1, 3)) + 0.5)
        assert np.array_equal(area_reduce(img, k), want.astype(np.uint8))


def test_read_patch_at_40x_without_20x_level_uses_the_scaled_decode(
    cmu_40x_no_20x: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = open_slide(cmu_40x_no_20x)
    try:
        plan = plan_read(reader, TilingConfig())
        assert (plan.level, plan.read_size, plan.reduction) == (0, 1024, 2)
        want = area_reduce(reader.read_region((512, 512), 0, (1024, 1024)), 2)
        assert reader.read_region_scaled((0, 0), 0, (1024, 1024), 2) is not None  # probed

        def no_full_reads(*a, **k):
            raise AssertionError("the full-size region was read")

        monkeypatch.setattr(reader, "read_region", no_full_reads)
        got = read_patch(reader, (512, 512), plan)
        assert np.abs(got.astype(int) - want).mean() <= MEAN_BOUND
        monkeypatch.undo()
        # lanczos on request, and scaled decoding can be switched off (then it is exact area)
        lanczos = read_patch(
            reader, (512, 512), plan_read(reader, TilingConfig(resample="lanczos"))
        )
        assert lanczos.shape == got.shape and not np.array_equal(lanczos, want)
        exact = read_patch(reader, (512, 512), plan_read(reader, TilingConfig(scaled_decode=False)))
        assert np.array_equal(exact, want)
    finally:
        reader.close()


def test_threaded_streaming_equals_reading_in_order(cmu_40x_no_20x: Path) -> None:
    reader = open_slide(cmu_40x_no_20x)
    try:
        plan = plan_read(reader, TilingConfig())
        coords = np.array([(x, y) for y in range(0, 2400, 512) for x in range(0, 2400, 512)])
        serial = [b.images for b in stream_patches(reader, coords, plan, batch_size=4, workers=0)]
        threaded = [b.images for b in stream_patches(reader, coords, plan, batch_size=4, workers=2)]
        assert all(np.array_equal(a, b) for a, b in zip(serial, threaded, strict=True))
    finally:
        reader.close()


def test_tiling_config_refuses_an_unknown_filter() -> None:
    from pathgls.errors import ConfigError

    with pytest.raises(ConfigError, match="resample"):
        TilingConfig(resample="bicubic")


@pytest.mark.parametrize("shape", [(512, 512), (300, 500)])
def test_cut_windows_equals_cropping_each_window(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(1)
    batch = torch.from_numpy(rng.integers(0, 256, (3, *shape, 3), dtype=np.uint8))
    coords = window_coords(shape, 224, 224)
    cut = cut_windows(batch, coords, (224, 224))
    assert cut.shape == (3 * len(coords), 224, 224, 3)
    for i in range(3):
        for j, (x, y) in enumerate(coords):
            assert torch.equal(cut[i * len(coords) + j], batch[i, y : y + 224, x : x + 224])


def test_torch_threads_are_set_for_a_cpu_encoder_and_restored() -> None:
    from pathgls.config import StreamConfig
    from pathgls.errors import ConfigError
    from pathgls.features.extract import _torch_threads

    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    with _torch_threads(target, "cpu"):
        assert torch.get_num_threads() == target
    assert torch.get_num_threads() == before
    with _torch_threads(target, "cuda:0"):  # a GPU encoder keeps torch's CPU threads
        assert torch.get_num_threads() == before
    with _torch_threads(0, "cpu"):
        assert torch.get_num_threads() == before
    with pytest.raises(ConfigError, match="torch_threads"):
        StreamConfig(torch_threads=-1)


def test_a_bag_records_its_resampling_and_is_not_reused_with_another(
    tmp_path: Path, tiny_clip: Path, cmu_40x_no_20x: Path
) -> None:
    from pathgls.config import load_config
    from pathgls.encoders import build_encoder
    from pathgls.features.bags import validate_bag
    from pathgls.features.extract import extract_slide

    def run(**tiling):
        cfg = load_config(
            encoder={"name": f"hf:{tiny_clip}"}, tiling=tiling, stream={"batch_size": 8}
        )
        return extract_slide(
            slide=cmu_40x_no_20x, out_dir=tmp_path, encoder=build_encoder(cfg.encoder), config=cfg
        )

    first = run()
    assert first.status == "done", first.error
    meta = validate_bag(first.bag_path)
    assert (meta.resample, meta.scaled_decode) == ("area", True)
    assert run().status == "skipped"
    other = run(resample="lanczos")
    assert other.status == "failed" and "resample: 'lanczos' != 'area'" in other.error
