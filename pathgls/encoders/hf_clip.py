"""Hugging Face ``CLIPModel`` encoders: PLIP and any ``hf:<model>``.

The model, its tokenizer and its image-processor config are read from a local directory with
``local_files_only=True``; the processor config only supplies the numbers (input size, resize
rule, mean/std) for the batched torch preprocessing of :class:`TorchPreprocess`. The tokenizer
is loaded when text is first encoded; its files are checked to be there when the encoder is
built. Extraction builds the image tower only (``CLIPVisionModelWithProjection`` from the same
checkpoint: the same image features without the text tower's build, weights and tokenizer).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import torch

from pathgls.config import EncoderConfig
from pathgls.encoders.base import ClipEncoder, TorchPreprocess
from pathgls.encoders.clip_vision import (
    ProcessorSpec,
    VisionSpec,
    load_tower,
    plain_spec,
    read_json,
    read_processor,
)
from pathgls.encoders.registry import encoder_name, register_encoder
from pathgls.errors import EncoderError
from pathgls.hub import store as hub
from pathgls.hub.cards import model_card
from pathgls.hub.device import ResolvedPrecision, resolve_device, resolve_precision, torch_dtype
from pathgls.hub.hf import load_checked, saved_precision

logger = logging.getLogger(__name__)

# OpenAI CLIP statistics: the fallback when a checkpoint ships no processor config.
_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
_PIL_RESAMPLE = {0: "nearest", 2: "bilinear", 3: "bicubic"}


def _pooled(output: Any) -> torch.Tensor:
    """Projected features from ``get_*_features``.

    transformers 5 returns a ``BaseModelOutputWithPooling`` whose ``pooler_output`` holds the
    projected embedding; transformers 4 returned the tensor itself.
    """
    return output if isinstance(output, torch.Tensor) else output.pooler_output


def _field(value: Any, key: str) -> Any:
    """``value[key]`` or ``value.key``: sizes are dicts in transformers 4, SizeDicts in 5."""
    if isinstance(value, dict):
        return value.get(key)
    return getattr(value, key, None)


def _processor_spec(location: str) -> ProcessorSpec | None:
    """The processor config's numbers: read directly, else through transformers (None: none)."""
    spec = read_processor(location)
    if spec is not None:
        return spec
    from transformers import AutoImageProcessor

    try:
        proc = AutoImageProcessor.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError) as e:
        logger.warning(
            "no image processor config in %s (%s); using OpenAI CLIP mean/std", location, e
        )
        return None
    crop = getattr(proc, "crop_size", None)
    resample = getattr(proc, "resample", 3)
    return ProcessorSpec(
        shortest_edge=_field(getattr(proc, "size", None), "shortest_edge"),
        crop_side=_field(crop, "height") if getattr(proc, "do_center_crop", True) else None,
        resample=int(resample) if isinstance(resample, int) else 3,
        mean=tuple(float(v) for v in getattr(proc, "image_mean", _CLIP_MEAN)),  # type: ignore[arg-type]
        std=tuple(float(v) for v in getattr(proc, "image_std", _CLIP_STD)),  # type: ignore[arg-type]
    )


def _preprocess_from_processor(location: str, image_size: int) -> TorchPreprocess:
    spec = _processor_spec(location)
    if spec is None:
        return TorchPreprocess(size=image_size, mean=_CLIP_MEAN, std=_CLIP_STD)
    if spec.crop_side is not None and spec.crop_side != image_size:
        logger.warning(
            "processor of %s crops to %s but the model takes %s px; using the model's size",
            location,
            spec.crop_side,
            image_size,
        )
    shortest = spec.shortest_edge
    return TorchPreprocess(
        size=image_size,
        mean=spec.mean,
        std=spec.std,
        interpolation=_PIL_RESAMPLE.get(spec.resample, "bicubic"),
        resize_mode="shortest" if shortest else "squash",
        resize_to=int(shortest) if shortest else None,
    )


def load_hf_clip(
    config: EncoderConfig,
    location: str,
    *,
    model_id: str | None = None,
    image_only: bool = False,
) -> ClipEncoder:
    """Build an encoder from a local Hugging Face ``CLIPModel`` directory.

    Args:
        config: Encoder config (name, device, precision).
        location: Directory with ``config.json``, weights, tokenizer and processor config.
        model_id: Repo id to record (default: read from the directory, else the path).
        image_only: Build the vision tower and its projection only
            (``CLIPVisionModelWithProjection``: the same image features, no text tower, no
            tokenizer); the encoder's ``encode_text`` then raises.

    Raises:
        EncoderError: the directory holds no loadable ``CLIPModel``.
    """
    device = resolve_device(config.device)
    if image_only and (spec := plain_spec(location)) is not None:
        return _plain_image_encoder(config, location, spec, device, model_id=model_id)
    from transformers import AutoConfig

    try:
        hf_config = AutoConfig.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError) as e:
        raise EncoderError(
            f"{config.name!r}: no Hugging Face model config in {location}: {e}"
        ) from e
    if hf_config.model_type != "clip":
        raise EncoderError(
            f"{config.name!r}: {location} holds a {hf_config.model_type!r} model, not a CLIPModel"
        )
    precision = resolve_precision(config.precision, device, preferred=saved_precision(hf_config))
    if image_only:
        image_features, text_features, model = _image_tower(
            config, location, precision, device, hf_config
        )
    else:
        image_features, text_features, model = _both_towers(
            config, location, precision, device, hf_config
        )
    image_size = int(hf_config.vision_config.image_size)
    return _encoder(
        config,
        location,
        dim=int(hf_config.projection_dim),
        image_size=image_size,
        precision=precision,
        device=device,
        model_id=model_id,
        towers=(image_features, text_features, model),
    )


def _encoder(
    config: EncoderConfig,
    location: str,
    *,
    dim: int,
    image_size: int,
    precision: ResolvedPrecision,
    device: torch.device,
    model_id: str | None,
    towers: _Towers,
) -> ClipEncoder:
    """The :class:`ClipEncoder` of a loaded checkpoint: its provenance and processor numbers."""
    image_features, text_features, model = towers
    source_repo, revision = hub.location_source(location)
    return ClipEncoder(
        name=encoder_name(config),
        dim=dim,
        image_size=image_size,
        precision=precision,
        device=str(device),
        model_id=model_id or source_repo or str(location),
        revision=revision,
        random_weights=hub.is_random_weights(location),
        image_features=image_features,
        text_features=text_features,
        preprocess=_preprocess_from_processor(location, image_size),
        module=model,
    )


def _plain_image_encoder(
    config: EncoderConfig,
    location: str,
    spec: VisionSpec,
    device: torch.device,
    *,
    model_id: str | None,
) -> ClipEncoder:
    """The image tower in plain torch (:mod:`pathgls.encoders.clip_vision`), no transformers."""
    saved = read_json(Path(location) / "config.json") or {}
    dtype_name = saved.get("dtype") or saved.get("torch_dtype")
    precision = resolve_precision(
        config.precision, device, preferred="bf16" if dtype_name == "bfloat16" else None
    )
    model = load_tower(location, spec, dtype=torch_dtype(precision), label=str(config.name))
    model = model.to(device)
    return _encoder(
        config,
        location,
        dim=spec.projection_dim,
        image_size=spec.image_size,
        precision=precision,
        device=device,
        model_id=model_id,
        towers=(model, None, model),
    )


_Towers = tuple[
    Callable[[torch.Tensor], torch.Tensor],
    Callable[[list[str]], torch.Tensor] | None,
    torch.nn.Module,
]


def _image_tower(
    config: EncoderConfig,
    location: str,
    precision: ResolvedPrecision,
    device: torch.device,
    hf_config: Any,
) -> _Towers:
    from transformers import CLIPVisionModelWithProjection

    class VisionTower(CLIPVisionModelWithProjection):
        # the checkpoint is a whole CLIPModel: its text weights are left unread, not reported
        # (transformers declares this class default as an instance attribute; RUF012 asks for
        # ClassVar on a mutable class attribute)
        _keys_to_ignore_on_load_unexpected: ClassVar[list[str]] = [  # type: ignore[misc]
            r"^text_model\.",
            r"^text_projection\.",
            r"^logit_",
        ]

    # the vision config of the CLIPModel, with the projection size of the joint space (a
    # CLIPConfig keeps it at the top level, and CLIPVisionConfig's own default is 512)
    vision_config = copy.deepcopy(hf_config.vision_config)
    vision_config.projection_dim = int(hf_config.projection_dim)
    model = load_checked(
        VisionTower,
        location,
        label=str(config.name),
        what="the vision tower of a CLIPModel",
        dtype=torch_dtype(precision),
        config=vision_config,
    )
    model = model.to(device).eval()

    def image_features(pixels: torch.Tensor) -> torch.Tensor:
        return model(pixel_values=pixels).image_embeds

    return image_features, None, model


def _both_towers(
    config: EncoderConfig,
    location: str,
    precision: ResolvedPrecision,
    device: torch.device,
    hf_config: Any,
) -> _Towers:
    from transformers import CLIPModel

    model = load_checked(
        CLIPModel,
        location,
        label=str(config.name),
        what="a CLIPModel",
        dtype=torch_dtype(precision),
    )
    tokenizer = _lazy_tokenizer(config.name, location)
    model = model.to(device).eval()
    max_positions = int(hf_config.text_config.max_position_embeddings)

    def image_features(pixels: torch.Tensor) -> torch.Tensor:
        return _pooled(model.get_image_features(pixel_values=pixels))

    def text_features(texts: list[str]) -> torch.Tensor:
        tk = tokenizer()
        max_len = min(int(tk.model_max_length), max_positions)
        tok = tk(texts, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        out = model.get_text_features(
            input_ids=tok["input_ids"].to(device), attention_mask=tok["attention_mask"].to(device)
        )
        return _pooled(out)

    return image_features, text_features, model


#: Files one of which a Hugging Face tokenizer directory holds.
_TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "tokenizer_config.json")


def _lazy_tokenizer(label: str | None, location: str) -> Callable[[], Any]:
    """The directory's tokenizer, loaded on the first call (once, thread-safely).

    Raises:
        EncoderError: now when the directory has no tokenizer file; on the first call when
            the tokenizer cannot be loaded.
    """
    if not any((Path(location) / f).is_file() for f in _TOKENIZER_FILES):
        raise EncoderError(
            f"{label!r}: cannot load the tokenizer in {location}: none of "
            f"{', '.join(_TOKENIZER_FILES)} is there"
        )
    lock, loaded = threading.Lock(), list[Any]()

    def get() -> Any:
        with lock:
            if not loaded:
                from transformers import AutoTokenizer

                try:
                    loaded.append(AutoTokenizer.from_pretrained(location, local_files_only=True))
                except (OSError, ValueError, RuntimeError, KeyError) as e:
                    raise EncoderError(
                        f"{label!r}: cannot load the tokenizer in {location}: {e}"
                    ) from e
            return loaded[0]

    return get


@register_encoder(
    "plip",
    description="PLIP: CLIP ViT-B/32 fine-tuned on OpenPath pathology image–text pairs",
    backend="hf_clip",
)
def _plip(config: EncoderConfig, location: str, *, image_only: bool = False) -> ClipEncoder:
    return load_hf_clip(config, location, model_id=model_card("plip").repo, image_only=image_only)
