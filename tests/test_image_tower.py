"""Extraction builds the image tower only: ``build_encoder(config, image_only=True)`` for every
backend (Hugging Face CLIP, open_clip directory, open_clip architecture + weights file, CONCH)
gives the same image features as the two-tower encoder, holds no text parameter and no
tokenizer, and refuses text; ``pathgls extract`` builds it so. Tiny random models, offline."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pathgls.encoders
from pathgls.cli import app
from pathgls.config import EncoderConfig
from pathgls.encoders import build_encoder
from pathgls.errors import EncoderError
from pathgls.testing import save_random_conch, save_random_open_clip

# name fragments of text-tower parameters in the three layouts (HF, open_clip, CONCH)
_TEXT = ("text", "token_embedding", "logit_scale", "attn_mask")


def _n_params(module: torch.nn.Module, *, prefixes: tuple[str, ...] = ("",)) -> int:
    return sum(p.numel() for n, p in module.named_parameters() if n.startswith(prefixes))


@pytest.fixture(scope="module")
def encoder_configs(
    tmp_path_factory: pytest.TempPathFactory, tiny_clip: Path
) -> dict[str, EncoderConfig]:
    import open_clip

    root = tmp_path_factory.mktemp("image-tower-models")
    oc_dir = save_random_open_clip(root / "oc", seed=1)
    save_random_conch(root / "models" / "MahmoodLab--CONCH", seed=2)
    torch.manual_seed(3)
    torch.save(open_clip.create_model("ViT-S-32").state_dict(), root / "vit-s-32.pt")
    return {
        "hf": EncoderConfig(name=f"hf:{tiny_clip}", device="cpu"),
        "open_clip dir": EncoderConfig(name=f"open_clip:{oc_dir}", device="cpu"),
        "open_clip arch": EncoderConfig(
            name=f"open_clip:ViT-S-32:{root / 'vit-s-32.pt'}", device="cpu"
        ),
        "conch": EncoderConfig(name="conch", models_dir=str(root / "models"), device="cpu"),
    }


# the image tower's share of the two-tower module, by its parameter names in each layout
_VISUAL = {
    "hf": ("vision_model.", "visual_projection."),
    "open_clip dir": ("visual.",),
    "open_clip arch": ("visual.",),
    "conch": ("visual.",),
}


@pytest.mark.parametrize("backend", list(_VISUAL))
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_image_only_encoder_has_no_text_tower_and_the_same_image_features(
    encoder_configs: dict[str, EncoderConfig], backend: str, precision: str
) -> None:
    from dataclasses import replace

    config = replace(encoder_configs[backend], precision=precision)
    both = build_encoder(config)
    image = build_encoder(config, image_only=True)
    assert not both.image_only and image.image_only
    names = [n for n, _ in image.module.named_parameters()]
    assert names and not [n for n in names if any(t in n for t in _TEXT)], names[:5]
    assert not [n for n, _ in image.module.named_buffers() if any(t in n for t in _TEXT)]
    # exactly the two-tower model's image parameters, nothing more or less
    visual = _n_params(both.module, prefixes=_VISUAL[backend])
    assert _n_params(image.module) == visual < _n_params(both.module)
    assert _n_params(both.module) - visual > 0.2 * _n_params(both.module)  # a real text tower
    assert {p.dtype for p in image.module.parameters()} == {
        p.dtype for n, p in both.module.named_parameters() if n.startswith(_VISUAL[backend])
    }
    assert (image.dim, image.image_size, image.preprocess) == (
        both.dim,
        both.image_size,
        both.preprocess,
    )
    assert (image.model_id, image.revision, image.random_weights) == (
        both.model_id,
        both.revision,
        both.random_weights,
    )
    images = np.random.default_rng(7).integers(0, 256, (3, 300, 260, 3), dtype=np.uint8)
    feats = image.encode_images(images)
    assert torch.equal(feats, both.encode_images(images))
    assert not torch.equal(feats[0], feats[1])  # features that depend on the image
    with pytest.raises(EncoderError, match="image tower only"):
        image.encode_text(["benign lymph node"])
    assert both.encode_text(["benign lymph node"]).shape == (1, both.dim)


def test_image_only_hf_encoder_needs_no_tokenizer(tmp_path: Path, tiny_clip: Path) -> None:
    import shutil

    bare = tmp_path / "no-tokenizer"
    shutil.copytree(tiny_clip, bare)
    for name in ("tokenizer.json", "vocab.json", "tokenizer_config.json", "merges.txt"):
        (bare / name).unlink(missing_ok=True)
    config = EncoderConfig(name=f"hf:{bare}", device="cpu")
    with pytest.raises(EncoderError, match="tokenizer"):
        build_encoder(config)
    assert build_encoder(config, image_only=True).encode_images(
        np.zeros((1, 224, 224, 3), dtype=np.uint8)
    ).shape == (1, 16)


def test_image_only_open_clip_reads_only_the_visual_weights(tmp_path: Path) -> None:
    from pathgls.encoders.image_tower import visual_state

    directory = save_random_open_clip(tmp_path / "oc")
    state = visual_state(directory / "open_clip_model.safetensors", label="t")
    assert state and all(k.startswith("visual.") for k in state)
    torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()}}, tmp_path / "w.bin")
    again = visual_state(tmp_path / "w.bin", label="t")
    assert set(again) == set(state) and all(torch.equal(again[k], state[k]) for k in state)
    # a legacy (non-zip) torch file cannot be memory-mapped: read whole, the same tensors
    legacy = tmp_path / "legacy.bin"
    torch.save({**state, "text.x": torch.ones(1)}, legacy, _use_new_zipfile_serialization=False)
    old = visual_state(legacy, label="t")
    assert set(old) == set(state) and all(torch.equal(old[k], state[k]) for k in state)


def test_extract_builds_the_image_tower_only(
    tmp_path: Path, tiny_clip: Path, cmu_slide: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = []
    real = pathgls.encoders.build_encoder

    def spy(config: EncoderConfig, **kwargs: bool):
        built.append(real(config, **kwargs))
        return built[-1]

    monkeypatch.setattr(pathgls.encoders, "build_encoder", spy)
    out = tmp_path / "run"
    args = ["extract", str(cmu_slide), "--out", str(out), "--encoder", f"hf:{tiny_clip}"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert len(built) == 1 and built[0].image_only
    names = [n for n, _ in built[0].module.named_parameters()]
    assert names and not [n for n in names if "text" in n]
    assert (out / "features_hf-tiny-clip" / f"{cmu_slide.stem}.h5").is_file()
