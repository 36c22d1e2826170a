"""Stain attacks: seeded Macenko perturbation of H and E, and normalisation to a target.

Perturbation multiplies each image's hematoxylin and eosin concentrations by two factors drawn
from U(0.7, 1.3) and rebuilds the image with its own stain matrix; normalisation maps the
image's stains and max concentrations onto a target's (torchstain's ``normalize``). The
Macenko estimate itself is :mod:`pathgls.attacks.macenko` (batched torch, torchstain parity).

The factors of an image come from a CPU ``torch.Generator`` seeded with a hash of
``(seed, image id)``: the same pair gives the same image whatever batch it comes in, another
seed gives another image. Images with too little tissue or a degenerate estimate are returned
unchanged and flagged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from pathgls.attacks.macenko import (
    HE_REFERENCE,
    MAX_CONCENTRATION_REFERENCE,
    MacenkoRun,
    StainConfig,
    StainFit,
    run_macenko,
)
from pathgls.errors import ConfigError, StainInputError

__all__ = [
    "HE_REFERENCE",
    "MAX_CONCENTRATION_REFERENCE",
    "StainConfig",
    "StainFit",
    "StainInputError",
    "StainResult",
    "StainTarget",
    "fit_stain",
    "fit_target",
    "normalize_stain",
    "perturb_stain",
    "stain_factors",
]

_F64 = torch.float64
_Restore = Callable[[torch.Tensor], "np.ndarray | torch.Tensor"]


@dataclass(frozen=True)
class StainTarget:
    """Stain matrix and max concentrations that :func:`normalize_stain` maps images onto."""

    # (3, 2) OD vectors, rows R, G, B; columns hematoxylin, eosin (Macenko's reference).
    stain_matrix: tuple[tuple[float, float], ...] = HE_REFERENCE
    # 99th-percentile concentrations of hematoxylin and eosin (Macenko's reference).
    max_concentrations: tuple[float, ...] = MAX_CONCENTRATION_REFERENCE

    def __post_init__(self) -> None:
        he = np.asarray(self.stain_matrix, dtype=np.float64)
        max_c = np.asarray(self.max_concentrations, dtype=np.float64)
        if he.shape != (3, 2) or not np.all(np.isfinite(he)):
            raise ConfigError(f"stain_matrix must be a finite 3×2 matrix, got {he.tolist()}")
        if np.linalg.matrix_rank(he) < 2:
            raise ConfigError(f"stain_matrix columns must not be parallel, got {he.tolist()}")
        if max_c.shape != (2,) or not np.all(np.isfinite(max_c)) or np.any(max_c <= 0):
            raise ConfigError(
                f"max_concentrations must be two positive numbers, got {max_c.tolist()}"
            )
        object.__setattr__(self, "stain_matrix", tuple(tuple(map(float, r)) for r in he))
        object.__setattr__(self, "max_concentrations", tuple(map(float, max_c)))


@dataclass(frozen=True, eq=False)
class StainResult:
    """Transformed images and the estimates they came from (statistics: float64 CPU tensors).

    ``images`` has the input's shape, dtype (uint8), type (numpy or torch) and device. Images
    without a valid estimate are returned unchanged, with ``transformed`` False and a flag.
    """

    images: np.ndarray | torch.Tensor  # like the input
    stain_matrices: torch.Tensor  # (B, 3, 2) unit OD vectors, hematoxylin first (0: no estimate)
    max_concentrations: torch.Tensor  # (B, 2) (0: no estimate)
    tissue_fractions: torch.Tensor  # (B,)
    factors: torch.Tensor  # (B, 2) H and E concentration scales applied (1: unchanged)
    transformed: torch.Tensor  # (B,) bool
    flags: list[str | None]  # why an image was returned unchanged (None when transformed)


def stain_factors(
    *, image_ids: Sequence[str | int], seed: int, config: StainConfig | None = None
) -> torch.Tensor:
    """The H and E concentration factors of each image, drawn from U(factor_low, factor_high).

    Each image's two factors come from a CPU ``torch.Generator`` seeded with a BLAKE2b hash of
    ``(seed, image id)``: the same pair always gives the same factors, whatever the batch.
    An int id and its decimal string are the same id.

    Returns:
        ``(B, 2)`` float64 CPU tensor.

    Raises:
        StainInputError: the seed is not an int or an id is not a str or int.
    """
    cfg = config or StainConfig()
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise StainInputError(f"seed must be an int, got {type(seed).__name__}")
    out = torch.empty((len(image_ids), 2), dtype=_F64)
    for i, image_id in enumerate(image_ids):
        if isinstance(image_id, bool) or not isinstance(image_id, str | int | np.integer):
            raise StainInputError(
                f"image ids must be str or int, got {type(image_id).__name__} at position {i}"
            )
        key = f"{int(seed)}\x1f{image_id}".encode("utf-8", "surrogatepass")
        digest = hashlib.blake2b(key, digest_size=8, person=b"pathgls-stain").digest()
        generator = torch.Generator(device="cpu")
        generator.manual_seed(int.from_bytes(digest, "big") >> 1)
        out[i] = torch.rand(2, generator=generator, dtype=_F64)
    return cfg.factor_low + (cfg.factor_high - cfg.factor_low) * out


def fit_stain(*, images: np.ndarray | torch.Tensor, config: StainConfig | None = None) -> StainFit:
    """Macenko stain matrices and max concentrations of a batch (``(B, H, W, 3)`` or one image).

    Raises:
        StainInputError: not a uint8 ``(H, W, 3)`` / ``(B, H, W, 3)`` array or tensor.
    """
    cfg = config or StainConfig()
    return run_macenko(_as_batch(images)[0], cfg).fit


def perturb_stain(
    *,
    images: np.ndarray | torch.Tensor,
    image_ids: Sequence[str | int] | str | int,
    seed: int,
    config: StainConfig | None = None,
) -> StainResult:
    """Scale each image's H and E concentrations by its seeded factors and rebuild it.

    Args:
        images: uint8 RGB ``(B, H, W, 3)`` or one ``(H, W, 3)`` image, numpy or torch (any
            device; the work runs there).
        image_ids: One id per image (a bare id for one image); with ``seed`` they decide the
            factors (:func:`stain_factors`).
        seed: Run seed.
        config: Macenko parameters and factor range.

    Returns:
        Images of the input's shape, type and device, the estimates and the factors applied.

    Raises:
        StainInputError: bad images, ids (count or type) or seed.
    """
    cfg = config or StainConfig()
    batch, restore = _as_batch(images)
    ids = [image_ids] if isinstance(image_ids, str | int | np.integer) else list(image_ids)
    if len(ids) != batch.shape[0]:
        raise StainInputError(f"got {len(ids)} image ids for {batch.shape[0]} images")
    factors = stain_factors(image_ids=ids, seed=seed, config=cfg)

    def mix(he: torch.Tensor, _max_c: torch.Tensor, rows: slice) -> torch.Tensor:
        return he * factors[rows, None, :].to(he.device)

    run = run_macenko(batch, cfg, mix=mix)
    return _result(run, restore, torch.where(run.fit.valid[:, None], factors, 1.0))


def normalize_stain(
    *,
    images: np.ndarray | torch.Tensor,
    target: StainTarget | None = None,
    config: StainConfig | None = None,
) -> StainResult:
    """Map each image's stains and max concentrations onto ``target``'s (torchstain's normalise).

    Args:
        images: uint8 RGB ``(B, H, W, 3)`` or one ``(H, W, 3)`` image, numpy or torch.
        target: Stain matrix and max concentrations to map onto (default: Macenko's reference;
            :func:`fit_target` fits one from an image).
        config: Macenko parameters.

    Returns:
        Normalised images; ``factors`` are the concentration scales target / image max
        concentration (1 for images returned unchanged).

    Raises:
        StainInputError: bad images.
    """
    cfg = config or StainConfig()
    tgt = target or StainTarget()
    batch, restore = _as_batch(images)
    ref_he = torch.tensor(tgt.stain_matrix, dtype=_F64, device=batch.device)
    ref_max = torch.tensor(tgt.max_concentrations, dtype=_F64, device=batch.device)

    def mix(he: torch.Tensor, max_c: torch.Tensor, rows: slice) -> torch.Tensor:
        return ref_he * (ref_max / max_c)[:, None, :]

    run = run_macenko(batch, cfg, mix=mix)
    ref = ref_max.cpu()
    safe = torch.where(run.fit.valid[:, None], run.fit.max_concentrations, ref)
    return _result(run, restore, ref / safe)


def fit_target(
    *, image: np.ndarray | torch.Tensor, config: StainConfig | None = None
) -> StainTarget:
    """A :class:`StainTarget` fitted from one image (``(H, W, 3)`` or ``(1, H, W, 3)``).

    Raises:
        StainInputError: not exactly one uint8 RGB image, or no valid estimate (the flag says
            why).
    """
    batch, _ = _as_batch(image)
    if batch.shape[0] != 1:
        raise StainInputError(f"fit_target needs one image, got a batch of {batch.shape[0]}")
    fit = fit_stain(images=batch, config=config)
    if not bool(fit.valid[0]):
        raise StainInputError(f"no stain estimate for the target image: {fit.flags[0]}")
    return StainTarget(
        stain_matrix=tuple(map(tuple, fit.stain_matrices[0].tolist())),
        max_concentrations=tuple(fit.max_concentrations[0].tolist()),
    )


# ---------------------------------------------------------------------------------------------
# Internals


def _as_batch(images: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, _Restore]:
    """A ``(B, H, W, 3)`` uint8 tensor (no copy when possible), and how to give results back."""
    if isinstance(images, np.ndarray):
        if images.dtype != np.uint8:
            raise StainInputError(f"images must be uint8 RGB, got dtype {images.dtype}")
        arr = np.ascontiguousarray(images)
        tensor = torch.from_numpy(arr if arr.flags.writeable else arr.copy())
        as_numpy = True
    elif isinstance(images, torch.Tensor):
        if images.dtype != torch.uint8:
            raise StainInputError(f"images must be uint8 RGB, got dtype {images.dtype}")
        tensor, as_numpy = images, False
    else:
        raise StainInputError(
            f"images must be a numpy array or torch tensor, got {type(images).__name__}"
        )
    single = tensor.ndim == 3
    if tensor.ndim not in (3, 4) or tensor.shape[-1] != 3:
        hint = " (drop the alpha channel)" if tensor.shape[-1:] == (4,) else ""
        raise StainInputError(
            f"images must have shape (H, W, 3) or (B, H, W, 3), got {tuple(tensor.shape)}{hint}"
        )
    batch = tensor.unsqueeze(0) if single else tensor

    def restore(out: torch.Tensor) -> np.ndarray | torch.Tensor:
        out = out[0] if single else out
        return out.cpu().numpy() if as_numpy else out

    return batch, restore


def _result(run: MacenkoRun, restore: _Restore, factors: torch.Tensor) -> StainResult:
    assert run.images is not None  # both callers run Macenko with a mix
    return StainResult(
        images=restore(run.images),
        stain_matrices=run.fit.stain_matrices,
        max_concentrations=run.fit.max_concentrations,
        tissue_fractions=run.fit.tissue_fractions,
        factors=factors,
        transformed=run.fit.valid.clone(),
        flags=run.fit.flags,
    )
