"""Synthetic Aperio pyramids from real pixels: OpenSlide opens them with the right metadata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pathgls.testing.synthetic import (
    tiled_source,
    upsampled_source,
    write_aperio_pyramid,
    write_mosaic_40x,
)

openslide = pytest.importorskip("openslide")


@pytest.fixture(scope="module")
def cmu_rgb(sample_slide: Path) -> np.ndarray:
    """The real CMU-1 H&E region (2220×2967, 0.499 µm/px; `pathgls data sample`), via OpenSlide."""
    with openslide.OpenSlide(str(sample_slide)) as slide:
        rgba = np.asarray(slide.read_region((0, 0), 0, slide.dimensions))
    return np.ascontiguousarray(rgba[..., :3])


def _read(slide, level: int, xy0: tuple[int, int], size: tuple[int, int]) -> np.ndarray:
    return np.asarray(slide.read_region(xy0, level, size))[..., :3].astype(np.int16)


def _reduce(rgb: np.ndarray, factor: int) -> np.ndarray:
    """Reference area-average: pad by edge replication to a multiple of factor, box-reduce."""
    h, w = rgb.shape[:2]
    padded = np.pad(rgb, ((0, -h % factor), (0, -w % factor), (0, 0)), mode="edge")
    return np.asarray(Image.fromarray(padded).reduce(factor))


def test_cmu_upsampled_to_40x_opens_with_aperio_metadata(
    cmu_rgb: np.ndarray, tmp_path: Path
) -> None:
    src = upsampled_source(cmu_rgb, factor=2)
    assert (src.width, src.height) == (4440, 5934)
    out = write_aperio_pyramid(
        tmp_path / "cmu-40x.svs", source=src, width=src.width, height=src.height, mpp=0.25,
        magnification=40, extra_properties={"Source": "CMU-1 small region, bilinear 2x"},
    )  # fmt: skip
    assert out == tmp_path / "cmu-40x.svs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmu-40x.svs"]  # no temp files left

    with openslide.OpenSlide(str(out)) as slide:
        props = slide.properties
        assert props[openslide.PROPERTY_NAME_VENDOR] == "aperio"
        assert float(props[openslide.PROPERTY_NAME_MPP_X]) == 0.25
        assert float(props[openslide.PROPERTY_NAME_MPP_Y]) == 0.25
        assert float(props[openslide.PROPERTY_NAME_OBJECTIVE_POWER]) == 40
        assert props["aperio.Source"] == "CMU-1 small region, bilinear 2x"
        assert slide.dimensions == (4440, 5934)
        assert slide.level_count >= 3
        for k, d in enumerate(slide.level_downsamples):
            assert d == pytest.approx(2**k, rel=0.01)
        # The thumbnail is read first on purpose: the levels must still decode afterwards.
        thumb = slide.associated_images["thumbnail"]
        assert max(thumb.size) <= 1024
        for x, y, w, h in [(0, 0, 600, 500), (1234, 2345, 700, 900), (4000, 5500, 440, 434)]:
            diff = np.abs(_read(slide, 0, (x, y), (w, h)) - src(x, y, w, h)).mean()
            assert diff < 3, f"level 0 at {(x, y)} differs by {diff:.2f} gray levels"
        x, y, w, h = 800, 1200, 1600, 1600  # level-0 region read at level 2
        ref = _reduce(src(x, y, w, h), 4)
        assert np.abs(_read(slide, 2, (x, y), (w // 4, h // 4)) - ref).mean() < 5


@pytest.mark.parametrize("factor", [2, 4])
def test_callable_source_odd_size_is_exact_with_deflate(
    cmu_rgb: np.ndarray, tmp_path: Path, factor: int
) -> None:
    src = tiled_source(cmu_rgb[:700, :900])
    width, height = 1000, 777  # not multiples of the tile size
    out = write_aperio_pyramid(
        tmp_path / "odd.svs", source=src, width=width, height=height, mpp=0.5, magnification=20,
        tile_size=128, level_factor=factor, min_size=64, compression="deflate",
    )  # fmt: skip
    expected = src(0, 0, width, height)
    with openslide.OpenSlide(str(out)) as slide:
        assert slide.associated_images["thumbnail"].size == (width, height)
        assert slide.level_count == (5 if factor == 2 else 3)  # down to <= 64 px
        for level in range(slide.level_count):
            lw, lh = slide.level_dimensions[level]
            assert (lh, lw) == expected.shape[:2]
            got = _read(slide, level, (0, 0), (lw, lh))
            assert np.array_equal(got, expected), f"level {level} differs"
            expected = _reduce(expected, factor)


def test_array_source_and_levels_down_and_bigtiff(cmu_rgb: np.ndarray, tmp_path: Path) -> None:
    import tifffile

    rgb = cmu_rgb[:1000, :1200]
    out = write_aperio_pyramid(
        tmp_path / "a.svs", source=rgb, width=1200, height=1000, mpp=0.5, magnification=20,
        levels_down=1, bigtiff=True, thumbnail=False, tile_size=512,
    )  # fmt: skip
    with tifffile.TiffFile(out) as tif:
        assert tif.is_bigtiff
        assert tif.pages[0].description.startswith("Aperio Image Library")
        assert tif.pages[0].photometric == tifffile.PHOTOMETRIC.YCBCR
    with openslide.OpenSlide(str(out)) as slide:
        assert slide.level_dimensions == ((1200, 1000), (600, 500))
        assert "thumbnail" not in slide.associated_images
        assert np.abs(_read(slide, 0, (0, 0), (1200, 1000)) - rgb).mean() < 4


def test_region_key_encodes_repeated_tiles_once(cmu_rgb: np.ndarray, tmp_path: Path) -> None:
    src = tiled_source(cmu_rgb, tile=256, mirror=False)
    calls = []

    class Counting:
        def __call__(self, x: int, y: int, w: int, h: int) -> np.ndarray:
            calls.append((x, y, w, h))
            return src(x, y, w, h)

        def region_key(self, x: int, y: int, w: int, h: int):
            return src.region_key(x, y, w, h)

    period_tiles = (src.block.shape[0] // 256) * (src.block.shape[1] // 256)
    width, height = src.block.shape[1] * 3, src.block.shape[0] * 2
    out = write_aperio_pyramid(
        tmp_path / "rep.svs", source=Counting(), width=width, height=height, mpp=0.5,
        magnification=20, tile_size=256, workers=1,
    )  # fmt: skip
    assert len(calls) == period_tiles  # 6 periods, each distinct tile made once
    with openslide.OpenSlide(str(out)) as slide:
        x, y = src.block.shape[1] * 2 + 100, src.block.shape[0] + 50
        assert np.abs(_read(slide, 0, (x, y), (300, 200)) - src(x, y, 300, 200)).mean() < 4


def test_upsampled_source_modes(cmu_rgb: np.ndarray) -> None:
    small = cmu_rgb[:40, :50]
    near = upsampled_source(small, factor=3, mode="nearest")
    full = near(0, 0, 150, 120)
    assert np.array_equal(full, np.repeat(np.repeat(small, 3, axis=0), 3, axis=1))
    assert np.array_equal(near(7, 5, 31, 23), full[5:28, 7:38])

    bil = upsampled_source(small, factor=2)
    full = bil(0, 0, 100, 80)
    assert np.array_equal(bil(13, 17, 33, 41), full[17:58, 13:46])
    assert np.abs(full[::2, ::2].astype(int) - small).mean() < 8  # close to the original
    flat = upsampled_source(np.full((4, 4, 3), 77, np.uint8), factor=4)
    assert (flat(0, 0, 16, 16) == 77).all()
    with pytest.raises(ValueError, match="outside"):
        bil(90, 0, 20, 10)


def test_tiled_source_repeats_and_mirrors(cmu_rgb: np.ndarray) -> None:
    small = cmu_rgb[:10, :12]
    mirrored = tiled_source(small)(0, 0, 48, 40)
    assert np.array_equal(mirrored[:10, :12], small)
    assert np.array_equal(mirrored[:10, 12:24], small[:, ::-1])
    assert np.array_equal(mirrored[10:20, :12], small[::-1])
    plain = tiled_source(small, mirror=False)
    assert np.array_equal(plain(12, 20, 12, 10), small)
    assert np.array_equal(plain(5, 7, 30, 20), plain(0, 0, 48, 40)[7:27, 5:35])
    assert tiled_source(cmu_rgb, tile=256, mirror=False).block.shape == (2816, 2048, 3)


def test_bad_inputs_are_clear_errors(cmu_rgb: np.ndarray, tmp_path: Path) -> None:
    out = tmp_path / "bad.svs"
    common = {"width": 300, "height": 200, "mpp": 0.5, "magnification": 20}
    with pytest.raises(ValueError, match="use upsampled_source or tiled_source"):
        write_aperio_pyramid(out, source=cmu_rgb, **common)
    with pytest.raises(ValueError, match="multiple of 16"):
        write_aperio_pyramid(out, source=cmu_rgb[:200, :300], tile_size=100, **common)
    with pytest.raises(ValueError, match="compression"):
        write_aperio_pyramid(out, source=cmu_rgb[:200, :300], compression="lzw", **common)
    with pytest.raises(ValueError, match="smaller than the slide"):
        write_aperio_pyramid(out, source=upsampled_source(cmu_rgb[:10, :10], factor=2), **common)

    def wrong(x: int, y: int, w: int, h: int) -> np.ndarray:
        return np.zeros((h, w), np.uint8)

    with pytest.raises(ValueError, match=r"expected \(200, 256, 3\) uint8"):
        write_aperio_pyramid(out, source=wrong, **common)
    assert list(tmp_path.iterdir()) == []  # no partial output left behind
    with pytest.raises(ValueError, match="smaller than one"):
        tiled_source(cmu_rgb[:100, :100], tile=256)


def test_mosaic_40x_without_a_20x_level(cmu_rgb: np.ndarray, tmp_path: Path) -> None:
    # the benchmarks' slide: real 20× pixels upsampled 2× at 40×, levels 40×, 10×, 2.5×
    path = write_mosaic_40x(tmp_path / "m.svs", rgb=cmu_rgb[:600, :500], size=3000, level_factor=4)
    with openslide.OpenSlide(str(path)) as s:
        assert s.level_dimensions[:3] == ((3000, 3000), (750, 750), (188, 188))
        assert float(s.properties["openslide.mpp-x"]) == pytest.approx(0.25)
        got = _read(s, 0, (0, 0), (1000, 1200))
    want = cmu_rgb[:600, :500].repeat(2, axis=0).repeat(2, axis=1).astype(np.int16)
    assert np.abs(got - want).mean() < 3.0  # JPEG quality 90 on real texture
    assert np.abs(got[:1000, :1000] - want[:1000, :1000]).max() > 0  # it is JPEG, not raw
