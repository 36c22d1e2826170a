"""Encoders: registry, local model resolution, tiny random models of the real architectures,
batched torch preprocessing against the reference processors, CONCH conversion, HighRes windows
and the ``pathgls models`` commands. All offline; every model is written here at test time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathgls.config import EncoderConfig
from pathgls.encoders import (
    Encoder,
    WindowBuffers,
    build_encoder,
    encode_highres,
    list_encoders,
    parse_encoder_spec,
    window_coords,
    window_offsets,
)
from pathgls.encoders.registry import SpecKind
from pathgls.errors import ConfigError, EncoderError, ModelNotFoundError, UnknownNameError
from pathgls.hub import store as hub
from pathgls.testing import (
    load_conch_visual_reference,
    save_random_conch,
    save_random_hf_clip,
    save_random_open_clip,
)

TEXTS = ["Invasive ductal carcinoma, grade 2.", "benign lymph node", "tumour " * 60]


def _smooth_image(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """An image with tissue-like smooth structure plus mild noise (natural-image statistics)."""
    y, x = np.mgrid[0:height, 0:width]
    channels = [128 + 100 * np.sin(x / 17.0 + c) * np.cos(y / 23.0 - c) for c in range(3)]
    img = np.stack(channels, -1) + rng.normal(0, 10, (height, width, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def models_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("encoder-models")


@pytest.fixture(scope="module")
def hf_dir(models_root: Path) -> Path:
    return save_random_hf_clip(models_root / "tiny-hf-clip", seed=0)


@pytest.fixture(scope="module")
def hf_encoder(hf_dir: Path) -> Encoder:
    return build_encoder(EncoderConfig(name=f"hf:{hf_dir}", device="cpu"))


@pytest.fixture(scope="module")
def open_clip_dir(models_root: Path) -> Path:
    return save_random_open_clip(models_root / "tiny-open-clip", seed=0)


@pytest.fixture(scope="module")
def conch_models_dir(models_root: Path) -> Path:
    root = models_root / "conch-models"
    save_random_conch(root / "MahmoodLab--CONCH", seed=0)
    return root


@pytest.fixture()
def empty_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the Hugging Face cache at an empty directory (a dev machine may have PLIP cached)."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


# --- Hugging Face CLIP -------------------------------------------------------------------


def test_hf_clip_shapes_norms_determinism(hf_encoder: Encoder) -> None:
    assert isinstance(hf_encoder, Encoder)
    assert hf_encoder.random_weights is True
    assert (hf_encoder.dim, hf_encoder.image_size, hf_encoder.precision) == (16, 224, "fp32")
    images = np.random.default_rng(0).integers(0, 256, (3, 224, 224, 3), dtype=np.uint8)
    feats = hf_encoder.encode_images(images)
    assert feats.shape == (3, 16) and feats.dtype == torch.float32 and feats.device.type == "cpu"
    torch.testing.assert_close(feats.norm(dim=1), torch.ones(3))
    torch.testing.assert_close(hf_encoder.encode_images(torch.from_numpy(images)), feats)
    text = hf_encoder.encode_text(TEXTS)
    assert text.shape == (3, 16)
    torch.testing.assert_close(text.norm(dim=1), torch.ones(3))
    torch.testing.assert_close(hf_encoder.encode_text(TEXTS), text)
    assert hf_encoder.encode_text([]).shape == (0, 16)
    assert hf_encoder.encode_images(images[:0]).shape == (0, 16)


def test_hf_clip_rejects_bad_input(hf_encoder: Encoder) -> None:
    with pytest.raises(EncoderError, match="uint8"):
        hf_encoder.encode_images(np.zeros((1, 224, 224, 3), dtype=np.float32))
    with pytest.raises(EncoderError, match="shape"):
        hf_encoder.encode_images(np.zeros((224, 224, 3), dtype=np.uint8))
    with pytest.raises(EncoderError, match="list of strings"):
        hf_encoder.encode_text("not a list")  # type: ignore[arg-type]


def test_hf_preprocessing_matches_clip_image_processor(hf_encoder: Encoder, hf_dir: Path) -> None:
    from transformers import CLIPImageProcessor

    processor = CLIPImageProcessor.from_pretrained(hf_dir)
    rng = np.random.default_rng(1)
    cpu = torch.device("cpu")

    def ours(img: np.ndarray) -> torch.Tensor:
        return hf_encoder.preprocess(torch.from_numpy(img[None]), device=cpu, dtype=torch.float32)

    def theirs(img: np.ndarray) -> torch.Tensor:
        return processor(images=[img], return_tensors="pt")["pixel_values"]

    # Model-sized input: no resize, identical up to float rounding.
    noise = rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)
    torch.testing.assert_close(ours(noise), theirs(noise), atol=1e-5, rtol=0)
    # Other sizes: antialiased bicubic on floats vs the processor's uint8 resize (≤ ~1 grey level).
    for height, width in [(512, 512), (300, 500), (100, 100)]:
        img = _smooth_image(rng, height, width)
        diff = (ours(img) - theirs(img)).abs()
        assert diff.shape == (1, 3, 224, 224)
        assert diff.max() < 0.03 and diff.mean() < 0.01, (height, width, diff.max(), diff.mean())


def test_hf_features_match_transformers(hf_encoder: Encoder, hf_dir: Path) -> None:
    from transformers import AutoTokenizer, CLIPImageProcessor, CLIPModel

    model = CLIPModel.from_pretrained(hf_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(hf_dir)
    tokens = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
    images = np.random.default_rng(2).integers(0, 256, (2, 224, 224, 3), dtype=np.uint8)
    pixels = CLIPImageProcessor.from_pretrained(hf_dir)(images=list(images), return_tensors="pt")
    with torch.no_grad():
        # transformers 5: get_*_features return a ModelOutput whose pooler_output is projected.
        text_ref = model.get_text_features(**tokens).pooler_output
        image_ref = model.get_image_features(pixel_values=pixels["pixel_values"]).pooler_output
    torch.testing.assert_close(
        hf_encoder.encode_text(TEXTS),
        torch.nn.functional.normalize(text_ref, dim=-1),
        atol=1e-5,
        rtol=1e-4,
    )
    torch.testing.assert_close(
        hf_encoder.encode_images(images),
        torch.nn.functional.normalize(image_ref, dim=-1),
        atol=1e-5,
        rtol=1e-4,
    )


def test_bf16_precision_on_cpu(hf_dir: Path, open_clip_dir: Path) -> None:
    images = np.random.default_rng(3).integers(0, 256, (2, 224, 224, 3), dtype=np.uint8)
    for name in (f"hf:{hf_dir}", f"open_clip:{open_clip_dir}"):
        fp32 = build_encoder(EncoderConfig(name=name, device="cpu", precision="fp32"))
        bf16 = build_encoder(EncoderConfig(name=name, device="cpu", precision="bf16"))
        assert bf16.precision == "bf16"
        a, b = fp32.encode_images(images), bf16.encode_images(images)
        assert b.dtype == torch.float32
        assert torch.all((a * b).sum(dim=1) > 0.98)


def test_plip_resolves_from_models_dir(
    models_root: Path, hf_dir: Path, empty_hf_cache: Path
) -> None:
    root = models_root / "plip-models"
    root.mkdir(exist_ok=True)
    link = root / "vinid--plip"
    if not link.exists():
        link.symlink_to(hf_dir, target_is_directory=True)
    encoder = build_encoder(EncoderConfig(name="plip", models_dir=str(root), device="cpu"))
    assert encoder.name == "plip" and encoder.model_id == "vinid/plip"
    assert encoder.random_weights is True
    assert encoder.encode_images(np.zeros((1, 224, 224, 3), dtype=np.uint8)).shape == (1, 16)


def test_models_dir_from_environment(
    models_root: Path, hf_dir: Path, monkeypatch: pytest.MonkeyPatch, empty_hf_cache: Path
) -> None:
    root = models_root / "env-models"
    (root / "vinid--plip").parent.mkdir(exist_ok=True)
    if not (root / "vinid--plip").exists():
        (root / "vinid--plip").symlink_to(hf_dir, target_is_directory=True)
    monkeypatch.setenv(hub.MODELS_DIR_ENV, str(root))
    assert hub.get_models_dir() == root
    assert hub.find_model("vinid/plip") == root / "vinid--plip"


# --- open_clip and CONCH -----------------------------------------------------------------


def test_open_clip_dir(open_clip_dir: Path) -> None:
    import open_clip

    encoder = build_encoder(EncoderConfig(name=f"open_clip:{open_clip_dir}", device="cpu"))
    assert encoder.random_weights is True and (encoder.dim, encoder.image_size) == (16, 224)
    images = np.random.default_rng(4).integers(0, 256, (2, 300, 260, 3), dtype=np.uint8)
    feats, text = encoder.encode_images(images), encoder.encode_text(TEXTS)
    assert feats.shape == (2, 16) and text.shape == (3, 16)
    torch.testing.assert_close(feats.norm(dim=1), torch.ones(2))
    torch.testing.assert_close(text.norm(dim=1), torch.ones(3))
    model = open_clip.create_model(f"local-dir:{open_clip_dir}").eval()
    tokens = open_clip.get_tokenizer(f"local-dir:{open_clip_dir}")(TEXTS)
    with torch.no_grad():
        ref = model.encode_text(tokens, normalize=True)
    torch.testing.assert_close(text, ref, atol=1e-5, rtol=1e-4)


def test_conch_matches_reference_and_tokenizes_like_conch(conch_models_dir: Path) -> None:
    encoder = build_encoder(
        EncoderConfig(name="conch", models_dir=str(conch_models_dir), device="cpu")
    )
    assert encoder.model_id == "MahmoodLab/CONCH" and encoder.random_weights is True
    assert (encoder.dim, encoder.image_size) == (16, 448)
    images = np.random.default_rng(5).integers(0, 256, (2, 224, 224, 3), dtype=np.uint8)
    pixels = encoder.preprocess(
        torch.from_numpy(images), device=torch.device("cpu"), dtype=torch.float32
    )
    reference = load_conch_visual_reference(conch_models_dir / "MahmoodLab--CONCH")
    with torch.no_grad():
        expected = torch.nn.functional.normalize(reference(pixels), dim=-1)
    torch.testing.assert_close(encoder.encode_images(images), expected, atol=1e-5, rtol=1e-4)
    text = encoder.encode_text(TEXTS)
    assert text.shape == (3, 16)
    torch.testing.assert_close(text.norm(dim=1), torch.ones(3))

    from pathgls.encoders.conch import conch_tokenize_fn

    ids = conch_tokenize_fn(conch_models_dir / "MahmoodLab--CONCH", 15)(["ab", "x" * 40])
    assert ids.shape == (2, 15)
    assert (
        ids[0, 0] == 1 and ids[0, 4] == 2 and ids[0, 5:].eq(0).all()
    )  # <start> a b <end> <pad>...
    assert ids[1, 0] == 1 and ids[1, -1] == 2  # truncated, end token kept


def test_conch_checkpoint_conversion_rejects_foreign_weights() -> None:
    from pathgls.encoders.conch import convert_conch_state_dict

    with pytest.raises(EncoderError, match="not a CONCH checkpoint"):
        convert_conch_state_dict({"vision_model.embeddings.weight": torch.zeros(1)})


# --- names, resolution, errors -----------------------------------------------------------


def test_registry_lists_builtin_encoders() -> None:
    infos = {info.name: info for info in list_encoders()}
    assert {"plip", "quiltnet", "conch", "hf", "open_clip"} == set(infos)
    assert infos["plip"].meta["backend"] == "hf_clip" and infos["hf"].argument == "<model>"
    repos = {n: parse_encoder_spec(n).repo_id for n in ("plip", "quiltnet", "conch")}
    assert repos == {
        "plip": "vinid/plip",
        "quiltnet": "wisdomik/QuiltNet-B-32",
        "conch": "MahmoodLab/CONCH",
    }


def test_parse_encoder_spec(tmp_path: Path) -> None:
    assert parse_encoder_spec("plip").kind is SpecKind.REGISTERED
    spec = parse_encoder_spec("hf:vinid/plip")
    assert (spec.kind, spec.repo_id, spec.path) == (SpecKind.HF, "vinid/plip", None)
    spec = parse_encoder_spec(f"hf:{tmp_path}")
    assert (spec.kind, spec.path) == (SpecKind.HF, str(tmp_path))
    spec = parse_encoder_spec("open_clip:hf-hub:wisdomik/QuiltNet-B-32")
    assert (spec.kind, spec.repo_id) == (SpecKind.OPEN_CLIP_DIR, "wisdomik/QuiltNet-B-32")
    assert parse_encoder_spec(f"open_clip:{tmp_path}").kind is SpecKind.OPEN_CLIP_DIR
    spec = parse_encoder_spec("open_clip:ViT-B-32:laion2b_s34b_b79k")
    assert (spec.kind, spec.arch, spec.weights) == (
        SpecKind.OPEN_CLIP_ARCH,
        "ViT-B-32",
        "laion2b_s34b_b79k",
    )
    with pytest.raises(ConfigError):
        parse_encoder_spec("open_clip:ViT-B-32")
    with pytest.raises(ConfigError):
        parse_encoder_spec("hf:")


def test_unknown_name_lists_known_names() -> None:
    with pytest.raises(UnknownNameError, match="plip") as info:
        build_encoder(EncoderConfig(name="plipp"))
    assert "quiltnet" in str(info.value) and "conch" in str(info.value)
    with pytest.raises(UnknownNameError):
        parse_encoder_spec("timm:vit")


def test_missing_model_names_the_pull_command(tmp_path: Path, empty_hf_cache: Path) -> None:
    with pytest.raises(ModelNotFoundError) as info:
        build_encoder(EncoderConfig(name="plip", models_dir=str(tmp_path)))
    message = str(info.value)
    assert "pathgls models pull plip" in message and "vinid/plip" in message
    assert str(tmp_path / "vinid--plip") in message and str(empty_hf_cache) in message
    with pytest.raises(ModelNotFoundError, match="pathgls models pull hf:org/clip"):
        build_encoder(EncoderConfig(name="hf:org/clip", models_dir=str(tmp_path)))
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        build_encoder(EncoderConfig(name=f"hf:{tmp_path / 'nowhere'}"))


def test_non_clip_directory_is_an_encoder_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (tmp_path / "open_clip_config.json").write_text("{}")
    with pytest.raises(EncoderError, match="not a CLIPModel"):
        build_encoder(EncoderConfig(name=f"hf:{tmp_path}"))
    with pytest.raises(ModelNotFoundError, match="no weights"):
        build_encoder(EncoderConfig(name=f"open_clip:{tmp_path}"))


def test_resolves_from_hugging_face_cache(
    hf_dir: Path, empty_hf_cache: Path, tmp_path: Path
) -> None:
    sha = "a" * 40
    repo = empty_hf_cache / "models--vinid--plip"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    snapshot = repo / "snapshots" / sha
    snapshot.mkdir(parents=True)
    for f in hf_dir.iterdir():
        (snapshot / f.name).symlink_to(f)
    assert hub.find_model("vinid/plip", models_dir=tmp_path) == snapshot
    assert hub.location_source(snapshot) == ("vinid/plip", sha)
    encoder = build_encoder(EncoderConfig(name="plip", models_dir=str(tmp_path), device="cpu"))
    assert (encoder.model_id, encoder.revision) == ("vinid/plip", sha)


def test_open_clip_arch_with_weights_file_and_tags(tmp_path: Path) -> None:
    import open_clip

    torch.manual_seed(0)
    reference = open_clip.create_model("ViT-S-32").eval()
    torch.save(reference.state_dict(), tmp_path / "weights.pt")
    encoder = build_encoder(EncoderConfig(name=f"open_clip:ViT-S-32:{tmp_path / 'weights.pt'}"))
    assert encoder.random_weights is False and encoder.model_id.startswith("ViT-S-32:")
    tokens = open_clip.get_tokenizer("ViT-S-32")(TEXTS)
    with torch.no_grad():
        expected = reference.encode_text(tokens, normalize=True)
    torch.testing.assert_close(encoder.encode_text(TEXTS), expected, atol=1e-5, rtol=1e-4)
    # A pretrained tag is looked up locally under its Hugging Face repo, never downloaded.
    with pytest.raises(ModelNotFoundError, match="pathgls models pull hf:laion/CLIP-ViT-B-32"):
        build_encoder(
            EncoderConfig(name="open_clip:ViT-B-32:laion2b_s34b_b79k", models_dir=str(tmp_path))
        )
    with pytest.raises(UnknownNameError, match="laion2b_s34b_b79k"):
        build_encoder(EncoderConfig(name="open_clip:ViT-B-32:no-such-tag"))
    with pytest.raises(UnknownNameError, match="architecture"):
        build_encoder(EncoderConfig(name="open_clip:No-Such-Arch:weights"))


@pytest.mark.slow
def test_plip_sized_random_model(tmp_path: Path) -> None:
    directory = save_random_hf_clip(tmp_path / "plip", size="plip")
    encoder = build_encoder(EncoderConfig(name=f"hf:{directory}", device="cpu"))
    assert (encoder.dim, encoder.image_size, encoder.random_weights) == (512, 224, True)
    n_params = sum(p.numel() for p in encoder.module.parameters())
    assert 150e6 < n_params < 152e6  # CLIP ViT-B/32: 151.3M
    assert encoder.encode_images(np.zeros((2, 512, 512, 3), dtype=np.uint8)).shape == (2, 512)


def test_pull_stages_records_revision_and_wraps_errors(
    tmp_path: Path, hf_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    from types import SimpleNamespace

    import huggingface_hub

    calls: dict[str, object] = {}

    def fake_info(
        self: object, repo_id: str, revision: str | None = None, token: str | None = None
    ):
        calls["token"] = token
        return SimpleNamespace(sha="0123abcd")

    def fake_download(repo_id: str, *, revision: str, local_dir: Path, token: str | None) -> str:
        calls.update(repo_id=repo_id, revision=revision, local_dir=Path(local_dir))
        shutil.copytree(hf_dir, local_dir, dirs_exist_ok=True)
        return str(local_dir)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", fake_info)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    monkeypatch.setenv("MY_TOKEN", "secret")
    target = hub.pull("plip", models_dir=tmp_path, token_env="MY_TOKEN")
    assert target == tmp_path / "vinid--plip" and (target / "config.json").is_file()
    assert calls["repo_id"] == "vinid/plip" and calls["revision"] == "0123abcd"
    assert calls["token"] == "secret" and calls["local_dir"] != target  # staged, then moved
    assert hub.location_source(target) == ("vinid/plip", "0123abcd")
    encoder = build_encoder(EncoderConfig(name="plip", models_dir=str(tmp_path), device="cpu"))
    assert encoder.revision == "0123abcd"

    def failing_info(self: object, *args: object, **kwargs: object) -> None:
        raise OSError("no route to host")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", failing_info)
    with pytest.raises(ModelNotFoundError, match="could not pull 'quiltnet'") as info:
        hub.pull("quiltnet", models_dir=tmp_path)
    assert isinstance(info.value.__cause__, OSError)
    assert not (tmp_path / "wisdomik--QuiltNet-B-32").exists()
    with pytest.raises(UnknownNameError):
        hub.pull(f"hf:{hf_dir}", models_dir=tmp_path)  # a local dir has nothing to pull


# --- HighRes -----------------------------------------------------------------------------


def test_window_offsets_and_coords() -> None:
    assert window_offsets(512, 224, 224) == [0, 224, 288]
    assert window_offsets(448, 224, 224) == [0, 224]
    assert window_offsets(224, 224, 224) == [0]
    assert window_offsets(100, 224, 224) == [0]
    assert window_offsets(512, 224, 112) == [0, 112, 224, 288]
    coords = window_coords(512, 224, 224)
    assert coords.shape == (9, 2) and coords.dtype == np.int64
    assert coords[:4].tolist() == [[0, 0], [224, 0], [288, 0], [0, 224]]  # (x, y), y outer
    assert window_coords((300, 512), 224, 224).shape == (6, 2)
    with pytest.raises(ConfigError):
        window_offsets(512, 224, 0)


def test_encode_highres_windows_and_mean(hf_encoder: Encoder) -> None:
    rng = np.random.default_rng(6)
    patches = np.stack([_smooth_image(rng, 512, 512) for _ in range(2)])
    window_features, features = encode_highres(
        hf_encoder, patches, window_size=224, window_stride=224, max_batch=4
    )
    assert window_features.shape == (2, 9, 16) and window_features.dtype == np.float32
    assert features.shape == (2, 16) and features.dtype == np.float32
    np.testing.assert_allclose(features, window_features.mean(axis=1), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(window_features, axis=-1), 1.0, atol=1e-5)
    for k, (x, y) in enumerate(window_coords(512, 224, 224)):
        crop = patches[:, y : y + 224, x : x + 224]
        np.testing.assert_allclose(
            window_features[:, k], hf_encoder.encode_images(crop).numpy(), atol=1e-5, rtol=1e-4
        )
    one_call, _ = encode_highres(
        hf_encoder, patches, window_size=224, window_stride=224, max_batch=64
    )
    np.testing.assert_allclose(one_call, window_features, atol=1e-5, rtol=1e-4)
    empty, empty_mean = encode_highres(hf_encoder, patches[:0], window_size=224, window_stride=224)
    assert empty.shape == (0, 9, 16) and empty_mean.shape == (0, 16)


def test_model_sized_windows_take_the_fused_path_with_reused_buffers(
    hf_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # windows of the model's input size are cut, made channels-first and normalised straight
    # into one reused float buffer: same features as encoding each window as an image, for
    # overlapping strides, rectangular patches and batches of different sizes in a row
    import pathgls.encoders.highres as highres

    rng = np.random.default_rng(11)
    patches = np.stack([_smooth_image(rng, 300, 512) for _ in range(3)])
    size = hf_encoder.image_size

    def per_window(images: np.ndarray, stride: int) -> np.ndarray:
        cols = []
        for x, y in window_coords(images.shape[1:3], size, stride):
            crop = np.ascontiguousarray(images[:, y : y + size, x : x + size])
            cols.append(hf_encoder.encode_images(crop).numpy())
        return np.stack(cols, axis=1)

    want = {stride: per_window(patches, stride) for stride in (size, size // 2)}

    def no_cut(*args, **kwargs):
        raise AssertionError("model-sized windows must not be cut as uint8 copies")

    monkeypatch.setattr(highres, "cut_windows", no_cut)
    buffers = WindowBuffers()
    for stride, rows in ((size, [3, 1, 2]), (size // 2, [2, 3])):
        start = 0
        for n in rows:
            got, mean = encode_highres(
                hf_encoder,
                patches[start : start + n],
                window_size=size,
                window_stride=stride,
                max_batch=64,
                buffers=buffers,
            )
            np.testing.assert_allclose(got, want[stride][start : start + n], atol=1e-5, rtol=1e-4)
            np.testing.assert_allclose(mean, got.mean(axis=1), atol=1e-7)
            start = (start + n) % 3
    # one window larger than the patch: the whole patch, resized by the encoder, as one view
    one, _ = encode_highres(hf_encoder, patches, window_size=1024, window_stride=1024)
    assert one.shape == (3, 1, hf_encoder.dim)
    np.testing.assert_allclose(one[:, 0], hf_encoder.encode_images(patches).numpy(), atol=1e-6)
    staged = buffers.tensors["windows"]
    assert staged.dtype == torch.float32 and staged.shape[0] >= 2  # one buffer, reused
    with pytest.raises(EncoderError, match="pixels must be float"):
        hf_encoder.encode_pixels(torch.zeros((1, size, size, 3), dtype=torch.uint8))


# --- CLI -----------------------------------------------------------------------------------


def test_cli_models_list(tmp_path: Path, hf_dir: Path, empty_hf_cache: Path) -> None:
    from typer.testing import CliRunner

    from pathgls.cli import app

    (tmp_path / "vinid--plip").symlink_to(hf_dir, target_is_directory=True)
    result = CliRunner().invoke(
        app, ["models", "list", "--models-dir", str(tmp_path)], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0, result.output
    assert "plip" in result.output and "quiltnet" in result.output and "conch" in result.output
    assert "vinid--plip" in result.output and "absent" in result.output


def test_cli_models_pull_unknown_name_fails_cleanly() -> None:
    from typer.testing import CliRunner

    from pathgls.cli import app

    result = CliRunner().invoke(app, ["models", "pull", "no-such-model"])
    assert result.exit_code == 2
    assert "no model card 'no-such-model'" in result.output and "plip" in result.output
