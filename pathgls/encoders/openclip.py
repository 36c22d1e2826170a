"""open_clip encoders: QuiltNet, ``open_clip:<dir>``, ``open_clip:hf-hub:<repo>`` and
``open_clip:<arch>:<tag-or-weights-file>``.

Everything is loaded from local files: directories through open_clip's ``local-dir:`` schema,
pretrained tags by looking up the tag's Hugging Face repo locally (see :mod:`.hub`) and
passing the resolved file to ``create_model``, with the tag's preprocessing and QuickGELU
setting applied as open_clip would. Known limit: open_clip configs whose text tower is a
Hugging Face model (``hf_model_name``) still ask the Hugging Face cache for that model's config
when they are built; with ``HF_HUB_OFFLINE=1`` and no cached copy they fail with a clear error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from pathgls.config import EncoderConfig
from pathgls.encoders.base import ClipEncoder, TorchPreprocess
from pathgls.encoders.image_tower import ImageTower, load_image_tower
from pathgls.encoders.registry import encoder_name, register_encoder
from pathgls.errors import EncoderError, ModelNotFoundError, UnknownNameError
from pathgls.hub import store as hub
from pathgls.hub.cards import model_card
from pathgls.hub.device import ResolvedPrecision, resolve_device, resolve_precision
from pathgls.hub.hf import refusing_pickles

# Weight files open_clip looks for in a directory, best first.
_CHECKPOINT_NAMES = (
    "open_clip_model.safetensors",
    "open_clip_pytorch_model.safetensors",
    "open_clip_pytorch_model.bin",
    "model.safetensors",
    "pytorch_model.bin",
)
_PREPROCESS_KEYS = ("mean", "std", "interpolation", "resize_mode", "fill_color")


def find_checkpoint(directory: str | os.PathLike[str]) -> Path | None:
    """The weights file open_clip would load from ``directory`` (None when there is none)."""
    d = Path(directory)
    for name in _CHECKPOINT_NAMES:
        if (d / name).is_file():
            return d / name
    files = sorted([*d.glob("*.safetensors"), *d.glob("*.bin"), *d.glob("*.pt"), *d.glob("*.pth")])
    return files[0] if files else None


def preprocess_from_model(model: torch.nn.Module) -> TorchPreprocess:
    """:class:`TorchPreprocess` from the preprocessing config open_clip attached to ``model``."""
    import open_clip

    cfg = open_clip.get_model_preprocess_cfg(model)
    size = cfg.get("size", 224)
    if isinstance(size, list | tuple):
        if len(set(size)) != 1:
            raise EncoderError(f"non-square model input {size} is not supported")
        size = size[0]
    interpolation = cfg.get("interpolation", "bicubic")
    return TorchPreprocess(
        size=int(size),
        mean=tuple(float(v) for v in cfg.get("mean", open_clip.OPENAI_DATASET_MEAN)),  # type: ignore[arg-type]
        std=tuple(float(v) for v in cfg.get("std", open_clip.OPENAI_DATASET_STD)),  # type: ignore[arg-type]
        interpolation=interpolation if interpolation in ("bilinear", "nearest") else "bicubic",
        resize_mode=cfg.get("resize_mode", "shortest"),
        fill=int(cfg.get("fill_color", 0)),
    )


def _embed_dim(model: torch.nn.Module) -> int:
    if isinstance(model, ImageTower):
        return model.embed_dim
    text = getattr(model, "text", None)
    if text is not None and getattr(text, "output_dim", None):
        return int(text.output_dim)
    proj = getattr(model, "text_projection", None)
    if isinstance(proj, torch.nn.Linear):
        return int(proj.out_features)
    if isinstance(proj, torch.Tensor):
        return int(proj.shape[1])
    raise EncoderError(f"cannot tell the embedding size of {type(model).__name__}")


def make_open_clip_encoder(
    config: EncoderConfig,
    model: Any,  # an open_clip CLIP or an ImageTower (open_clip ships no type information)
    tokenize: Callable[[list[str]], torch.Tensor] | None,
    *,
    device: torch.device,
    precision: ResolvedPrecision,
    model_id: str,
    revision: str | None,
    random_weights: bool,
) -> ClipEncoder:
    """Wrap a loaded open_clip model (``encode_image``, ``encode_text``) as a ClipEncoder.

    An :class:`~pathgls.encoders.image_tower.ImageTower` (with ``tokenize`` None) makes an
    image-only encoder.
    """
    model = model.eval()

    def image_features(pixels: torch.Tensor) -> torch.Tensor:
        return model.encode_image(pixels)

    def text_features(texts: list[str]) -> torch.Tensor:
        assert tokenize is not None  # never called on an image-only encoder
        return model.encode_text(tokenize(texts).to(device))

    image_only = tokenize is None or isinstance(model, ImageTower)

    preprocess = preprocess_from_model(model)
    dim = _embed_dim(model)
    return ClipEncoder(
        name=encoder_name(config),
        dim=dim,
        image_size=preprocess.size,
        precision=precision,
        device=str(device),
        model_id=model_id,
        revision=revision,
        random_weights=random_weights,
        image_features=image_features,
        text_features=None if image_only else text_features,
        preprocess=preprocess,
        module=model,
    )


def _create(
    config: EncoderConfig, label: str, **kwargs: Any
) -> tuple[torch.nn.Module, torch.device, ResolvedPrecision]:
    import open_clip

    device = resolve_device(config.device)
    precision = resolve_precision(config.precision, device)
    try:
        with refusing_pickles(str(config.name), label):
            model = open_clip.create_model(
                precision=precision, device=device, require_pretrained=True, **kwargs
            )
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        raise EncoderError(f"{config.name!r}: open_clip cannot build {label}: {e}") from e
    return model, device, precision


def _create_image_tower(
    config: EncoderConfig,
    label: str,
    *,
    model_cfg: dict[str, Any],
    checkpoint: Path,
    preprocess_cfg: dict[str, Any],
    quick_gelu: bool = False,
) -> tuple[torch.nn.Module, torch.device, ResolvedPrecision]:
    device = resolve_device(config.device)
    precision = resolve_precision(config.precision, device)
    tower = load_image_tower(
        model_cfg,
        checkpoint,
        label=f"{config.name} ({label})",
        precision=precision,
        device=device,
        preprocess_cfg=preprocess_cfg,
        quick_gelu=quick_gelu,
    )
    return tower, device, precision


def load_open_clip_dir(
    config: EncoderConfig,
    location: str,
    *,
    model_id: str | None = None,
    image_only: bool = False,
) -> ClipEncoder:
    """Build an encoder from a directory with ``open_clip_config.json`` and a weights file.

    ``image_only`` builds the image tower alone (no text tower, no tokenizer).

    Raises:
        ModelNotFoundError: the directory has no config or no weights.
        EncoderError: open_clip cannot build the model from them.
    """
    import open_clip

    d = Path(location)
    if not (d / "open_clip_config.json").is_file():
        raise ModelNotFoundError(f"{config.name!r}: {d} has no open_clip_config.json")
    if find_checkpoint(d) is None:
        raise ModelNotFoundError(
            f"{config.name!r}: {d} has an open_clip config but no weights file"
        )
    tokenizer: Callable[[list[str]], torch.Tensor] | None = None
    if image_only:
        try:
            saved = json.loads((d / "open_clip_config.json").read_text(encoding="utf-8"))
            model_cfg = saved["model_cfg"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise EncoderError(
                f"{config.name!r}: no model_cfg in {d / 'open_clip_config.json'}: {e}"
            ) from e
        checkpoint = find_checkpoint(d)
        assert checkpoint is not None  # checked above
        model, device, precision = _create_image_tower(
            config,
            str(d),
            model_cfg=model_cfg,
            checkpoint=checkpoint,
            preprocess_cfg=saved.get("preprocess_cfg") or {},
        )
    else:
        model, device, precision = _create(config, str(d), model_name=f"local-dir:{d}")
        try:
            tokenizer = open_clip.get_tokenizer(f"local-dir:{d}")
        except (OSError, ValueError, RuntimeError) as e:
            raise EncoderError(f"{config.name!r}: cannot load the tokenizer of {d}: {e}") from e
    source_repo, revision = hub.location_source(d)
    return make_open_clip_encoder(
        config,
        model,
        tokenizer,
        device=device,
        precision=precision,
        model_id=model_id or source_repo or str(d),
        revision=revision,
        random_weights=hub.is_random_weights(d),
    )


def load_open_clip_arch(
    config: EncoderConfig, *, arch: str, weights: str, image_only: bool = False
) -> ClipEncoder:
    """Build a built-in open_clip architecture with a local weights file or a pretrained tag.

    A tag is resolved to its Hugging Face repo and looked up locally, never downloaded.
    ``image_only`` builds the image tower alone (no text tower, no tokenizer).

    Raises:
        UnknownNameError: unknown architecture or tag.
        ModelNotFoundError: the tag's weights are not available locally.
        EncoderError: the tag has no Hugging Face location, or loading fails.
    """
    import open_clip

    if arch not in open_clip.list_models():
        raise UnknownNameError(f"{config.name!r}: unknown open_clip architecture {arch!r}")
    kwargs: dict[str, Any] = {}
    path = Path(weights).expanduser()
    if path.is_file():
        checkpoint = path
        model_id = f"{arch}:{path}"
    else:
        tag_cfg = open_clip.get_pretrained_cfg(arch, weights)
        if not tag_cfg:
            tags = ", ".join(open_clip.list_pretrained_tags_by_model(arch)) or "none"
            raise UnknownNameError(
                f"{config.name!r}: {weights!r} is neither a file nor a pretrained tag of {arch} "
                f"(tags: {tags})"
            )
        hf_hub = tag_cfg.get("hf_hub", "")
        if not hf_hub:
            raise EncoderError(
                f"{config.name!r}: tag {weights!r} has no Hugging Face location; download its "
                f"weights and use open_clip:{arch}:<weights-file>"
            )
        # open_clip writes "org/name/file" or "org/name/" (the default weights file).
        repo_id, filename = os.path.split(hf_hub)
        directory = hub.resolve_model(
            repo_id,
            name=encoder_name(config),
            pull_name=f"hf:{repo_id}",
            models_dir=config.models_dir,
        )
        found = directory / filename if filename else find_checkpoint(directory)
        if found is None or not found.is_file():
            raise ModelNotFoundError(
                f"{config.name!r}: no weights file for tag {weights!r} in {directory}"
            )
        checkpoint = found
        model_id = f"{arch}:{weights}"
        kwargs["force_quick_gelu"] = bool(tag_cfg.get("quick_gelu", False))
        kwargs["force_preprocess_cfg"] = {k: tag_cfg[k] for k in _PREPROCESS_KEYS if k in tag_cfg}
    label = f"{arch} with {checkpoint}"
    if image_only:
        model, device, precision = _create_image_tower(
            config,
            label,
            model_cfg=open_clip.get_model_config(arch),
            checkpoint=checkpoint,
            preprocess_cfg=kwargs.get("force_preprocess_cfg", {}),
            quick_gelu=kwargs.get("force_quick_gelu", False),
        )
    else:
        model, device, precision = _create(
            config, label, model_name=arch, pretrained=str(checkpoint), **kwargs
        )
    _, revision = hub.location_source(checkpoint)
    return make_open_clip_encoder(
        config,
        model,
        None if image_only else open_clip.get_tokenizer(arch),
        device=device,
        precision=precision,
        model_id=model_id,
        revision=revision,
        random_weights=hub.is_random_weights(checkpoint),
    )


@register_encoder(
    "quiltnet",
    description="QuiltNet: open_clip ViT-B/32 trained on Quilt-1M histopathology video frames",
    backend="open_clip",
)
def _quiltnet(config: EncoderConfig, location: str, *, image_only: bool = False) -> ClipEncoder:
    return load_open_clip_dir(
        config, location, model_id=model_card("quiltnet").repo, image_only=image_only
    )
