"""Batched Macenko stain estimation and reconstruction in torch (the engine of :mod:`.stain`).

Macenko et al. (ISBI 2009), as torchstain's ``MacenkoNormalizer`` implements it:

1. optical density ``OD = −log((I + 1) / Io)`` per channel, ``Io = 240``;
2. tissue pixels: every channel's OD ≥ β (torchstain drops a pixel when *any* channel is
   below β; β = 0.15);
3. the plane of the two leading eigenvectors of the tissue OD covariance (unbiased);
4. the angle of every tissue pixel's projection in that plane; the stain vectors are the plane
   directions at the α-th and (100 − α)-th angle percentiles (α = 1, linear interpolation as
   ``numpy.percentile``); the one with the larger red OD is hematoxylin and comes first;
5. concentrations of *all* pixels by least squares, and their 99th percentiles
   ("max concentrations").

A reconstruction ``Io·exp(−M·OD)`` with a per-image 3×3 ``M`` (perturbation:
``HE·diag(f)·HE⁺``; normalisation: ``HE_ref·diag(maxC_ref / maxC)·HE⁺``) is clipped to
[0, 255] and rounded (torchstain truncates).

Every step runs on whole batches with per-image masks: tissue counts differ per image, so the
angle and concentration percentiles are masked order statistics
(:func:`~pathgls.attacks.quantiles.masked_quantiles`: exact, batched, no sort of whole rows, no
``torch.quantile`` and its 16M-element limit, no per-image loop). Images are processed
``max_batch`` at a time through buffers allocated once per call; this bounds memory and does
not change results: sums run in float64 and every other step is per image, so an image comes
out bit for bit the same alone, in any batch, at any ``max_batch`` (tested on the CPU). Images
with too little tissue or a degenerate estimate are flagged (callers return them unchanged);
nothing is ever NaN or infinite.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from pathgls.attacks.quantiles import masked_quantile, masked_quantiles
from pathgls.config import StainConfig

#: Macenko's / torchstain's reference stain matrix (columns: hematoxylin, eosin; rows: RGB OD).
HE_REFERENCE = ((0.5626, 0.2159), (0.7201, 0.8012), (0.4062, 0.5581))
#: Macenko's / torchstain's reference max concentrations (hematoxylin, eosin).
MAX_CONCENTRATION_REFERENCE = (1.9705, 1.0308)

_F64 = torch.float64
_PRECISIONS = {"float32": torch.float32, "float64": torch.float64}
# Reasons an estimate is not valid, by code (0: valid).
_TOO_LITTLE_TISSUE, _FLAT, _PARALLEL, _NO_CONCENTRATION = 1, 2, 3, 4
#: Maps a chunk's stain matrices ``(b, 3, 2)``, max concentrations ``(b, 2)`` and rows of the
#: batch to the ``(b, 3, 2)`` matrices ``A`` of its rebuild ``Io·exp(−A·C)`` (perturbation:
#: ``HE·diag(f)``; normalisation: ``HE_ref·diag(maxC_ref / maxC)``).
MixFn = Callable[[torch.Tensor, torch.Tensor, slice], torch.Tensor]


@dataclass(frozen=True, eq=False)
class StainFit:
    """Per-image Macenko estimates (float64 CPU tensors; zeros where ``valid`` is False)."""

    stain_matrices: torch.Tensor  # (B, 3, 2) unit OD vectors; hematoxylin column first
    max_concentrations: torch.Tensor  # (B, 2) max_percentile-th concentration percentiles
    tissue_fractions: torch.Tensor  # (B,) fraction of pixels with every channel's OD ≥ beta
    valid: torch.Tensor  # (B,) bool: a usable estimate
    flags: list[str | None]  # why an estimate is not valid (None when it is)


@dataclass(frozen=True, eq=False)
class MacenkoRun:
    """What :func:`run_macenko` returns."""

    fit: StainFit
    images: torch.Tensor | None  # (B, H, W, 3) uint8 on the input device; None without mix


def run_macenko(batch: torch.Tensor, cfg: StainConfig, *, mix: MixFn | None = None) -> MacenkoRun:
    """Fit, and with ``mix`` rebuild, a ``(B, H, W, 3)`` uint8 batch, ``max_batch`` at a time.

    Images without a valid estimate keep their pixels in the rebuilt batch.
    """
    n_images, height, width = (int(s) for s in batch.shape[:3])
    n_px = height * width
    step = min(cfg.max_batch or (2 if batch.device.type == "cpu" else 32), max(n_images, 1))
    he = torch.zeros((n_images, 3, 2), dtype=_F64)
    max_c = torch.zeros((n_images, 2), dtype=_F64)
    n_tissue = torch.zeros(n_images, dtype=torch.int64)
    codes = torch.full((n_images,), _TOO_LITTLE_TISSUE, dtype=torch.int64)
    out = None  # the rebuilt batch, contiguous whatever the input's strides
    if mix is not None:
        out = torch.empty(batch.shape, dtype=torch.uint8, device=batch.device)
    if n_px and n_images:
        full = _Workspace.allocate(step, n_px, _PRECISIONS[cfg.precision], batch.device)
        with torch.no_grad():
            for start in range(0, n_images, step):
                rows = slice(start, min(start + step, n_images))
                ws = full.first(rows.stop - rows.start)
                ws.planar.copy_(batch[rows].reshape(-1, n_px, 3).transpose(1, 2))
                part = _fit_chunk(ws, cfg)
                he[rows], max_c[rows] = part.he.cpu(), part.max_c.cpu()
                n_tissue[rows], codes[rows] = part.n_tissue.cpu(), part.codes.cpu()
                if mix is not None and out is not None:
                    mixing = mix(part.he, part.max_c, rows) @ part.pinv  # (b, 3, 3)
                    rebuilt = _rebuild(ws, mixing, cfg.io)
                    # Back to channels-last by stacking planes (a transposed copy is 3× slower).
                    target = out[rows].view(-1, n_px, 3)
                    torch.stack([rebuilt[:, 0], rebuilt[:, 1], rebuilt[:, 2]], dim=2, out=target)
                    valid = part.codes == 0
                    if not bool(valid.all()):  # images without a valid fit keep their pixels
                        idx = (~valid).nonzero()[:, 0]
                        out[rows][idx] = batch[rows][idx]
    valid = codes == 0
    flags = [_flag(int(c), int(n), n_px, cfg) for c, n in zip(codes, n_tissue, strict=True)]
    keep = valid[:, None]
    fit = StainFit(
        stain_matrices=torch.where(keep[..., None], he, 0.0),
        max_concentrations=torch.where(keep, max_c, 0.0),
        tissue_fractions=n_tissue.to(_F64) / max(n_px, 1),
        valid=valid,
        flags=flags,
    )
    return MacenkoRun(fit=fit, images=out)


@dataclass(frozen=True, eq=False)
class _Workspace:
    """Per-pixel buffers of one call, reused by every chunk.

    Fresh multi-megabyte tensors come from the OS page by page: allocating them per chunk cost
    about a fifth of the CPU time in page faults.
    """

    planar: torch.Tensor  # (b, 3, N) uint8 input pixels, channel planes
    neg_od: torch.Tensor  # (b, 3, N) compute dtype: log((I + 1) / Io) = −OD
    tissue: torch.Tensor  # (b, 4, N) float64: −OD of tissue pixels (0 elsewhere); tissue mask
    pair: torch.Tensor  # (b, 2, N) compute dtype: plane projections, then concentrations
    phi: torch.Tensor  # (b, N) compute dtype: angles in the plane
    rebuilt: torch.Tensor  # (b, 3, N) compute dtype: rebuilt intensities
    narrow: torch.Tensor  # (b, 3, N) int16
    pixels: torch.Tensor  # (b, 3, N) uint8

    @classmethod
    def allocate(cls, b: int, n_px: int, dt: torch.dtype, device: torch.device) -> _Workspace:
        def empty(*shape: int, dtype: torch.dtype) -> torch.Tensor:
            return torch.empty(shape, dtype=dtype, device=device)

        return cls(
            planar=empty(b, 3, n_px, dtype=torch.uint8),
            neg_od=empty(b, 3, n_px, dtype=dt),
            tissue=empty(b, 4, n_px, dtype=_F64),
            pair=empty(b, 2, n_px, dtype=dt),
            phi=empty(b, n_px, dtype=dt),
            rebuilt=empty(b, 3, n_px, dtype=dt),
            narrow=empty(b, 3, n_px, dtype=torch.int16),
            pixels=empty(b, 3, n_px, dtype=torch.uint8),
        )

    def first(self, b: int) -> _Workspace:
        """The buffers of the first ``b`` images (the last chunk may be smaller)."""
        return _Workspace(**{k: v[:b] for k, v in self.__dict__.items()})


@dataclass(frozen=True, eq=False)
class _ChunkFit:
    he: torch.Tensor  # (b, 3, 2) float64; the reference where not valid (keeps maths finite)
    pinv: torch.Tensor  # (b, 2, 3) float64 least-squares inverse of he
    max_c: torch.Tensor  # (b, 2) float64
    n_tissue: torch.Tensor  # (b,) int64
    codes: torch.Tensor  # (b,) int64 reason codes, 0 = valid


def _tissue_level(cfg: StainConfig) -> int:
    """Largest uint8 value whose OD is ≥ beta (OD falls with intensity); −1 when none is."""
    levels = torch.arange(256, dtype=_F64)
    od = -torch.log((levels + 1) / cfg.io)
    return int((od >= cfg.beta).sum()) - 1


def _fit_chunk(ws: _Workspace, cfg: StainConfig) -> _ChunkFit:
    """Macenko on the ``(b, 3, N)`` uint8 pixels in ``ws.planar`` (steps: module docstring).

    Per-pixel work is on ``−OD = log((I + 1) / Io)`` (the sign goes into the small matrices
    it meets, saving a pass over the pixels); ``ws.neg_od`` keeps it for the rebuild.
    """
    b, _, n_px = ws.planar.shape
    dev = ws.planar.device
    mask = ws.planar.amax(dim=1) <= _tissue_level(cfg)  # (b, N): every channel's OD ≥ beta
    n_tissue = mask.sum(dim=1, dtype=torch.int32).long()
    scale = torch.tensor(1 / cfg.io, dtype=ws.neg_od.dtype, device=dev)
    neg_od = torch.addcmul(scale, ws.planar, scale, out=ws.neg_od).log_()  # log((I + 1) / Io)

    # Covariance of the tissue ODs from float64 sums (a float32 GEMM over 10⁵–10⁶ pixels is
    # off by ~1e-5, enough to turn the stain plane by ~1e-4): one Gram matrix of [−OD; mask]
    # over tissue pixels gives Σxxᵀ, Σx and n, then cov = (Σxxᵀ − ΣxΣxᵀ/n)/(n−1).
    torch.mul(neg_od, mask.unsqueeze(1), out=ws.tissue[:, :3])
    ws.tissue[:, 3].copy_(mask)
    gram = ws.tissue @ ws.tissue.transpose(1, 2)  # (b, 4, 4)
    products, total, count = gram[:, :3, :3], gram[:, :3, 3], gram[:, 3, 3]
    mean_neg = total / count.clamp(min=1)[:, None]
    dof = (count - 1).clamp(min=1)[:, None, None]
    cov = (products - total[:, :, None] * mean_neg[:, None, :]) / dof
    cov = torch.where(torch.isfinite(cov), cov, 0.0)
    evals, evecs = torch.linalg.eigh(cov)
    plane = evecs[:, :, 1:3]  # (b, 3, 2): second and first principal directions
    # Eigenvector signs are arbitrary: point both along the mean OD, so that tissue angles sit
    # in (0, π) away from atan2's cut (the stain vectors themselves do not depend on the signs).
    sign = torch.where((mean_neg[:, :, None] * plane).sum(dim=1) > 0, -1.0, 1.0)
    plane = (plane * sign[:, None, :]).transpose(1, 2)  # (b, 2, 3)

    proj = torch.bmm((-plane).to(neg_od.dtype), neg_od, out=ws.pair)  # plane @ OD
    phi = torch.atan2(proj[:, 1], proj[:, 0], out=ws.phi)
    q = cfg.alpha / 100
    phis = masked_quantiles(phi, [q, 1 - q], mask)  # (b, 2): min and max angle
    vecs = plane.transpose(1, 2) @ torch.stack([torch.cos(phis), torch.sin(phis)], dim=1)
    h_first = vecs[:, 0, 0] > vecs[:, 0, 1]  # columns [min angle, max angle]
    he = torch.where(h_first[:, None, None], vecs, vecs.flip(2))

    need = max(cfg.min_tissue_pixels, math.ceil(cfg.min_tissue_fraction * n_px))
    flat = ~(evals[:, 2] > 0) | ~(evals[:, 1] >= cfg.min_eigen_ratio * evals[:, 2])
    separation = torch.linalg.cross(he[:, :, 0], he[:, :, 1], dim=1).norm(dim=1)
    parallel = ~(separation >= cfg.min_stain_separation) | ~torch.isfinite(he).all(dim=(1, 2))
    codes = torch.zeros(b, dtype=torch.int64, device=dev)
    codes = torch.where(parallel, _PARALLEL, codes)
    codes = torch.where(flat, _FLAT, codes)
    codes = torch.where(n_tissue < need, _TOO_LITTLE_TISSUE, codes)
    reference = torch.tensor(HE_REFERENCE, dtype=_F64, device=dev)
    he = torch.where((codes == 0)[:, None, None], he, reference)

    # Least-squares concentrations of every pixel, C = (HEᵀHE)⁻¹HEᵀ·OD.
    pinv = torch.linalg.solve(he.transpose(1, 2) @ he, he.transpose(1, 2))  # (b, 2, 3)
    conc = torch.bmm((-pinv).to(neg_od.dtype), neg_od, out=ws.pair).view(b * 2, n_px)
    max_c = masked_quantile(conc, cfg.max_percentile / 100).view(b, 2)
    no_conc = ~(max_c > 1e-6).all(dim=1) | ~torch.isfinite(max_c).all(dim=1)
    codes = torch.where((codes == 0) & no_conc, _NO_CONCENTRATION, codes)
    max_c = torch.where((codes == 0)[:, None], max_c, 1.0)
    return _ChunkFit(he=he, pinv=pinv, max_c=max_c, n_tissue=n_tissue, codes=codes)


def _rebuild(ws: _Workspace, mixing: torch.Tensor, io: float) -> torch.Tensor:
    """``Io·exp(−mixing @ OD)`` clipped to [0, 255] and rounded: ``(b, 3, N)`` uint8.

    ``Io·exp(−M·OD) = 2^(log₂ Io + (M / ln 2)·(−OD))``: one ``baddbmm`` and an ``exp2``
    (about twice as fast as ``exp`` on the CPU). The float → uint8 cast goes through int16,
    which is vectorised where a direct cast is not.
    """
    neg_od = ws.neg_od
    mixing = torch.nan_to_num(mixing, nan=0.0, posinf=0.0, neginf=0.0) / math.log(2)
    bias = torch.full((1, 1, 1), math.log2(io), dtype=neg_od.dtype, device=neg_od.device)
    out = torch.baddbmm(bias, mixing.to(neg_od.dtype), neg_od, out=ws.rebuilt)
    out.exp2_().clamp_(max=255).round_()
    return ws.pixels.copy_(ws.narrow.copy_(out))


def _flag(code: int, n_tissue: int, n_px: int, cfg: StainConfig) -> str | None:
    if code == 0:
        return None
    if code == _TOO_LITTLE_TISSUE:
        if n_px == 0:
            return "too little tissue: empty image"
        return (
            f"too little tissue: {n_tissue} of {n_px} pixels ({n_tissue / n_px:.2%}) have every "
            f"channel's OD >= {cfg.beta}; need {cfg.min_tissue_fraction:.0%} and "
            f"{cfg.min_tissue_pixels} pixels"
        )
    if code == _FLAT:
        return "degenerate stain estimate: the tissue's optical densities have one direction"
    if code == _PARALLEL:
        return "degenerate stain estimate: the two stain vectors are (nearly) parallel"
    return "degenerate stain estimate: a stain's max concentration is not positive"
