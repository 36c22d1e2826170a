"""The plain-torch CLIP vision tower (``pathgls.encoders.clip_vision``) against transformers.

``pathgls extract`` builds Hugging Face CLIP image towers without importing transformers; these
tests hold it to transformers' own ``CLIPVisionModelWithProjection`` on tiny random checkpoints
(the same numbers, bit for bit in fp32), to the processor numbers transformers reads, and to
the transformers path for every checkpoint it does not read (pickles, other activations)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathgls.config import EncoderConfig
from pathgls.encoders import build_encoder
from pathgls.encoders.clip_vision import ClipVisionTower, load_tower, plain_spec, read_processor
from pathgls.encoders.hf_clip import _preprocess_from_processor
from pathgls.errors import EncoderError


def _save_clip(
    out: Path, *, act: str = "quick_gelu", seed: int = 0, shard: str | None = None
) -> Path:
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    vision = {
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": 64,
        "patch_size": 16,
        "hidden_act": act,
    }
    text = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1}
    text |= {"num_attention_heads": 2, "vocab_size": 99}
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=8)
    torch.manual_seed(seed)
    kwargs = {"max_shard_size": shard} if shard else {}
    CLIPModel(config).eval().save_pretrained(out, **kwargs)
    CLIPImageProcessor(
        size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}
    ).save_pretrained(out)
    return out


def _reference(location: Path, dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    from transformers import CLIPConfig, CLIPVisionModelWithProjection

    config = CLIPConfig.from_pretrained(location)
    vision = config.vision_config
    vision.projection_dim = config.projection_dim  # the joint space's size, as pathgls builds it
    return CLIPVisionModelWithProjection.from_pretrained(
        location, dtype=dtype, config=vision
    ).eval()


@pytest.mark.parametrize("act", ["quick_gelu", "gelu"])
def test_same_features_as_transformers_bit_for_bit(tmp_path: Path, act: str) -> None:
    loc = _save_clip(tmp_path / "m", act=act)
    spec = plain_spec(loc)
    assert spec is not None and spec.hidden_act == act and spec.projection_dim == 8
    ours = load_tower(loc, spec, dtype=torch.float32, label="t")
    pixels = torch.randn(3, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        got = ours(pixels)
        want = _reference(loc)(pixel_values=pixels).image_embeds
    assert got.shape == (3, 8)
    assert torch.equal(got, want)
    # a different checkpoint gives different features: the weights were read, not defaulted
    other = load_tower(
        _save_clip(tmp_path / "o", act=act, seed=5), spec, dtype=torch.float32, label="o"
    )
    with torch.inference_mode():
        assert not torch.allclose(other(pixels), got)


def test_bf16_and_sharded_checkpoints(tmp_path: Path) -> None:
    loc = _save_clip(tmp_path / "sharded", shard="20KB")
    assert (loc / "model.safetensors.index.json").is_file()
    assert not (loc / "model.safetensors").exists()
    spec = plain_spec(loc)
    assert spec is not None
    pixels = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        fp32 = load_tower(loc, spec, dtype=torch.float32, label="t")(pixels)
        assert torch.equal(fp32, _reference(loc)(pixel_values=pixels).image_embeds)
        ours = load_tower(loc, spec, dtype=torch.bfloat16, label="t")(pixels)
        want = _reference(loc, torch.bfloat16)(pixel_values=pixels).image_embeds
    assert ours.dtype == torch.bfloat16
    assert torch.allclose(ours.float(), want.float(), atol=2e-2, rtol=2e-2)


def test_extract_encoder_skips_transformers(tiny_clip: Path) -> None:
    """Building the image-only encoder imports neither transformers nor its tokenizers."""
    code = (
        "import sys; from pathgls.config import EncoderConfig; "
        "from pathgls.encoders import build_encoder; "
        f"e = build_encoder(EncoderConfig(name='hf:{tiny_clip}', device='cpu'), image_only=True); "
        "print(type(e.module).__name__, 'transformers' in sys.modules, e.dim)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    ).stdout.split()
    assert out == ["ClipVisionTower", "False", "16"]


def test_encoder_features_equal_the_two_tower_encoder(tiny_clip: Path) -> None:
    image_only = build_encoder(EncoderConfig(name=f"hf:{tiny_clip}", device="cpu"), image_only=True)
    both = build_encoder(EncoderConfig(name=f"hf:{tiny_clip}", device="cpu"))
    assert isinstance(image_only.module, ClipVisionTower)
    assert not isinstance(both.module, ClipVisionTower)
    gen = torch.Generator().manual_seed(3)
    images = torch.randint(0, 256, (4, 224, 224, 3), dtype=torch.uint8, generator=gen)
    assert torch.equal(image_only.encode_images(images), both.encode_images(images))


def test_checkpoints_it_does_not_read_go_through_transformers(tmp_path: Path) -> None:
    loc = _save_clip(tmp_path / "m")
    config = json.loads((loc / "config.json").read_text())
    odd_act = tmp_path / "odd-act"
    shutil.copytree(loc, odd_act)
    config["vision_config"]["hidden_act"] = "gelu_new"
    (odd_act / "config.json").write_text(json.dumps(config))
    assert plain_spec(odd_act) is None
    # a pickled checkpoint keeps transformers' loader and its refusal of pickles
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    shutil.copy(loc / "config.json", pickled)
    assert plain_spec(pickled) is None
    not_clip = tmp_path / "not-clip"
    shutil.copytree(loc, not_clip)
    (not_clip / "config.json").write_text(json.dumps({"model_type": "bert"}))
    assert plain_spec(not_clip) is None
    assert plain_spec(tmp_path / "nowhere") is None
    enc = build_encoder(EncoderConfig(name=f"hf:{odd_act}", device="cpu"), image_only=True)
    assert not isinstance(enc.module, ClipVisionTower)


def test_incomplete_or_broken_weights_are_refused(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    loc = _save_clip(tmp_path / "m")
    spec = plain_spec(loc)
    assert spec is not None
    weights = load_file(loc / "model.safetensors")
    del weights["visual_projection.weight"]
    save_file(weights, loc / "model.safetensors")
    with pytest.raises(
        EncoderError, match=r"do not cover the model \(1 missing.*visual_projection"
    ):
        load_tower(loc, spec, dtype=torch.float32, label="t")
    weights["visual_projection.weight"] = torch.zeros(9, 32)
    save_file(weights, loc / "model.safetensors")
    with pytest.raises(EncoderError, match=r"visual_projection.weight has shape \(9, 32\)"):
        load_tower(loc, spec, dtype=torch.float32, label="t")
    (loc / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(EncoderError, match="cannot load the vision tower"):
        build_encoder(EncoderConfig(name=f"hf:{loc}", device="cpu"), image_only=True)


def _processor_dir(tmp_path: Path, name: str, config: dict[str, object] | None) -> Path:
    d = tmp_path / name
    d.mkdir()
    if config is not None:
        (d / "preprocessor_config.json").write_text(json.dumps(config))
    return d


@pytest.mark.parametrize(
    "config",
    [
        {"image_processor_type": "CLIPImageProcessor"},
        {
            "image_processor_type": "CLIPImageProcessor",
            "size": 200,
            "crop_size": 180,
            "resample": 2,
            "image_mean": [0.5, 0.4, 0.3],
            "image_std": [0.2, 0.25, 0.3],
        },
        {
            "image_processor_type": "CLIPImageProcessor",
            "size": {"shortest_edge": 230},
            "do_center_crop": False,
        },
    ],
)
def test_processor_numbers_match_transformers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, object]
) -> None:
    import pathgls.encoders.hf_clip as hf_clip

    d = _processor_dir(tmp_path, "p", config)
    assert read_processor(d) is not None
    ours = _preprocess_from_processor(str(d), 224)
    monkeypatch.setattr(hf_clip, "read_processor", lambda location: None)
    theirs = _preprocess_from_processor(str(d), 224)
    assert ours == theirs


def test_processor_configs_it_does_not_read(tmp_path: Path) -> None:
    assert read_processor(_processor_dir(tmp_path, "none", None)) is None
    other = {"image_processor_type": "SiglipImageProcessor"}
    assert read_processor(_processor_dir(tmp_path, "siglip", other)) is None
    square = {"image_processor_type": "CLIPImageProcessor", "size": {"height": 224, "width": 224}}
    assert read_processor(_processor_dir(tmp_path, "square", square)) is None
    scalar = {"image_processor_type": "CLIPImageProcessor", "image_mean": 0.5}
    assert read_processor(_processor_dir(tmp_path, "scalar", scalar)) is None
