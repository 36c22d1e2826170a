"""The CLIP vision tower of a Hugging Face ``CLIPModel`` checkpoint in plain torch.

Why: extraction needs only the image tower, and importing transformers' modelling stack to
build it costs about 2 s of CPU per process (``import transformers`` pulls torch.distributed,
dynamo and its loss zoo) — a third of ``pathgls extract`` on a small slide. This module builds
the same network (pre-LayerNorm ViT, CLS pooling, post-LayerNorm, linear projection) from the
checkpoint's ``config.json`` and safetensors weights with torch alone, op for op as
transformers' ``CLIPVisionModelWithProjection`` with its default SDPA attention, so the
features are the same numbers (``tests/test_clip_vision.py`` checks them against transformers).

:func:`plain_spec` says whether a checkpoint is one this module reads (a CLIP config with a
supported activation and safetensors weights); anything else goes through transformers.
:func:`read_processor` reads a ``CLIPImageProcessor`` config the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from pathgls.errors import EncoderError

#: Activations of the MLP, by their transformers names.
ACTIVATIONS = {
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
    "gelu": F.gelu,
}
#: CLIPVisionConfig's defaults for keys a config.json may leave out.
_VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 32,
    "hidden_act": "quick_gelu",
    "layer_norm_eps": 1e-5,
}
_WEIGHTS = "model.safetensors"
_INDEX = "model.safetensors.index.json"
#: The checkpoint keys of the image tower; the rest (text tower, logit scale) is left unread.
_PREFIXES = ("vision_model.", "visual_projection.")


@dataclass(frozen=True)
class VisionSpec:
    """The shape of a CLIP vision tower (``vision_config`` plus the joint ``projection_dim``)."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_channels: int
    image_size: int
    patch_size: int
    hidden_act: str
    layer_norm_eps: float
    projection_dim: int


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``; None when the file is absent or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def plain_spec(location: str | Path) -> VisionSpec | None:
    """The tower's shape when this module can build it from ``location``, else None.

    None (transformers then loads it) for: no readable ``config.json``, a model type other than
    ``clip``, an activation or field this module does not implement, or weights that are not
    safetensors (a pickled ``pytorch_model.bin`` keeps transformers' refusal and messages).
    """
    root = Path(location)
    config = read_json(root / "config.json")
    if config is None or config.get("model_type") != "clip":
        return None
    vision = config.get("vision_config")
    if not isinstance(vision, dict) or not (
        (root / _WEIGHTS).is_file() or (root / _INDEX).is_file()
    ):
        return None
    merged = {**_VISION_DEFAULTS, **vision}
    try:
        spec = VisionSpec(
            **{k: merged[k] for k in _VISION_DEFAULTS},
            projection_dim=config.get("projection_dim", 512),
        )
    except TypeError:
        return None
    ints = (
        spec.hidden_size,
        spec.intermediate_size,
        spec.num_hidden_layers,
        spec.num_attention_heads,
        spec.num_channels,
        spec.image_size,
        spec.patch_size,
        spec.projection_dim,
    )
    if (
        spec.hidden_act not in ACTIVATIONS
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in ints)
        or spec.hidden_size % spec.num_attention_heads
        or spec.image_size % spec.patch_size
        or not isinstance(spec.layer_norm_eps, int | float)
    ):
        return None
    return spec


class _Attention(nn.Module):
    def __init__(self, spec: VisionSpec) -> None:
        super().__init__()
        width = spec.hidden_size
        self.heads = spec.num_attention_heads
        self.scale = (width // self.heads) ** -0.5
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = (*x.shape[:-1], self.heads, -1)
        q = self.q_proj(x).view(shape).transpose(1, 2)
        k = self.k_proj(x).view(shape).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, scale=self.scale)
        out = out.transpose(1, 2).contiguous()
        return self.out_proj(out.reshape(*x.shape[:-1], -1).contiguous())


class _MLP(nn.Module):
    def __init__(self, spec: VisionSpec) -> None:
        super().__init__()
        self.fc1 = nn.Linear(spec.hidden_size, spec.intermediate_size)
        self.fc2 = nn.Linear(spec.intermediate_size, spec.hidden_size)
        self.act = ACTIVATIONS[spec.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class _Layer(nn.Module):
    def __init__(self, spec: VisionSpec) -> None:
        super().__init__()
        self.self_attn = _Attention(spec)
        self.layer_norm1 = nn.LayerNorm(spec.hidden_size, eps=spec.layer_norm_eps)
        self.mlp = _MLP(spec)
        self.layer_norm2 = nn.LayerNorm(spec.hidden_size, eps=spec.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class _Encoder(nn.Module):
    def __init__(self, spec: VisionSpec) -> None:
        super().__init__()
        self.layers = nn.ModuleList(_Layer(spec) for _ in range(spec.num_hidden_layers))


class _Table(nn.Module):
    """An embedding table read whole (``nn.Embedding`` without its lookup and random init)."""

    def __init__(self, rows: int, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, width))


class _Embeddings(nn.Module):
    def __init__(self, spec: VisionSpec) -> None:
        super().__init__()
        width = spec.hidden_size
        self.class_embedding = nn.Parameter(torch.empty(width))
        self.patch_embedding = nn.Conv2d(
            spec.num_channels, width, spec.patch_size, stride=spec.patch_size, bias=False
        )
        self.position_embedding = _Table((spec.image_size // spec.patch_size) ** 2 + 1, width)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        patches = self.patch_embedding(pixels.to(dtype=self.patch_embedding.weight.dtype))
        patches = patches.flatten(2).transpose(1, 2)
        cls = self.class_embedding.expand(pixels.shape[0], 1, -1)
        return torch.cat([cls, patches], dim=1) + self.position_embedding.weight.unsqueeze(0)


class _VisionModel(nn.Module):
    def __init__(self, spec: VisionSpec) -> None:
        super().__init__()
        self.embeddings = _Embeddings(spec)
        self.pre_layrnorm = nn.LayerNorm(spec.hidden_size, eps=spec.layer_norm_eps)
        self.encoder = _Encoder(spec)
        self.post_layernorm = nn.LayerNorm(spec.hidden_size, eps=spec.layer_norm_eps)


class ClipVisionTower(nn.Module):
    """``CLIPVisionModelWithProjection``'s image features, with its parameter names."""

    def __init__(self, spec: VisionSpec) -> None:
        super().__init__()
        self.spec = spec
        self.vision_model = _VisionModel(spec)
        self.visual_projection = nn.Linear(spec.hidden_size, spec.projection_dim, bias=False)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        side = self.spec.image_size
        if pixels.shape[-2:] != (side, side):
            raise EncoderError(
                f"the vision tower takes {side} x {side} px; got {tuple(pixels.shape[-2:])}"
            )
        vm = self.vision_model
        x = vm.pre_layrnorm(vm.embeddings(pixels))
        for layer in vm.encoder.layers:
            x = layer(x)
        return self.visual_projection(vm.post_layernorm(x[:, 0, :]))


def _weight_files(root: Path) -> list[Path]:
    if (root / _WEIGHTS).is_file():
        return [root / _WEIGHTS]
    index = read_json(root / _INDEX)
    shards = index.get("weight_map") if index else None
    if not isinstance(shards, dict):
        raise EncoderError(f"{root / _INDEX} has no weight_map")
    return [root / name for name in sorted(set(map(str, shards.values())))]


def load_tower(
    location: str | Path, spec: VisionSpec, *, dtype: torch.dtype, label: str
) -> ClipVisionTower:
    """Build the tower and read its weights (only the image tower's tensors) from safetensors.

    Raises:
        EncoderError: a weights file cannot be read, or the weights do not cover the tower or
            have the wrong shapes.
    """
    from safetensors import SafetensorError, safe_open

    root = Path(location)
    with torch.device("meta"):
        model = ClipVisionTower(spec)
    expected = dict(model.state_dict())
    found: dict[str, torch.Tensor] = {}
    try:
        for path in _weight_files(root):
            with safe_open(str(path), framework="pt") as f:
                for key in f.keys():  # noqa: SIM118 - safe_open has keys(), not __iter__
                    if key in expected:
                        found[key] = f.get_tensor(key).to(dtype)
    except (OSError, SafetensorError, ValueError) as e:
        raise EncoderError(
            f"{label!r}: cannot load the vision tower of a CLIPModel from {root}: {e}"
        ) from e
    missing = [k for k in expected if k not in found]
    if missing:
        raise EncoderError(
            f"{label!r}: weights in {root} do not cover the model ({len(missing)} missing, "
            f"e.g. {missing[:3]})"
        )
    wrong = [k for k, v in found.items() if v.shape != expected[k].shape]
    if wrong:
        k = wrong[0]
        raise EncoderError(
            f"{label!r}: cannot load the vision tower of a CLIPModel from {root}: {k} has shape "
            f"{tuple(found[k].shape)}, the config asks for {tuple(expected[k].shape)}"
        )
    model.load_state_dict(found, assign=True)
    return model.eval()


@dataclass(frozen=True)
class ProcessorSpec:
    """The numbers of a ``CLIPImageProcessor`` config that the torch preprocessing uses."""

    shortest_edge: int | None
    crop_side: int | None
    resample: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]


_OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
_OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


def _side(value: Any, key: str) -> int | None:
    if isinstance(value, dict):
        value = value.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _triple(value: Any, default: tuple[float, float, float]) -> tuple[float, float, float] | None:
    if value is None:
        return default
    numbers = isinstance(value, list) and len(value) == 3
    if numbers and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return (float(value[0]), float(value[1]), float(value[2]))
    return None


def read_processor(location: str | Path) -> ProcessorSpec | None:
    """A ``CLIPImageProcessor`` config's numbers, read as transformers reads them.

    None when the file is absent, not a CLIP image processor, or has a shape this reader does
    not know (the caller then asks transformers).
    """
    config = read_json(Path(location) / "preprocessor_config.json")
    if config is None or not str(config.get("image_processor_type", "")).startswith(
        "CLIPImageProcessor"
    ):
        return None
    size = config.get("size", {"shortest_edge": 224})
    if isinstance(size, dict) and set(size) != {"shortest_edge"}:
        return None  # height/width sizes: let transformers interpret them
    shortest = _side(size, "shortest_edge")
    crop = config.get("crop_size", {"height": 224, "width": 224})
    crop_side = _side(crop, "height") if config.get("do_center_crop", True) else None
    resample = config.get("resample", 3)
    mean = _triple(config.get("image_mean"), _OPENAI_MEAN)
    std = _triple(config.get("image_std"), _OPENAI_STD)
    if (
        shortest is None
        or (config.get("do_center_crop", True) and crop_side is None)
        or not isinstance(resample, int)
        or mean is None
        or std is None
    ):
        return None
    return ProcessorSpec(
        shortest_edge=shortest, crop_side=crop_side, resample=resample, mean=mean, std=std
    )
