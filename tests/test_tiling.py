"""Slide reading, resolution, tissue mask, grid and patch streaming on the real shared data."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pathgls.config import TilingConfig
from pathgls.errors import (
    MissingResolutionError,
    NoSlidesFoundError,
    ResolutionError,
    SlideOpenError,
    SlideReadError,
)
from pathgls.tiling import (
    ImageReader,
    find_slides,
    make_grid,
    open_slide,
    plan_read,
    stream_patches,
    tissue_mask,
)
from pathgls.tiling.grid import grid_origins
from pathgls.tiling.stream import read_patch

CFG = TilingConfig()


def test_cmu_is_read_at_level0_without_resize(cmu_slide: Path) -> None:
    r = open_slide(cmu_slide)
    assert r.dimensions == (2220, 2967)
    assert r.mpp == pytest.approx(0.499)
    assert r.mpp_source == "metadata"
    plan = plan_read(r, CFG)
    # 0.499 µm/px is within the 5% tolerance of 0.5: read 512 px at level 0, no resampling.
    assert (plan.level, plan.read_size, plan.patch_size_level0) == (0, 512, 512)
    assert not plan.needs_resize
    assert plan.level0_magnification == pytest.approx(10 / 0.499)


def test_cmu_grid_is_level0_and_covers_the_tissue(cmu_slide: Path) -> None:
    r = open_slide(cmu_slide)
    g = make_grid(r, CFG)
    assert g.coords.dtype == np.int64 and g.coords.shape[1] == 2
    assert len(g) >= 10
    assert np.all(g.coords % 512 == 0)
    assert np.all(g.tissue_fraction >= CFG.tissue_threshold)
    # the slide's lower border (2560..2967 px) holds tissue: edge patches must be there
    assert (g.coords[:, 1] == 2560).any()
    # row-major, deterministic order
    order = np.lexsort((g.coords[:, 0], g.coords[:, 1]))
    assert np.array_equal(order, np.arange(len(g)))
    # every kept patch really has tissue: its pixels are far from white glass
    for x, y in g.coords[:3]:
        patch = read_patch(r, (int(x), int(y)), g.plan)
        assert patch.shape == (512, 512, 3)
        assert patch.mean() < 225


def test_40x_pyramid_gives_the_same_20x_patches(cmu_slide: Path, cmu_40x: Path) -> None:
    r20, r40 = open_slide(cmu_slide), open_slide(cmu_40x)
    assert r40.mpp == pytest.approx(0.2495)
    assert r40.level_count >= 3
    p40 = plan_read(r40, CFG)
    # level 1 of the 40× pyramid is 0.499 µm/px: read there, no resize, 1024 level-0 px a patch
    assert (p40.level, p40.read_size, p40.patch_size_level0) == (1, 512, 1024)
    g20, g40 = make_grid(r20, CFG), make_grid(r40, CFG)
    c20 = {tuple(c) for c in g20.coords.tolist()}
    c40 = {(x // 2, y // 2) for x, y in g40.coords.tolist()}
    assert np.all(g40.coords % 1024 == 0)  # level-0 coordinates of the 40× slide
    assert len(c20 & c40) >= 0.9 * max(len(c20), len(c40))
    for x, y in sorted(c20 & c40)[:4]:
        a = read_patch(r20, (x, y), g20.plan).astype(np.float64)
        b = read_patch(r40, (2 * x, 2 * y), p40).astype(np.float64)
        assert np.abs(a.mean((0, 1)) - b.mean((0, 1))).max() < 2.0
        assert np.abs(a.std((0, 1)) - b.std((0, 1))).max() < 4.0
        assert np.corrcoef(a.ravel(), b.ravel())[0, 1] > 0.9


def test_level0_only_40x_reads_1024_and_resizes(cmu_slide: Path) -> None:
    r20 = open_slide(cmu_slide)
    region = r20.read_region((512, 1024), 0, (512, 512))
    up = np.asarray(Image.fromarray(region).resize((1024, 1024), Image.Resampling.NEAREST))
    r40 = ImageReader.from_array(up, name="up", mpp=0.2495)
    plan = plan_read(r40, CFG)
    assert (plan.level, plan.read_size, plan.patch_size_level0, plan.needs_resize) == (
        0,
        1024,
        1024,
        True,
    )
    patch = read_patch(r40, (0, 0), plan)
    assert patch.shape == (512, 512, 3)
    assert np.abs(patch.astype(int) - region.astype(int)).mean() < 1.0


def test_missing_mpp_is_an_error_unless_given(slides_dir: Path) -> None:
    tcga = slides_dir / "tcga-cr-7395-01a-01-ts1.svs"
    r = open_slide(tcga)
    assert r.mpp is None
    with pytest.raises(MissingResolutionError, match="--mpp"):
        plan_read(r, CFG)
    r = open_slide(tcga, mpp=0.25)
    assert r.mpp_source == "user"
    assert plan_read(r, CFG).patch_size_level0 == 1024


def test_absurd_resolution_is_refused(slides_dir: Path) -> None:
    r = open_slide(slides_dir / "openslide-boxes.tiff")  # 72-dpi TIFF default → 352 µm/px
    with pytest.raises(ResolutionError, match="coarser"):
        plan_read(r, CFG)
    # metadata (or --mpp) far too fine: zero patches, or an overflow, without this check
    for mpp, shown in ((1e-5, "1e-05"), (1e-30, "1e-30"), (float("nan"), "nan")):
        r = open_slide(slides_dir / "cmu-1-small-region.svs", mpp=mpp)
        with pytest.raises(ResolutionError, match=rf"level 0 is {shown} µm/px .*pass --mpp"):
            plan_read(r, CFG)


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("broken.svs", SlideOpenError, "not a slide format"),
        ("openslide-unopenable.tiff", SlideOpenError, "neither OpenSlide nor Pillow"),
        ("openslide-unreadable.svs", SlideReadError, "reading pixels failed"),
    ],
)
def test_bad_slides_raise_clear_errors(
    slides_dir: Path, name: str, error: type, message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        open_slide(slides_dir / name)
    assert name in str(info.value)


def test_zero_byte_file_and_empty_dir(tmp_path: Path) -> None:
    empty = tmp_path / "empty.svs"
    empty.write_bytes(b"")
    with pytest.raises(SlideOpenError, match="empty"):
        open_slide(empty)
    d = tmp_path / "nothing"
    d.mkdir()
    (d / "notes.txt").write_text("no slides here")
    with pytest.raises(NoSlidesFoundError, match="no slides found"):
        find_slides(d)


def test_tiff_openslide_cannot_open_is_read_as_image(slides_dir: Path) -> None:
    with pytest.warns(UserWarning, match="read as a plain image"):
        r = open_slide(slides_dir / "kidney-48-5.tif")
    assert isinstance(r, ImageReader)
    assert r.mpp_source == "default"
    assert r.read_region((0, 0), 0, (32, 32)).shape == (32, 32, 3)


def test_dicom_and_find_slides(slides_dir: Path) -> None:
    found = find_slides(slides_dir)
    names = [p.name for p in found]
    assert "cmu-1-small-region.svs" in names
    assert sum(n.endswith(".dcm") for n in names) == 1  # one DICOM series = one slide
    r = open_slide(slides_dir / "openslide-boxes_0.dcm")
    assert r.level_count >= 1


# --- tissue --------------------------------------------------------------------------------

TISSUE = [
    "tissue-level0-4302-10273-4814-10785.png",
    "tissue-level0-7352-11762-7864-12274.png",
    "high-nuclei-score-level0.png",
    "medium-nuclei-score-level0.png",
    "low-nuclei-score-level0.png",  # adipose: tissue with much white between membranes
]
NOT_TISSUE = [
    "no-tissue.png",
    "no-tissue-red-pen.png",
    "no-tissue-green-pen.png",
    "almost-white-1.png",
]


def _mask_fraction(path: Path, mpp: float) -> float:
    """Tissue fraction of a 40× level-0 tile seen at ``mpp`` µm/px, as the slide mask sees it."""
    im = Image.open(path).convert("RGB")
    f = mpp / 0.25
    small = im.resize(
        (max(1, round(im.width / f)), max(1, round(im.height / f))), Image.Resampling.BOX
    )
    return tissue_mask(np.asarray(small), mpp=mpp).tissue_fraction


@pytest.mark.parametrize("mpp", [2.0, 4.0])
@pytest.mark.parametrize("name", TISSUE)
def test_tissue_tiles_are_kept(tiles_dir: Path, name: str, mpp: float) -> None:
    assert _mask_fraction(tiles_dir / name, mpp) >= 0.5


@pytest.mark.parametrize("mpp", [2.0, 4.0])
@pytest.mark.parametrize("name", NOT_TISSUE)
def test_glass_and_pen_tiles_are_rejected(tiles_dir: Path, name: str, mpp: float) -> None:
    assert _mask_fraction(tiles_dir / name, mpp) < 0.1


def test_pen_is_cut_out_of_a_slide_thumbnail(tiles_dir: Path) -> None:
    rgb = np.asarray(Image.open(tiles_dir / "thumb-tcga-red-pen.png").convert("RGB"))
    m = tissue_mask(rgb, mpp=32.0).mask
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    ink = (r > 150) & (g < 60) & (b < 80)  # saturated red marker
    assert ink.sum() > 1000
    assert m[ink].mean() < 0.02  # ink is not tissue
    assert m.mean() > 0.4  # the tissue beside it is


# --- grid and streaming --------------------------------------------------------------------


def test_grid_origins_cover_the_axis() -> None:
    assert grid_origins(1000, 512, 512).tolist() == [0, 512]
    assert grid_origins(1024, 512, 512).tolist() == [0, 512]
    assert grid_origins(300, 512, 512).tolist() == [0]
    assert grid_origins(1000, 512, 256).tolist() == [0, 256, 512]


def test_overlap_and_threshold(cmu_slide: Path) -> None:
    r = open_slide(cmu_slide)
    g0 = make_grid(r, TilingConfig(tissue_threshold=0.0))
    assert len(g0) == 5 * 6  # every patch position, edges included
    g_ov = make_grid(r, TilingConfig(overlap=256))
    assert g_ov.step_level0 == 256
    assert len(g_ov) > len(make_grid(r, CFG))


class _CountingReader:
    """Wraps a reader and records the largest number of concurrent reads."""

    def __init__(self, inner) -> None:
        self.inner, self.lock, self.active, self.peak, self.calls = inner, threading.Lock(), 0, 0, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _counted(self, read, *args, **kwargs):
        with self.lock:
            self.active += 1
            self.calls += 1
            self.peak = max(self.peak, self.active)
        try:
            return read(*args, **kwargs)
        finally:
            with self.lock:
                self.active -= 1

    def read_region(self, xy, level, size):
        return self._counted(self.inner.read_region, xy, level, size)

    def read_region_scaled(self, xy, level, size, factor, *, out=None):
        # pathgls's own JPEG tile decoding (what JPEG-tiled SVS levels are read with)
        return self._counted(self.inner.read_region_scaled, xy, level, size, factor, out=out)


def test_stream_is_ordered_batched_and_parallel(cmu_slide: Path) -> None:
    r = open_slide(cmu_slide)
    g = make_grid(r, CFG)
    seq = list(stream_patches(r, g.coords, g.plan, batch_size=3, workers=0))
    counting = _CountingReader(r)
    par = list(stream_patches(counting, g.coords, g.plan, batch_size=3, workers=2, prefetch=1))
    assert [b.start for b in par] == list(range(0, len(g), 3))
    assert all(len(b.coords) <= 3 for b in par)
    for a, b in zip(seq, par, strict=True):
        assert np.array_equal(a.coords, b.coords)
        assert np.array_equal(a.images, b.images)
    assert counting.calls == len(g)
    assert 1 <= counting.peak <= 2
    # resuming from an index yields the same tail
    tail = list(stream_patches(r, g.coords, g.plan, batch_size=3, workers=2, start=6))
    assert tail[0].start == 6
    assert np.array_equal(tail[0].images, seq[2].images)


@pytest.mark.parametrize("workers", [0, 2])
def test_stream_reuses_a_fixed_ring_of_buffers(cmu_slide: Path, workers: int) -> None:
    # with reuse_buffers every batch lands in one of workers × prefetch + 1 arrays, and each
    # batch, used before the next is asked for, equals a freshly allocated one
    r = open_slide(cmu_slide)
    g = make_grid(r, CFG)
    fresh = [b.images.copy() for b in stream_patches(r, g.coords, g.plan, batch_size=2)]
    owners: list[np.ndarray] = []
    n = 0
    for i, b in enumerate(
        stream_patches(
            r, g.coords, g.plan, batch_size=2, workers=workers, prefetch=2, reuse_buffers=True
        )
    ):
        assert np.array_equal(b.images, fresh[i]), i
        if not any(np.shares_memory(b.images, o) for o in owners):
            owners.append(b.images)
        n += 1
    assert n == len(fresh) > 5
    assert len(owners) == (1 if workers == 0 else 5)


def test_stream_propagates_read_errors(slides_dir: Path) -> None:
    import openslide

    class Failing:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def read_region(self, xy, level, size):
            if xy[1] > 0:
                raise SlideReadError("boom", path="x")
            return self.inner.read_region(xy, level, size)

        def read_region_scaled(self, xy, level, size, factor, *, out=None):
            if xy[1] > 0:
                raise SlideReadError("boom", path="x")
            return self.inner.read_region_scaled(xy, level, size, factor, out=out)

    r = open_slide(slides_dir / "cmu-1-small-region.svs")
    g = make_grid(r, CFG)
    it = stream_patches(Failing(r), g.coords, g.plan, batch_size=1, workers=2)
    with pytest.raises(SlideReadError, match="boom"):
        list(it)
    assert openslide  # imported to make sure the binary wheel is present


def test_mask_size_is_capped_for_huge_slides(cmu_slide: Path) -> None:
    from pathgls.tiling.tissue import slide_tissue_mask

    r = open_slide(cmu_slide)
    m = slide_tissue_mask(r, TilingConfig(mask_max_side=128), mpp0=r.mpp)
    assert max(m.mask.shape) <= 129 and m.downsample == pytest.approx(
        2967 / m.mask.shape[0], rel=0.02
    )
    assert 0.2 < m.tissue_fraction < 0.8


def test_heap_tuning_applies_on_glibc() -> None:
    import platform

    from pathgls.io.memory import limit_heap_fragmentation

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt tuning is glibc-only")
    assert limit_heap_fragmentation() is True


def test_the_mask_pass_does_not_fill_the_readers_tile_cache(cmu_slide: Path) -> None:
    """The mask thumbnail reads a whole coarse level. Through the reader's own OpenSlide handle
    its tiles stayed in that handle's 32 MiB tile cache for the rest of the extraction, which a
    large slide fills and a small one does not: on a 40× pyramid without a 20× level (patches
    decoded by pathgls, so streaming never evicts them) that was +25 MiB of peak RSS at 60k²
    against 20k² (bench_tiling). It now goes through a second, uncached handle; same pixels."""
    from pathgls.tiling.readers import _read_downsampled, read_downsampled
    from pathgls.tiling.tissue import slide_tissue_mask, tissue_mask

    r = open_slide(cmu_slide)
    own = r._slide.read_region
    calls: list[tuple] = []

    def counting(*args, **kwargs):
        calls.append(args)
        return own(*args, **kwargs)

    r._slide.read_region = counting
    m = slide_tissue_mask(r, CFG, mpp0=r.mpp)
    downsample = CFG.mask_mpp / r.mpp  # what slide_tissue_mask asks for on this small slide
    thumb = read_downsampled(r, downsample)
    assert calls == []  # nothing read through the long-lived handle
    with r.one_pass() as other:
        assert other._slide is not r._slide
    # identical pixels, hence an identical mask, to reading through the reader itself
    direct = _read_downsampled(r, downsample, strip_pixels=1 << 20)
    assert calls and np.array_equal(thumb, direct)
    again = tissue_mask(direct, mpp=r.mpp * m.downsample, config=CFG)
    assert m.mask.any() and np.array_equal(m.mask, again.mask) and m.threshold == again.threshold


def test_jpeg_tile_tables_cost_16_bytes_a_tile(cmu_slide: Path) -> None:
    """The scaled decoder keeps each level's tile offsets and byte counts as int64 arrays, not
    tuples of Python ints (~72 bytes a tile: 3.8 MiB for the 55k tiles of a 60k² level)."""
    r = open_slide(cmu_slide)
    tiles = r._scaled_level(0)
    assert tiles is not None
    lv = tiles._level
    assert lv.offsets.dtype == lv.counts.dtype == np.int64
    assert lv.offsets.nbytes + lv.counts.nbytes == 16 * len(lv.offsets) > 0
