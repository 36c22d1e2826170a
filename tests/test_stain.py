"""Batched Macenko stain perturbation and normalisation (pathgls.attacks.stain).

Parity is against torchstain's numpy Macenko on the same pixels; the tiles are the real H&E and
IHC tiles of ../shared/data/tiles and scikit-image's IHC sample.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from pathgls.attacks import (
    HE_REFERENCE,
    MAX_CONCENTRATION_REFERENCE,
    StainConfig,
    StainInputError,
    StainTarget,
    fit_stain,
    fit_target,
    normalize_stain,
    perturb_stain,
    stain_factors,
)
from pathgls.attacks.quantiles import masked_quantile, masked_quantiles
from pathgls.errors import ConfigError

HE_TILES = [
    "tissue-level0-4302-10273-4814-10785.png",
    "tissue-level0-7352-11762-7864-12274.png",
    "high-nuclei-score-level0.png",
    "medium-nuclei-score-level0.png",
    "low-nuclei-score-level0.png",
]
IHC_TILES = ["kidney-ihc-level0-310-500-360-530.png"]
NEAR_WHITE = ["almost-white-1.png", "no-tissue.png", "almost-white-ihc.png"]
TILE_A = "tissue-level0-4302-10273-4814-10785.png"
TILE_B = "tissue-level0-7352-11762-7864-12274.png"


def _read(tiles_dir, name: str) -> np.ndarray:
    return np.asarray(Image.open(tiles_dir / name).convert("RGB"))


def _ihc_sample() -> np.ndarray:
    skimage_data = pytest.importorskip("skimage.data")
    return skimage_data.immunohistochemistry()


def _torchstain_fit(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """torchstain's numpy Macenko stain matrix and max concentrations of ``image``."""
    torchstain = pytest.importorskip("torchstain")
    normalizer = torchstain.normalizers.MacenkoNormalizer(backend="numpy")
    normalizer.fit(image, Io=240, alpha=1, beta=0.15)
    return np.asarray(normalizer.HERef), np.asarray(normalizer.maxCRef)


def _signed(he: np.ndarray) -> np.ndarray:
    """Columns with a non-negative sum (a stain vector and its negation are the same stain)."""
    return he * np.where(he.sum(axis=0) < 0, -1.0, 1.0)


@pytest.fixture(scope="module")
def tile_a(tiles_dir) -> np.ndarray:
    return _read(tiles_dir, TILE_A)


@pytest.fixture(scope="module")
def tile_b(tiles_dir) -> np.ndarray:
    return _read(tiles_dir, TILE_B)


# --- parity with torchstain -----------------------------------------------------------------


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("name", HE_TILES + IHC_TILES + ["skimage-ihc"])
def test_stain_matrix_matches_torchstain(tiles_dir, name, precision):
    image = _ihc_sample() if name == "skimage-ihc" else _read(tiles_dir, name)
    ref_he, ref_max = _torchstain_fit(image)
    fit = fit_stain(images=image, config=StainConfig(precision=precision))
    assert fit.valid.tolist() == [True] and fit.flags == [None]
    he = fit.stain_matrices[0].numpy()
    # Same ordering rule (hematoxylin = larger red OD first): compare columns as they come.
    assert np.abs(_signed(he) - _signed(ref_he)).max() <= 1e-3
    assert np.abs(fit.max_concentrations[0].numpy() - ref_max).max() <= 1e-3
    if precision == "float64":  # the same arithmetic as torchstain, to rounding
        assert np.abs(he - ref_he).max() <= 1e-9
    # Unit stain vectors with positive OD, hematoxylin's red OD the larger.
    np.testing.assert_allclose(np.linalg.norm(he, axis=0), 1.0, atol=1e-6)
    assert he[0, 0] > he[0, 1]


def test_h_and_e_are_told_apart(tile_a):
    he = fit_stain(images=tile_a).stain_matrices[0].numpy()
    # Hematoxylin absorbs red far more than eosin does; eosin's green OD dominates its vector.
    assert np.all(he > 0)
    assert he[0, 0] > 0.5 and he[0, 1] < 0.4
    assert np.argmax(he[:, 1]) == 1
    # Not the reference matrix by accident: a real tile's stains differ from it.
    assert np.abs(he - np.array(HE_REFERENCE)).max() > 0.01


def test_perturbed_pixels_match_a_numpy_reconstruction(tile_a):
    factors = stain_factors(image_ids=["a"], seed=7)[0].numpy()
    out = perturb_stain(images=tile_a, image_ids="a", seed=7).images
    he, _ = _torchstain_fit(tile_a)
    od = -np.log((tile_a.reshape(-1, 3).astype(np.float64) + 1) / 240)
    conc = np.linalg.lstsq(he, od.T, rcond=None)[0] * factors[:, None]
    ref = np.rint(np.clip(240 * np.exp(-he @ conc), 0, 255)).T.reshape(tile_a.shape)
    diff = np.abs(out.astype(np.int16) - ref.astype(np.int16))
    assert diff.max() <= 1
    assert (diff > 0).mean() < 1e-3  # float32 vs float64 rounding only
    # The perturbation is visible: not the identity.
    assert np.abs(out.astype(np.int16) - tile_a.astype(np.int16)).mean() > 1.0


@pytest.mark.parametrize("width", [1000, 40_000])
def test_masked_quantile_matches_numpy_percentile(width):
    gen = torch.Generator().manual_seed(width)
    values = torch.randn(6, width, generator=gen)
    # A row whose stride-17 sample sees only its minimum: the exact fallback must take over.
    values[5] = (torch.arange(width) % 17 != 0).float()
    keep = torch.tensor([[0.9], [0.5], [0.05], [0.003], [0.0], [1.0]])
    mask = torch.rand(6, width, generator=gen) < keep
    mask[5] = True
    for q in (0.0, 0.01, 0.37, 0.5, 0.99, 1.0):
        got = masked_quantile(values, q, mask)
        for r in range(6):
            kept = values[r][mask[r]].double().numpy()
            expected = np.percentile(kept, 100 * q) if kept.size else 0.0
            assert got[r].item() == pytest.approx(expected, abs=1e-6), (q, r)
        np.testing.assert_allclose(
            masked_quantile(values, q).numpy(),
            np.percentile(values.double().numpy(), 100 * q, axis=1),
            rtol=0,
            atol=1e-6,
        )
    # Both tails at once, float64, ties.
    qs = [0.01, 0.02, 0.98, 0.99]
    ties = torch.randint(0, 50, (6, width), generator=gen).double()
    both = masked_quantiles(ties, qs, mask)
    for r in range(6):
        kept = ties[r][mask[r]].numpy()
        expected = np.percentile(kept, [100 * q for q in qs]) if kept.size else np.zeros(4)
        np.testing.assert_allclose(both[r].numpy(), expected, atol=1e-9)


# --- reproducibility --------------------------------------------------------------------------


def test_same_seed_same_output_other_seed_other_output(tile_a):
    first = perturb_stain(images=tile_a, image_ids="tile-a", seed=1)
    again = perturb_stain(images=tile_a.copy(), image_ids="tile-a", seed=1)
    other = perturb_stain(images=tile_a, image_ids="tile-a", seed=2)
    other_id = perturb_stain(images=tile_a, image_ids="tile-b", seed=1)
    assert np.array_equal(first.images, again.images)
    assert torch.equal(first.factors, again.factors)
    assert not torch.equal(first.factors, other.factors)
    assert not np.array_equal(first.images, other.images)
    assert not np.array_equal(first.images, other_id.images)
    # The estimate does not depend on the seed, only the factors do.
    assert torch.equal(first.stain_matrices, other.stain_matrices)


def test_factors_are_uniform_in_range_and_stable():
    ids = [f"slide-{i}" for i in range(2000)]
    factors = stain_factors(image_ids=ids, seed=3).numpy()
    assert factors.shape == (2000, 2)
    assert factors.min() >= 0.7 and factors.max() <= 1.3
    assert abs(factors.mean() - 1.0) < 0.02  # U(0.7, 1.3): mean 1, sd 0.17
    assert abs(factors.std() - 0.6 / np.sqrt(12)) < 0.01
    assert abs(np.corrcoef(factors[:, 0], factors[:, 1])[0, 1]) < 0.1
    # Pinned: a change in the hashing or the drawing would silently change every run's images.
    pinned = stain_factors(image_ids=["slide-0@1024,2048"], seed=0)[0].tolist()
    assert pinned == pytest.approx([0.9658638674193976, 0.8288693775420088], abs=1e-15)
    assert torch.equal(
        stain_factors(image_ids=[42], seed=0), stain_factors(image_ids=["42"], seed=0)
    )
    narrow = stain_factors(image_ids=ids[:50], seed=3, config=StainConfig(factor_low=0.9))
    assert narrow.min() >= 0.9


def test_output_does_not_depend_on_the_batch(tiles_dir, tile_a, tile_b):
    others = [_read(tiles_dir, "low-nuclei-score-level0.png"), _read(tiles_dir, "no-tissue.png")]
    batch = np.stack([tile_b, others[0], tile_a, others[1]])
    ids = ["b", "low", "a", "white"]
    together = perturb_stain(images=batch, image_ids=ids, seed=11)
    alone = perturb_stain(images=tile_a, image_ids="a", seed=11)
    assert np.array_equal(together.images[2], alone.images)
    assert torch.equal(together.factors[2], alone.factors[0])
    np.testing.assert_allclose(together.stain_matrices[2], alone.stain_matrices[0], atol=1e-12)
    for max_batch in (1, 3, 4):
        chunked = perturb_stain(
            images=batch, image_ids=ids, seed=11, config=StainConfig(max_batch=max_batch)
        )
        assert np.array_equal(chunked.images, together.images)
    assert together.transformed.tolist() == [True, True, True, False]


# --- what is left alone -----------------------------------------------------------------------


@pytest.mark.parametrize("name", NEAR_WHITE)
def test_near_white_tiles_are_returned_unchanged_and_flagged(tiles_dir, name):
    image = _read(tiles_dir, name)
    result = perturb_stain(images=image, image_ids=name, seed=0)
    assert np.array_equal(result.images, image)
    assert result.transformed.tolist() == [False]
    assert result.flags[0].startswith("too little tissue")
    assert result.factors.tolist() == [[1.0, 1.0]]
    assert torch.all(result.stain_matrices == 0)
    normalised = normalize_stain(images=image)
    assert np.array_equal(normalised.images, image) and normalised.flags[0] is not None


def _pathological() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    two = np.zeros((64, 64, 3), np.uint8)
    two[:32] = (150, 60, 120)
    two[32:] = (90, 30, 60)
    return {
        "black": np.zeros((64, 64, 3), np.uint8),
        "white": np.full((64, 64, 3), 255, np.uint8),
        "one colour": np.broadcast_to(np.array([150, 80, 120], np.uint8), (64, 64, 3)).copy(),
        "two colours": two,
        "one pixel": np.array([[[120, 60, 150]]], np.uint8),
        "thin strip": rng.integers(0, 200, (1, 50, 3), dtype=np.uint8),
        "noise": rng.integers(0, 256, (64, 64, 3), dtype=np.uint8),
        "empty": np.zeros((0, 5, 3), np.uint8),
    }


@pytest.mark.parametrize("name", list(_pathological()))
def test_pathological_images_never_give_nan(name):
    image = _pathological()[name]
    for result in (
        perturb_stain(images=image, image_ids=name, seed=0),
        normalize_stain(images=image),
    ):
        assert result.images.shape == image.shape and result.images.dtype == np.uint8
        for stat in (result.stain_matrices, result.max_concentrations, result.factors):
            assert torch.isfinite(stat).all()
        assert torch.isfinite(result.tissue_fractions).all()
        if name == "noise":  # three independent channels: a valid (if meaningless) estimate
            assert result.transformed.tolist() == [True]
            continue
        assert result.transformed.tolist() == [False]
        assert np.array_equal(result.images, image)
        assert isinstance(result.flags[0], str)
    flag = perturb_stain(images=image, image_ids=name, seed=0).flags[0]
    if name in ("black", "one colour", "two colours"):
        assert flag.startswith("degenerate stain estimate")  # all tissue, no second direction
    elif name in ("white", "one pixel", "thin strip", "empty"):
        assert flag.startswith("too little tissue")


def test_empty_batch():
    result = perturb_stain(images=np.zeros((0, 8, 8, 3), np.uint8), image_ids=[], seed=0)
    assert result.images.shape == (0, 8, 8, 3)
    assert result.stain_matrices.shape == (0, 3, 2) and result.flags == []


# --- normalisation ------------------------------------------------------------------------------


def test_normalised_image_has_the_target_stains(tile_a):
    result = normalize_stain(images=tile_a)
    assert result.transformed.tolist() == [True]
    refit = fit_stain(images=result.images)
    reference = np.array(HE_REFERENCE)
    before = np.abs(fit_stain(images=tile_a).stain_matrices[0].numpy() - reference).max()
    after = np.abs(refit.stain_matrices[0].numpy() - reference).max(axis=0)
    # Hematoxylin lands on the target; eosin's angle percentile sits among pale pixels, whose
    # uint8 rounding noise widens the angle tail (torchstain's own normalise → fit: 0.039).
    assert after[0] < 0.015 and after[1] < 0.05
    assert after.max() < 0.5 * before
    # Hematoxylin's max concentration moves from 1.20 to the target's 1.97 (eosin's refit
    # concentrations follow its wider vector, so they are not compared).
    assert refit.max_concentrations[0, 0].item() == pytest.approx(
        MAX_CONCENTRATION_REFERENCE[0], rel=0.06
    )
    expected = np.array(MAX_CONCENTRATION_REFERENCE) / fit_stain(images=tile_a).max_concentrations
    np.testing.assert_allclose(result.factors.numpy(), expected.numpy())


def test_normalise_matches_torchstain(tile_a):
    torchstain = pytest.importorskip("torchstain")
    normalizer = torchstain.normalizers.MacenkoNormalizer(backend="numpy")
    ref, _, _ = normalizer.normalize(tile_a, stains=False)  # truncates where we round
    ours = normalize_stain(images=tile_a, config=StainConfig(precision="float64")).images
    diff = ours.astype(np.int16) - ref.astype(np.int16)
    assert diff.min() >= 0 and diff.max() <= 1
    assert (diff == 1).mean() > 0.3  # rounding, not truncation


def test_normalise_to_a_fitted_target(tile_a, tile_b):
    target = fit_target(image=tile_b)
    fit_b = fit_stain(images=tile_b)
    np.testing.assert_allclose(np.array(target.stain_matrix), fit_b.stain_matrices[0].numpy())
    result = normalize_stain(images=tile_a, target=target)
    refit = fit_stain(images=result.images).stain_matrices[0].numpy()
    target_he = np.array(target.stain_matrix)
    before = np.abs(fit_stain(images=tile_a).stain_matrices[0].numpy() - target_he).max()
    after = np.abs(refit - target_he).max(axis=0)
    assert after[0] < 0.015 and after[1] < 0.05
    assert after.max() < 0.5 * before
    with pytest.raises(StainInputError, match="too little tissue"):
        fit_target(image=np.full((32, 32, 3), 250, np.uint8))
    with pytest.raises(StainInputError, match="one image"):
        fit_target(image=np.stack([tile_a, tile_b]))


def test_stain_target_validation():
    assert StainTarget().stain_matrix == HE_REFERENCE
    target = StainTarget(stain_matrix=np.array(HE_REFERENCE), max_concentrations=[1.0, 2.0])
    assert target.max_concentrations == (1.0, 2.0) and isinstance(target.stain_matrix, tuple)
    with pytest.raises(ConfigError):
        StainTarget(stain_matrix=((1, 1), (1, 1), (1, 1)))
    with pytest.raises(ConfigError):
        StainTarget(stain_matrix=((1, 0), (0, 1)))
    with pytest.raises(ConfigError):
        StainTarget(max_concentrations=(1.0, 0.0))


# --- input handling -------------------------------------------------------------------------


def test_types_shapes_and_devices_are_kept(tile_a, tile_b):
    batch = np.stack([tile_a, tile_b])
    as_numpy = perturb_stain(images=batch, image_ids=[0, 1], seed=0)
    assert isinstance(as_numpy.images, np.ndarray) and as_numpy.images.shape == batch.shape
    as_torch = perturb_stain(images=torch.from_numpy(batch), image_ids=[0, 1], seed=0)
    assert isinstance(as_torch.images, torch.Tensor) and as_torch.images.dtype == torch.uint8
    assert np.array_equal(as_torch.images.numpy(), as_numpy.images)
    # A channels-first tensor seen channels-last (non-contiguous) works the same.
    permuted = torch.from_numpy(batch.transpose(0, 3, 1, 2).copy()).permute(0, 2, 3, 1)
    as_view = perturb_stain(images=permuted, image_ids=[0, 1], seed=0)
    assert np.array_equal(as_view.images.numpy(), as_numpy.images)
    single = perturb_stain(images=tile_b, image_ids=1, seed=0)
    assert single.images.shape == tile_b.shape
    assert np.array_equal(single.images, as_numpy.images[1])
    assert not np.shares_memory(as_numpy.images, batch)
    assert as_numpy.stain_matrices.shape == (2, 3, 2) and as_numpy.factors.shape == (2, 2)
    assert as_numpy.tissue_fractions[0].item() == pytest.approx(0.4328, abs=1e-4)


def test_bad_input_is_a_clear_error(tile_a):
    with pytest.raises(StainInputError, match="uint8"):
        perturb_stain(images=tile_a.astype(np.float32), image_ids="a", seed=0)
    with pytest.raises(StainInputError, match="uint8"):
        fit_stain(images=torch.zeros((1, 4, 4, 3)))
    with pytest.raises(StainInputError, match="alpha"):
        fit_stain(images=np.zeros((4, 4, 4), np.uint8))
    with pytest.raises(StainInputError, match="shape"):
        fit_stain(images=np.zeros((4, 4), np.uint8))
    with pytest.raises(StainInputError, match="numpy array or torch tensor"):
        fit_stain(images=tile_a.tolist())
    with pytest.raises(StainInputError, match="2 image ids for 1 images"):
        perturb_stain(images=tile_a, image_ids=["a", "b"], seed=0)
    with pytest.raises(StainInputError, match="seed"):
        perturb_stain(images=tile_a, image_ids="a", seed=1.5)
    with pytest.raises(StainInputError, match="image ids"):
        stain_factors(image_ids=[None], seed=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"io": 0},
        {"alpha": 50},
        {"factor_low": 1.4},
        {"factor_low": 0},
        {"min_tissue_fraction": 1.5},
        {"min_tissue_pixels": 1},
        {"precision": "float16"},
        {"max_batch": 0},
        {"max_percentile": 0},
    ],
)
def test_config_validation(kwargs):
    with pytest.raises(ConfigError):
        StainConfig(**kwargs)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(tile_a, tile_b):
    batch = torch.from_numpy(np.stack([tile_a, tile_b]))
    cpu = perturb_stain(images=batch, image_ids=["a", "b"], seed=5)
    gpu = perturb_stain(images=batch.cuda(), image_ids=["a", "b"], seed=5)
    assert gpu.images.device.type == "cuda" and gpu.images.dtype == torch.uint8
    diff = (gpu.images.cpu().short() - cpu.images.short()).abs()
    assert diff.max() <= 1
    torch.testing.assert_close(gpu.stain_matrices, cpu.stain_matrices, atol=1e-4, rtol=0)
    assert torch.equal(gpu.factors, cpu.factors)


# --- is the image H&E at all? -------------------------------------------------------------

#: The real tiles (shared data) and what each is; the H&E ones include pen marks and thumbnails.
STAIN_KINDS = {
    "high-nuclei-score-level0.png": "he",
    "medium-nuclei-score-level0.png": "he",
    "low-nuclei-score-level0.png": "he",
    "tissue-level0-4302-10273-4814-10785.png": "he",
    "tissue-level0-7352-11762-7864-12274.png": "he",
    "thumb-tcga-lung.png": "he",
    "thumb-tcga-red-pen.png": "he",
    "kidney-ihc-level0-310-500-360-530.png": "hematoxylin-only",  # DAB-negative IHC region
    "almost-white-1.png": "too-little-tissue",
    "no-tissue.png": "too-little-tissue",
}


def test_stain_kind_tells_he_from_ihc_on_real_images(tiles_dir, sample_ihc, cmu_slide) -> None:
    import openslide

    from pathgls.attacks.stain_kind import stain_kind

    for name, expected in STAIN_KINDS.items():
        kind = stain_kind(np.asarray(Image.open(tiles_dir / name).convert("RGB")))
        assert kind.kind == expected, (name, kind)
        assert (kind.warning is None) == (expected in ("he", "too-little-tissue")), name
    ihc = stain_kind(np.asarray(Image.open(sample_ihc).convert("RGB")))
    assert ihc.kind == "dab" and ihc.shares["brown"] > 0.5 and ihc.shares["pink"] < 0.05
    assert "immunohistochemistry (DAB" in ihc.warning
    with openslide.OpenSlide(str(cmu_slide)) as s:
        thumb = np.asarray(s.get_thumbnail((512, 512)).convert("RGB"))
    assert stain_kind(thumb).kind == "he"
    with pytest.raises(ValueError, match="RGB"):
        stain_kind(np.zeros((4, 4), dtype=np.uint8))


def test_stain_attack_on_an_ihc_image_says_it_is_not_he(tiles_dir, sample_ihc, tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from pathgls.cli import app

    res = CliRunner().invoke(
        app, ["attack", "stain", str(sample_ihc), "--out", str(tmp_path / "a.png")]
    )
    assert res.exit_code == 0, res.output
    assert "looks like immunohistochemistry" in res.stderr
    res = CliRunner().invoke(
        app, ["attack", "stain", str(tiles_dir / TILE_A), "--out", str(tmp_path / "b.png")]
    )
    assert res.exit_code == 0 and "warning" not in res.stderr
    # in a stability run, the card's stability module carries the warning
    res = CliRunner().invoke(
        app, ["stability", "--subject", "captioner", "--image", str(sample_ihc), "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert any(
        w.startswith("stain: the image looks like immunohistochemistry") for w in data["warnings"]
    )
    assert data["evidence"]["stain"]["kinds"] == ["dab"]
