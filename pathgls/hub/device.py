"""Where a model runs and in which precision: ``auto`` resolved once, the same for every model."""

from __future__ import annotations

import logging
from typing import Literal

import torch

from pathgls.errors import ConfigError

logger = logging.getLogger(__name__)

ResolvedPrecision = Literal["fp32", "fp16", "bf16"]

_DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}


def resolve_device(device: str) -> torch.device:
    """``auto`` → ``cuda`` when available, else ``cpu``; anything else is checked and kept."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as e:
        raise ConfigError(f"invalid encoder device {device!r}: {e}") from e
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"encoder device {device!r} asked for, but CUDA is not available")
    return resolved


def resolve_precision(
    precision: str, device: torch.device, *, preferred: ResolvedPrecision | None = None
) -> ResolvedPrecision:
    """Resolve ``auto``: fp32 on CPU; on CUDA fp16, or ``preferred`` when the model asks for bf16.

    An explicit precision is kept (fp16 on the CPU works but is slow, so it is logged).
    """
    if precision == "auto":
        if device.type != "cuda":
            return "fp32"
        return preferred if preferred in ("fp16", "bf16") else "fp16"
    if precision not in _DTYPES:
        raise ConfigError(f"precision must be auto, fp32, fp16 or bf16, got {precision!r}")
    if precision == "fp16" and device.type == "cpu":
        logger.warning("fp16 on the CPU is slow and may lose accuracy; fp32 is the CPU default")
    return precision  # type: ignore[return-value]


def torch_dtype(precision: str) -> torch.dtype:
    """The torch dtype of a resolved precision."""
    return _DTYPES[precision]
