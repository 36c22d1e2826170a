"""The :class:`Encoder` protocol and what every encoder shares.

An encoder turns uint8 RGB images and strings into L2-normalised vectors of one joint space.
Each backend (Hugging Face ``CLIPModel``, open_clip) only supplies two small functions —
pixels → features and strings → features — and a :class:`TorchPreprocess` built from its own
preprocessing config; :class:`ClipEncoder` does the rest (input checks, device transfer, mixed
precision, batching of strings, normalisation), so every backend behaves the same.

Preprocessing runs in torch on the encoder's device, on the whole batch at once: resize the
shortest side to the model's input size (antialiased, bicubic unless the model says otherwise)
only when the image is not already that size, center-crop, scale to [0, 1] and normalise with
the model's mean/std. No PIL, no per-image Python loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import torch
import torch.nn.functional as F

from pathgls.errors import EncoderError
from pathgls.hub.device import ResolvedPrecision, torch_dtype

logger = logging.getLogger(__name__)

ResizeMode = Literal["shortest", "squash", "longest"]


@runtime_checkable
class Encoder(Protocol):
    """An image–text encoder: both towers map into one L2-normalised space.

    Attributes:
        name: The spec the encoder was built from (``plip``, ``hf:<dir>``, ...).
        dim: Size of the joint embedding.
        image_size: Side of the square model input, in pixels.
        precision: ``fp32``, ``fp16`` or ``bf16`` (resolved, never ``auto``).
        device: Torch device string the model runs on.
        model_id: Hugging Face repo id, open_clip ``arch:weights``, or the local path.
        revision: Commit of the weights when known, else None.
        random_weights: True for the randomly initialised test models; never report their scores.
    """

    name: str
    dim: int
    image_size: int
    precision: ResolvedPrecision
    device: str
    model_id: str
    revision: str | None
    random_weights: bool

    def encode_images(self, images: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Embed a uint8 RGB batch ``(B, H, W, 3)``; returns ``(B, dim)`` float32 on the CPU."""
        ...

    def encode_text(self, texts: list[str]) -> torch.Tensor:
        """Embed strings; returns ``(M, dim)`` float32 on the CPU."""
        ...


_INTERPOLATION = {"bicubic": "bicubic", "bilinear": "bilinear", "nearest": "nearest"}


@dataclass(frozen=True)
class TorchPreprocess:
    """Batched torch preprocessing: resize, center-crop, scale to [0, 1], normalise.

    Attributes:
        size: Side of the square model input.
        mean: Per-channel mean of the model (RGB, on the [0, 1] scale).
        std: Per-channel standard deviation of the model.
        interpolation: ``bicubic`` (default), ``bilinear`` or ``nearest``; always antialiased.
        resize_mode: ``shortest`` (resize the short side, then center-crop), ``squash`` (resize
            both sides) or ``longest`` (resize the long side, then pad with ``fill``).
        fill: Pad value (0–255) for ``longest``.
        resize_to: Side the resize aims at before cropping to ``size`` (None: ``size``), for
            processors that resize to e.g. 256 and crop 224.
    """

    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    interpolation: str = "bicubic"
    resize_mode: ResizeMode = "shortest"
    fill: int = 0
    resize_to: int | None = None

    def __post_init__(self) -> None:
        if self.size < 1:
            raise EncoderError(f"model input size must be >= 1, got {self.size}")
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise EncoderError(
                f"mean/std must be three values (std > 0), got {self.mean}/{self.std}"
            )
        if self.interpolation not in _INTERPOLATION:
            raise EncoderError(f"unsupported interpolation {self.interpolation!r}")
        if self.resize_mode not in ("shortest", "squash", "longest"):
            raise EncoderError(f"unsupported resize mode {self.resize_mode!r}")

    def _resize(self, x: torch.Tensor) -> torch.Tensor:
        h, w = int(x.shape[-2]), int(x.shape[-1])
        s = self.resize_to or self.size
        if self.resize_mode == "squash":
            new = (s, s)
        else:
            scale_side = min(h, w) if self.resize_mode == "shortest" else max(h, w)
            other = max(1, int(s * (w if h == scale_side else h) / scale_side))
            new = (s, other) if h == scale_side else (other, s)
        if new == (h, w):
            return x
        mode = _INTERPOLATION[self.interpolation]
        kwargs: dict[str, Any] = (
            {} if mode == "nearest" else {"antialias": True, "align_corners": False}
        )
        x = F.interpolate(x, size=new, mode=mode, **kwargs)
        return x.clamp_(0.0, 255.0)  # bicubic overshoots; uint8 pipelines saturate

    def _crop_or_pad(self, x: torch.Tensor) -> torch.Tensor:
        h, w = int(x.shape[-2]), int(x.shape[-1])
        s = self.size
        if h < s or w < s:
            ph, pw = max(0, s - h), max(0, s - w)
            x = F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2), value=float(self.fill))
            h, w = int(x.shape[-2]), int(x.shape[-1])
        top, left = (h - s) // 2, (w - s) // 2
        return x[..., top : top + s, left : left + s]

    def is_model_sized(self, height: int, width: int) -> bool:
        """True when an image of this size needs no resize or crop, only normalisation."""
        return (height, width) == (self.size, self.size) and (
            self.resize_to or self.size
        ) == self.size

    def scale_shift(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scale, shift)`` of shape ``(1, 3, 1, 1)``: ``(x / 255 - mean) / std`` is
        ``x · scale + shift``, one multiply-add per element (computed in float64, then cast)."""
        std = torch.tensor(self.std, dtype=torch.float64).view(1, 3, 1, 1)
        scale = (1.0 / (255.0 * std)).float().to(device)
        shift = (-torch.tensor(self.mean, dtype=torch.float64).view(1, 3, 1, 1) / std).float()
        return scale, shift.to(device)

    def __call__(
        self, images: np.ndarray | torch.Tensor, *, device: torch.device, dtype: torch.dtype
    ) -> torch.Tensor:
        """Turn a uint8 ``(B, H, W, 3)`` batch into normalised ``(B, 3, size, size)`` pixels."""
        x8 = as_uint8_batch(images).to(device, non_blocking=True).permute(0, 3, 1, 2)
        scale, shift = self.scale_shift(device)
        h, w = int(x8.shape[-2]), int(x8.shape[-1])
        if self.is_model_sized(h, w):
            # model-sized input (HighRes windows): one channels-first copy, then in place
            x = torch.empty(x8.shape, dtype=torch.float32, device=device)
            x.copy_(x8)
            x.mul_(scale).add_(shift)
        else:
            x = self._crop_or_pad(self._resize(x8.float()))
            x = torch.addcmul(shift, x, scale)
        return x.to(dtype)


def as_uint8_batch(images: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Check a ``(B, H, W, 3)`` uint8 batch and return it as a CPU or device tensor.

    No copy is made unless the array is not contiguous or read-only (e.g. from PIL).
    """
    if isinstance(images, np.ndarray):
        if images.dtype != np.uint8:
            raise EncoderError(f"images must be uint8 RGB, got dtype {images.dtype}")
        arr = np.ascontiguousarray(images)
        tensor = torch.from_numpy(arr if arr.flags.writeable else arr.copy())
    elif isinstance(images, torch.Tensor):
        if images.dtype != torch.uint8:
            raise EncoderError(f"images must be uint8 RGB, got dtype {images.dtype}")
        tensor = images
    else:
        raise EncoderError(
            f"images must be a numpy array or torch tensor, got {type(images).__name__}"
        )
    if tensor.ndim != 4 or tensor.shape[-1] != 3:
        raise EncoderError(f"images must have shape (B, H, W, 3), got {tuple(tensor.shape)}")
    return tensor


@dataclass
class ClipEncoder:
    """An :class:`Encoder` made of a preprocessing step and two feature functions.

    Backends build it; users get it from :func:`pathgls.encoders.build_encoder`. Both feature
    functions run under ``torch.inference_mode()`` and return unnormalised features; this class
    normalises them and hands back float32 CPU tensors.

    Attributes:
        image_features: Normalised pixels ``(B, 3, S, S)`` on ``device`` → features ``(B, D)``.
        text_features: A list of strings → features ``(M, D)``; None for an encoder built with
            the image tower only (``build_encoder(..., image_only=True)``, as extraction does),
            whose :meth:`encode_text` raises.
        preprocess: The model's image preprocessing.
        module: The underlying ``torch.nn.Module`` (for inspection; do not move it).
        text_batch_size: Strings per forward pass of the text tower.
    """

    name: str
    dim: int
    image_size: int
    precision: ResolvedPrecision
    device: str
    model_id: str
    revision: str | None
    random_weights: bool
    image_features: Callable[[torch.Tensor], torch.Tensor] = field(repr=False)
    text_features: Callable[[list[str]], torch.Tensor] | None = field(repr=False)
    preprocess: TorchPreprocess = field(repr=False)
    module: torch.nn.Module | None = field(default=None, repr=False)
    text_batch_size: int = 256

    def __post_init__(self) -> None:
        if self.random_weights:
            logger.warning(
                "encoder %s has RANDOM weights (%s): for tests and benchmarks only, "
                "its scores must never be reported as results",
                self.name,
                self.model_id,
            )

    @property
    def image_only(self) -> bool:
        """True when only the image tower was built (no text tower, no tokenizer)."""
        return self.text_features is None

    @property
    def dtype(self) -> torch.dtype:
        """Torch dtype the model computes in."""
        return torch_dtype(self.precision)

    def encode_images(self, images: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Embed a uint8 RGB batch ``(B, H, W, 3)``; returns ``(B, dim)`` float32 CPU, unit norm."""
        batch = as_uint8_batch(images)
        if batch.shape[0] == 0:
            return torch.zeros((0, self.dim), dtype=torch.float32)
        device = torch.device(self.device)
        with torch.inference_mode():
            pixels = self.preprocess(batch, device=device, dtype=self.dtype)
            feats = self.image_features(pixels)
            return _normalise(feats)

    def encode_pixels(self, pixels: torch.Tensor) -> torch.Tensor:
        """Embed already preprocessed pixels ``(B, 3, S, S)`` (normalised, on ``device``, any
        float dtype); returns ``(B, dim)`` float32 CPU, unit norm. For callers that prepare
        model-sized input themselves (HighRes windows cut and normalised in place)."""
        if pixels.ndim != 4 or pixels.shape[1] != 3 or not pixels.is_floating_point():
            raise EncoderError(
                f"pixels must be float (B, 3, S, S), got {pixels.dtype} {tuple(pixels.shape)}"
            )
        if pixels.shape[0] == 0:
            return torch.zeros((0, self.dim), dtype=torch.float32)
        with torch.inference_mode():
            return _normalise(self.image_features(pixels.to(self.dtype)))

    def encode_text(self, texts: Sequence[str]) -> torch.Tensor:
        """Embed strings; returns ``(M, dim)`` float32 CPU, unit norm.

        Raises:
            EncoderError: not a list of strings, or the encoder was built image-only.
        """
        text_features = self.text_features
        if text_features is None:
            raise EncoderError(
                f"encoder {self.name} was built with its image tower only (as extraction builds "
                "it): build it with build_encoder(config) to encode text"
            )
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise EncoderError("encode_text expects a list of strings")
        items = list(texts)
        if not items:
            return torch.zeros((0, self.dim), dtype=torch.float32)
        out = []
        with torch.inference_mode():
            for start in range(0, len(items), self.text_batch_size):
                chunk = items[start : start + self.text_batch_size]
                out.append(_normalise(text_features(chunk)))
        return torch.cat(out)


def _normalise(features: torch.Tensor) -> torch.Tensor:
    return F.normalize(features.float(), dim=-1).cpu()
