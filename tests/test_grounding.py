"""Grounding: exact similarity math, calibration, target selection, and the bag/ROI pipeline."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

from pathgls.config import GroundingConfig
from pathgls.errors import ConfigError, EncoderMismatchError, GroundingError
from pathgls.grounding.score import ground
from pathgls.grounding.similarity import (
    calibrate_foil_rank,
    calibrate_sigmoid,
    get_calibration,
    grounding_value,
    max_similarity,
    window_boxes,
)
from pathgls.grounding.sources import WindowSource, check_encoder, roi_source
from pathgls.grounding.targets import (
    encode_phrases,
    load_foils,
    select_targets,
    unrelated_foils,
)
from pathgls.types import Entity


def _unit(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# --- exact math ----------------------------------------------------------------------------


def test_entity_equal_to_a_window_finds_that_window_and_its_coordinates() -> None:
    # 6 patches × 4 windows of one-hot vectors e_0 … e_23: every cosine is known exactly.
    n, w, d = 6, 4, 24
    windows = np.eye(d, dtype=np.float32).reshape(n, w, d)
    q = np.zeros((3, d), dtype=np.float32)
    q[0, 4 * 3 + 2] = 1.0  # equals window 2 of patch 3
    q[1, 5] = q[1, 20] = 1.0  # half-way between patch 1/window 1 and patch 5/window 0
    q[2, 23] = 2.0  # not normalised: patch 5, window 3
    r = max_similarity(queries=q, windows=windows, top_k=2)
    assert r.best_patch.tolist() == [3, 1, 5]
    assert r.best_window.tolist() == [2, 1, 3]
    np.testing.assert_allclose(r.max_similarity, [1.0, 1 / np.sqrt(2), 1.0], atol=1e-7)
    # ties (query 1 at patches 1 and 5) keep the earlier patch first
    assert r.top_patches[1].tolist() == [1, 5]
    np.testing.assert_allclose(r.top_values[1], [1 / np.sqrt(2)] * 2, atol=1e-7)
    # S_g with the paper's raw calibration: mean of the maxima
    assert grounding_value(get_calibration("raw")(r.max_similarity)) == pytest.approx(
        (2 + 1 / np.sqrt(2)) / 3, abs=1e-7
    )
    # level-0 box: patches every 1024 level-0 px (512 px at 20× on a 40× slide), windows of
    # 224 px at offsets (0,0), (288,0), (0,288), (288,288) → scale 2
    coords = np.array([[0, 0], [1024, 0], [2048, 0], [0, 1024], [1024, 1024], [2048, 1024]])
    offsets = np.array([[0, 0], [288, 0], [0, 288], [288, 288]])
    boxes = window_boxes(
        coords=coords,
        patch_index=r.best_patch,
        window_index=r.best_window,
        window_offsets=offsets,
        window_size=224,
        scale=2.0,
    )
    assert boxes.tolist() == [
        [0, 1024 + 576, 448, 448],
        [1024 + 576, 0, 448, 448],
        [2048 + 576, 1024 + 576, 448, 448],
    ]


@pytest.mark.parametrize("chunk", [1, 7, 9 * 5, 9 * 64, 10**9])
def test_chunked_equals_unchunked(chunk: int) -> None:
    rng = np.random.default_rng(1)
    windows = _unit(rng, 50, 9, 32) * rng.uniform(0.5, 2.0, (50, 9, 1)).astype(np.float32)
    q = _unit(rng, 11, 32)
    ref = max_similarity(queries=q, windows=windows, chunk_windows=10**9, top_k=4)
    got = max_similarity(
        queries=q, windows=windows, chunk_windows=chunk, top_k=4, keep_patch_max=True
    )
    np.testing.assert_array_equal(got.best_patch, ref.best_patch)
    np.testing.assert_array_equal(got.best_window, ref.best_window)
    np.testing.assert_array_equal(got.top_patches, ref.top_patches)
    np.testing.assert_allclose(got.max_similarity, ref.max_similarity, rtol=0, atol=1e-6)
    # against plain numpy cosine over all windows
    flat = windows.reshape(-1, 32) / np.linalg.norm(windows.reshape(-1, 32), axis=1, keepdims=True)
    sims = flat @ q.T
    np.testing.assert_allclose(got.max_similarity, sims.max(axis=0), atol=1e-6)
    np.testing.assert_array_equal(got.best_patch * 9 + got.best_window, sims.argmax(axis=0))
    np.testing.assert_allclose(got.patch_max, sims.reshape(50, 9, 11).max(axis=1).T, atol=1e-6)
    order = np.argsort(-got.patch_max, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(got.top_patches, order)


def test_fp16_torch_and_hdf5_inputs_agree(tmp_path) -> None:
    rng = np.random.default_rng(2)
    w16 = _unit(rng, 40, 4, 16).astype(np.float16)
    q = _unit(rng, 5, 16)
    ref = max_similarity(queries=q, windows=w16.astype(np.float32), top_k=3)
    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("w", data=w16, chunks=(8, 4, 16))
    with h5py.File(path, "r") as f:
        from_h5 = max_similarity(queries=q, windows=f["w"], chunk_windows=12, top_k=3)
    from_torch = max_similarity(queries=torch.from_numpy(q), windows=torch.from_numpy(w16))
    for r in (from_h5, from_torch):
        np.testing.assert_array_equal(r.best_patch, ref.best_patch)
        np.testing.assert_allclose(r.max_similarity, ref.max_similarity, atol=1e-6)
    np.testing.assert_array_equal(from_h5.top_patches, ref.top_patches)


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match=r"\(N patches, W windows, D\)"):
        max_similarity(queries=np.zeros((2, 4)), windows=np.zeros((5, 4)))
    with pytest.raises(ValueError, match="match the windows"):
        max_similarity(queries=np.zeros((2, 3)), windows=np.zeros((5, 2, 4)))
    with pytest.raises(ValueError, match="chunk_windows"):
        max_similarity(queries=np.zeros((2, 4)), windows=np.zeros((5, 2, 4)), chunk_windows=0)


def test_calibrations() -> None:
    x = np.array([0.20, 0.25, 0.10, 2.0, -5.0])
    s = calibrate_sigmoid(x, k=60, t=0.20)
    np.testing.assert_allclose(s[:3], 1 / (1 + np.exp(-60 * (x[:3] - 0.20))), rtol=1e-12)
    assert s[0] == 0.5 and np.all(np.isfinite(s)) and s[3] == 1.0 and s[4] == 0.0
    foils = np.array([0.1, 0.2, 0.3, 0.4])
    r = calibrate_foil_rank(np.array([0.05, 0.3, 0.35, 0.5]), foil_similarity=foils)
    np.testing.assert_allclose(r, [0.0, 2.5 / 4, 0.75, 1.0])
    with pytest.raises(ValueError, match="foil"):
        calibrate_foil_rank(np.array([0.3]))
    with pytest.raises(ConfigError, match="foil-rank"):
        get_calibration("softmax")
    with pytest.raises(ValueError):
        grounding_value(np.array([]))


# --- text side -----------------------------------------------------------------------------


def _e(text: str, type_: str, concept: str = "", **kw) -> Entity:
    return Entity(text=text, type=type_, start=0, end=len(text), concept=concept, **kw)


def test_target_selection_lists_negated_and_skipped_entities() -> None:
    ents = [
        _e("IDC", "pathological_diagnosis", "invasive ductal carcinoma"),
        _e("invasive ductal carcinoma", "pathological_diagnosis", "invasive ductal carcinoma"),
        _e("necrosis", "morphology_finding", "necrosis", negated=True),
        _e("ER", "ihc_marker", "estrogen receptor"),
        _e("positive", "ihc_modifier", "positive"),
        _e("Nottingham grade 3", "grade", "histologic grade", attributes={"grade_number": "3"}),
        _e("poorly differentiated", "grade", "poorly differentiated"),
        _e("possible lymphovascular invasion", "lymphovascular_invasion", "lvi", uncertain=True),
        _e("breast", "anatomical_site", "breast"),
    ]
    sel = select_targets(ents, config=GroundingConfig())
    assert [t.phrase for t in sel.targets] == [
        "invasive ductal carcinoma",  # abbreviation expanded, both mentions grounded once
        "poorly differentiated",
        "possible lymphovascular invasion",
    ]
    assert sel.targets[0].mentions == ("IDC", "invasive ductal carcinoma")
    assert sel.targets[2].uncertain and not sel.targets[0].uncertain
    assert sel.negated == ["necrosis"]
    reasons = {s["text"]: s["reason"] for s in sel.skipped}
    assert "not visible in an H&E image" in reasons["ER"]
    assert "not visible in an H&E image" in reasons["positive"]
    assert "numeric grade" in reasons["Nottingham grade 3"]
    assert "location" in reasons["breast"]
    strict = select_targets(ents, config=GroundingConfig(include_uncertain=False))
    assert [t.phrase for t in strict.targets][-1] == "poorly differentiated"
    # an entity affirmed once and negated once is still grounded
    both = [_e("necrosis", "morphology_finding", "necrosis"), ents[2]]
    assert [t.phrase for t in select_targets(both, config=GroundingConfig()).targets] == [
        "necrosis"
    ]


def test_foils_exclude_what_the_report_claims(tmp_path) -> None:
    foils = load_foils()
    assert len(foils) >= 90 and len(set(foils)) == len(foils)
    sel = select_targets(
        [_e("squamous cell carcinoma", "pathological_diagnosis", "squamous cell carcinoma")],
        config=GroundingConfig(),
    )
    kept = unrelated_foils(foils, sel.targets)
    assert "squamous cell carcinoma with keratin pearls" not in kept
    assert "signet ring cell carcinoma" not in kept  # shares "carcinoma"
    assert "esophageal squamous mucosa" not in kept  # shares "squamous"
    assert "hyaline cartilage with chondrocytes in lacunae" in kept
    assert "small round blue cell tumor" in kept  # "cell" is too generic to relate them
    with pytest.raises(ConfigError, match="cannot read"):
        load_foils(__file__ + ".missing")
    (tmp_path / "f.txt").write_text("# only a comment\n\n")
    with pytest.raises(ConfigError, match="no phrase"):
        load_foils(tmp_path / "f.txt")


class FakeEncoder:
    """A text tower with known outputs: each distinct string gets its own one-hot vector."""

    def __init__(self, dim: int = 64, name: str = "fake", model_id: str = "fake/model") -> None:
        self.name, self.dim, self.model_id = name, dim, model_id
        self.image_size, self.precision, self.device = 224, "fp32", "cpu"
        self.revision, self.random_weights = None, False
        self.vocab: dict[str, int] = {}

    def encode_text(self, texts: list[str]) -> torch.Tensor:
        out = torch.zeros((len(texts), self.dim))
        for i, t in enumerate(texts):
            out[i, self.vocab.setdefault(t, len(self.vocab))] = 1.0
        return out

    def encode_images(self, images) -> torch.Tensor:  # pragma: no cover - unused here
        raise NotImplementedError


def test_templates_are_ensembled_and_renormalised() -> None:
    enc = FakeEncoder()
    emb = encode_phrases(enc, ["a", "b"], templates=("x {}", "y {}"))
    assert emb.shape == (2, 64)
    i, j = enc.vocab["x a"], enc.vocab["y a"]
    assert emb[0, i] == pytest.approx(1 / np.sqrt(2)) and emb[0, j] == pytest.approx(1 / np.sqrt(2))
    torch.testing.assert_close(emb.norm(dim=1), torch.ones(2))


def _source(enc: FakeEncoder, windows: np.ndarray, **kw) -> WindowSource:
    n = windows.shape[0]
    defaults = dict(
        windows=windows,
        coords=np.stack([np.arange(n) * 512, np.zeros(n, dtype=np.int64)], axis=1),
        patch_size=512,
        patch_size_level0=512,
        window_size=224,
        window_offsets=np.array([[0, 0], [288, 0]]),
        kind="bag",
        name="slide-x",
        space="level0",
        encoder=enc.name,
        encoder_model_id=enc.model_id,
        encoder_revision="",
        dim=enc.dim,
    )
    defaults.update(kw)
    return WindowSource(**defaults)


def test_ground_scores_known_embeddings_with_every_calibration() -> None:
    enc = FakeEncoder()
    cfg = GroundingConfig(templates=("{}",), calibration="raw")
    ents = [
        _e("nests", "morphology_finding", "nested pattern"),
        _e("mitoses", "morphology_finding", "mitoses"),
        _e("necrosis", "morphology_finding", "necrosis", negated=True),
    ]
    foils = [f"foil {i}" for i in range(20)]
    enc.encode_text(["nests", "mitoses", *foils])  # fix the vocabulary: nests=e0, mitoses=e1
    windows = np.zeros((3, 2, 64), dtype=np.float32)
    windows[2, 1, 0] = 1.0  # "nests" is exactly window 1 of patch 2
    windows[0, 0, 1] = windows[0, 0, 2] = 1.0  # "mitoses" half-seen in patch 0 (with foil 0)
    for p in range(3):  # foils 1..19 are weakly present everywhere
        windows[p, 0, 3:22] += 0.05
    res = ground(entities=ents, encoder=enc, source=_source(enc, windows), config=cfg, foils=foils)
    ev = res.score.evidence
    assert [e["phrase"] for e in ev["entities"]] == ["nests", "mitoses"]
    assert ev["negated"] == ["necrosis"]
    nests, mitoses = ev["entities"]
    assert nests["patch"] == 2 and nests["window"] == 1
    assert nests["box"] == [2 * 512 + 288, 0, 224, 224]
    assert nests["similarity"] == pytest.approx(1.0)
    assert mitoses["patch"] == 0 and mitoses["window"] == 0
    cos_m = 1 / np.sqrt(2 + 19 * 0.05**2)
    assert mitoses["similarity"] == pytest.approx(cos_m, abs=1e-6)
    assert res.score.value == pytest.approx((1.0 + cos_m) / 2, abs=1e-6)
    # sigmoid of the same maxima
    sig = ground(
        entities=ents,
        encoder=enc,
        source=_source(enc, windows),
        config=GroundingConfig(templates=("{}",), calibration="sigmoid"),
    )
    expect = np.mean(1 / (1 + np.exp(-60 * (np.array([1.0, cos_m]) - 0.2))))
    assert sig.score.value == pytest.approx(expect, abs=1e-6)
    # foil-rank: "nests" (1.0) beats all 20 foils; "mitoses" beats the 19 weak ones (cos ≈ 0.05
    # each) but ties foil 0, which shares its window: (19 + 0.5) / 20
    fr = ground(
        entities=ents,
        encoder=enc,
        source=_source(enc, windows),
        config=GroundingConfig(templates=("{}",)),
        foils=foils,
        keep_patch_max=True,
    )
    assert [e["calibrated"] for e in fr.score.evidence["entities"]] == pytest.approx([1.0, 0.975])
    assert fr.score.value == pytest.approx((1.0 + 0.975) / 2)
    assert fr.score.evidence["foils"]["n"] == 20
    np.testing.assert_allclose(fr.patch_values("nested pattern"), [0.0, 0.0, 1.0], atol=1e-6)
    with pytest.raises(KeyError, match="grounded: nests, mitoses"):
        fr.patch_values("carcinoma")
    # a unique case-insensitive part of a name is enough; a part of two names lists them
    np.testing.assert_array_equal(fr.patch_values("NEST"), fr.patch_values("nests"))
    np.testing.assert_array_equal(fr.patch_values("mitos"), fr.patch_values("mitoses"))
    with pytest.raises(KeyError, match="part of several grounded entities: 'nests', 'mitoses'"):
        fr.patch_values("s")


def test_missing_scores_and_encoder_mismatch() -> None:
    enc = FakeEncoder()
    windows = np.ones((2, 2, 64), dtype=np.float32)
    only_ihc = [
        _e("ER", "ihc_marker", "estrogen receptor"),
        _e("necrosis", "morphology_finding", negated=True),
    ]
    res = ground(entities=only_ihc, encoder=enc, source=_source(enc, windows))
    assert res.score.value is None
    assert "no affirmed visual entity" in res.score.missing_reason
    assert "1 negated, 1 skipped" in res.score.missing_reason
    empty = _source(enc, np.zeros((0, 2, 64), dtype=np.float16), coords=np.zeros((0, 2), int))
    res = ground(entities=[_e("nests", "morphology_finding")], encoder=enc, source=empty)
    assert res.score.value is None and "no tissue patch" in res.score.missing_reason
    other = _source(enc, windows, encoder="conch", encoder_model_id="conch/v1", dim=512)
    with pytest.raises(EncoderMismatchError, match=r"conch.*fake.*dimension 512 != encoder"):
        check_encoder(other, enc)
    with pytest.raises(EncoderMismatchError, match="revision"):
        check_encoder(_source(enc, windows, encoder_revision="abc"), _revised(enc, "def"))
    few = GroundingConfig(min_foils=50)
    res = ground(
        entities=[_e("nests", "morphology_finding")],
        encoder=enc,
        source=_source(enc, windows),
        config=few,
        foils=["a foil"] * 3,
    )
    assert res.score.value is None and "min_foils=50" in res.score.missing_reason


def _revised(enc: FakeEncoder, revision: str) -> FakeEncoder:
    enc.revision = revision
    return enc


def test_roi_source_refuses_bad_images() -> None:
    enc = FakeEncoder()
    with pytest.raises(GroundingError, match="uint8"):
        roi_source(encoder=enc, image=np.zeros((64, 64, 3), np.float32), name="x")
    with pytest.raises(GroundingError, match="at least 16"):
        roi_source(encoder=enc, image=np.zeros((8, 64, 3), np.uint8), name="x")
    with pytest.raises(GroundingError, match="extract a feature bag"):
        roi_source(encoder=enc, image=np.zeros((64, 64, 3), np.uint8), name="x", max_side=32)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_equals_cpu() -> None:
    rng = np.random.default_rng(3)
    windows = _unit(rng, 300, 9, 64).astype(np.float16)
    q = _unit(rng, 20, 64)
    cpu = max_similarity(queries=q, windows=windows, top_k=3, chunk_windows=100)
    gpu = max_similarity(queries=q, windows=windows, top_k=3, chunk_windows=100, device="cuda")
    np.testing.assert_array_equal(gpu.best_patch, cpu.best_patch)
    np.testing.assert_allclose(gpu.max_similarity, cpu.max_similarity, atol=1e-5)
