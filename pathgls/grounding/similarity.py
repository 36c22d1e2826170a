"""The Grounding score S_g: is every visual finding of the report seen somewhere in the slide?

Pure functions over tensors. With the report's visual entities embedded by an encoder's text
tower (``queries``, M × D) and a slide's HighRes window embeddings from the same encoder
(``windows``, N patches × W windows × D), grounding is

    s_m = max over (n, w) of cos(q_m, v_nw)          (best window anywhere in the slide)
    S_g = mean over m of calibrate(s_m)              (Eq. 1 of PathGLS with calibrate = identity)

The paper takes the maximum similarity per entity over all windows; the reference code instead
max-pools the window features before one similarity. pathgls follows the paper.

The similarity is computed in chunks of patches, so memory stays bounded for any N: each chunk
is converted to float32 on the target device (fp16 bags never exist in float32 as a whole),
re-normalised (true cosine, not fp16-rounded dot products), multiplied with the queries, and
reduced to the per-patch maximum and its window before the next chunk. ``windows`` may be a
numpy array, a torch tensor, or an ``h5py`` dataset read chunk by chunk from disk.

Calibrations (:data:`CALIBRATIONS`) turn a raw max cosine into a [0, 1] score:

``raw``
    the max cosine itself (the paper); its range depends on the encoder (CLIP-style models put
    matching image–text pairs around 0.2–0.35), so it is not comparable across encoders.
``sigmoid``
    the reference code's ``1 / (1 + exp(−k (x − t)))`` with k = 60, t = 0.20 — tuned for one
    encoder's cosine range.
``foil-rank`` (the default)
    each entity's max similarity ranked among the max similarities that a bank of unrelated
    pathology phrases reaches *on the same slide* (mid-rank for ties): 1.0 means the entity is
    seen better than every foil, 0.5 that it is as visible as a typical unrelated claim. The
    score needs no encoder-specific constants, and a slide that raises every similarity (stain,
    artefacts) raises the foils too, so it cancels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pathgls.errors import BagError, ConfigError

#: Names of the calibrations (see the module docstring).
CALIBRATIONS = ("raw", "sigmoid", "foil-rank")
DEFAULT_CALIBRATION = "foil-rank"


@dataclass(frozen=True)
class SimilarityResult:
    """Per query: the best window of the slide, and optionally the best patches.

    Attributes:
        max_similarity: ``(M,)`` float32 — the highest cosine over all windows.
        best_patch: ``(M,)`` int64 — the patch holding it (first one on ties).
        best_window: ``(M,)`` int64 — the window inside that patch (row-major HighRes order).
        top_patches: ``(M, k)`` int64 — the k patches with the highest per-patch maximum, best
            first (``k = min(top_k, N)``; ``(M, 0)`` when not asked for).
        top_values: ``(M, k)`` float32 — their per-patch maxima.
        patch_max: ``(M, N)`` float32 per-patch maxima when asked for (heat maps), else None.
        n_patches: N.
        n_windows: W.
    """

    max_similarity: np.ndarray
    best_patch: np.ndarray
    best_window: np.ndarray
    top_patches: np.ndarray
    top_values: np.ndarray
    patch_max: np.ndarray | None
    n_patches: int
    n_windows: int


def _as_tensor(x: Any, device: torch.device) -> torch.Tensor:
    t = torch.from_numpy(np.asarray(x)) if not isinstance(x, torch.Tensor) else x
    return t.to(device=device, dtype=torch.float32)


def _window_shape(windows: Any) -> tuple[int, int, int]:
    shape = tuple(int(s) for s in getattr(windows, "shape", ()))
    if len(shape) != 3:
        raise ValueError(f"windows must be (N patches, W windows, D), got shape {shape}")
    return shape


def normalize_rows(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Rows divided by their L2 norm (zero rows stay zero)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(eps)


def max_similarity(
    *,
    queries: np.ndarray | torch.Tensor,
    windows: Any,
    chunk_windows: int = 32768,
    top_k: int = 0,
    keep_patch_max: bool = False,
    device: str | torch.device = "cpu",
) -> SimilarityResult:
    """Best window of the slide for each query, computed chunk by chunk.

    Args:
        queries: ``(M, D)`` text embeddings (re-normalised here).
        windows: ``(N, W, D)`` window embeddings: numpy, torch or an h5py dataset (any dtype;
            each chunk is converted to float32 and re-normalised).
        chunk_windows: About this many windows per chunk (whole patches, at least one); bounds
            memory to ~ ``chunk_windows × (D + M) × 4`` bytes whatever N. The results do not
            depend on it.
        top_k: Also keep the ``top_k`` best patches per query (by per-patch maximum).
        keep_patch_max: Also return the full ``(M, N)`` per-patch maxima (heat maps).
        device: Where to compute (``cuda`` when present makes it fast; results come back on
            the CPU as numpy).

    Raises:
        ValueError: misshaped inputs, a dimension mismatch or a bad chunk size.
        BagError: a window feature is NaN or infinite, or a patch's window features are all
            zero (degenerate features).
    """
    dev = torch.device(device)
    n, w, d = _window_shape(windows)
    q = _as_tensor(queries, dev)
    if q.ndim != 2 or q.shape[1] != d:
        raise ValueError(f"queries must be (M, {d}) to match the windows, got {tuple(q.shape)}")
    if chunk_windows < 1 or top_k < 0:
        raise ValueError(f"chunk_windows must be >= 1 and top_k >= 0, got {chunk_windows}, {top_k}")
    m = int(q.shape[0])
    q_t = normalize_rows(q).T.contiguous()  # (D, M)
    k = min(top_k, n)
    best = torch.full((m,), -torch.inf, device=dev)
    best_patch = torch.zeros(m, dtype=torch.int64, device=dev)
    best_window = torch.zeros(m, dtype=torch.int64, device=dev)
    top_vals = torch.empty((m, 0), device=dev)
    top_idx = torch.empty((m, 0), dtype=torch.int64, device=dev)
    patch_max = torch.empty((m, n), device=dev) if keep_patch_max else None
    step = max(1, min(n, chunk_windows // max(w, 1)))
    # Buffers reused by every chunk: converting into memory already mapped is ~4× faster than
    # allocating a fresh float32 copy, and the matmul writes into a fixed output.
    buf = torch.empty(
        (0, d) if _is_f32(windows, dev) else (step * w, d), dtype=torch.float32, device=dev
    )
    sims_buf = torch.empty((step * w, m), dtype=torch.float32, device=dev)
    arange_m = torch.arange(m, device=dev)
    empty = 0  # patches whose window features are all zero
    for start in range(0, n, step):
        stop = min(start + step, n)
        rows = (stop - start) * w
        src = _read_chunk(windows, start, stop).reshape(rows, d)
        if not bool(torch.isfinite(src).all()):
            raise BagError(
                f"non-finite (NaN or inf) window features in patches {start}..{stop - 1}; "
                "the features are unusable (re-extract the bag)"
            )
        if src.dtype == torch.float32 and src.device == dev:
            chunk = src  # already what the matmul needs: no copy
        else:
            chunk = buf[:rows]
            chunk.copy_(src)
        sims = torch.matmul(chunk, q_t, out=sims_buf[:rows])
        # Cosine = dot / |v|: dividing the (rows, M) products is cheaper than normalising the
        # (rows, D) chunk, and windows stored in fp16 are not exactly unit length.
        norms = torch.linalg.vector_norm(chunk, dim=1)
        # a patch whose every window has no direction: no encoder makes that (its embeddings
        # are unit vectors), and cosine 0 everywhere would read as "half grounded"
        empty += int((norms < 1e-6).view(stop - start, w).all(dim=1).sum())
        sims.div_(norms.clamp_min_(1e-12)[:, None])
        pmax, parg = sims.view(stop - start, w, m).max(dim=1)  # per-patch max and its window
        cmax, cpatch = pmax.max(dim=0)  # (M,)
        better = cmax > best  # strict: on ties the earlier patch stays
        best = torch.where(better, cmax, best)
        best_patch = torch.where(better, cpatch + start, best_patch)
        best_window = torch.where(better, parg[cpatch, arange_m], best_window)
        if patch_max is not None:
            patch_max[:, start:stop] = pmax.T
        if k:
            idx = torch.arange(start, stop, device=dev).expand(m, -1)
            vals = torch.cat([top_vals, pmax.T], dim=1)
            cand = torch.cat([top_idx, idx], dim=1)
            top_vals, order = _stable_topk(vals, min(k, vals.shape[1]))
            top_idx = torch.gather(cand, 1, order)
    if empty:
        raise BagError(
            f"{empty} of {n} patches have all-zero window features: the features are "
            "degenerate, not embeddings (re-extract the bag)"
        )
    return SimilarityResult(
        max_similarity=best.cpu().numpy().astype(np.float32),
        best_patch=best_patch.cpu().numpy(),
        best_window=best_window.cpu().numpy(),
        top_patches=top_idx.cpu().numpy(),
        top_values=top_vals.cpu().numpy().astype(np.float32),
        patch_max=None if patch_max is None else patch_max.cpu().numpy(),
        n_patches=n,
        n_windows=w,
    )


def _is_f32(windows: Any, dev: torch.device) -> bool:
    """True when chunks of ``windows`` can be used as they are (float32 on ``dev``)."""
    if isinstance(windows, torch.Tensor):
        return windows.dtype == torch.float32 and windows.device == dev
    return (
        dev.type == "cpu"
        and getattr(windows, "dtype", None) == np.float32
        and isinstance(windows, np.ndarray)
    )


def _read_chunk(windows: Any, start: int, stop: int) -> torch.Tensor:
    """Patches ``start:stop`` as a tensor in their stored dtype (no copy when possible)."""
    part = windows[start:stop]
    return part if isinstance(part, torch.Tensor) else torch.from_numpy(np.asarray(part))


def _stable_topk(values: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k per row, ties broken by position (earlier first), so chunking cannot change it."""
    order = torch.sort(values, dim=1, descending=True, stable=True).indices[:, :k]
    return torch.gather(values, 1, order), order


# --- calibration -------------------------------------------------------------------------


def calibrate_raw(similarity: np.ndarray, **_: Any) -> np.ndarray:
    """The max cosine as is (the paper's S_g)."""
    return np.asarray(similarity, dtype=np.float64)


def calibrate_sigmoid(
    similarity: np.ndarray, *, k: float = 60.0, t: float = 0.20, **_: Any
) -> np.ndarray:
    """``1 / (1 + exp(−k (x − t)))`` (the reference code: k = 60, t = 0.20)."""
    x = np.asarray(similarity, dtype=np.float64)
    return 0.5 * (1.0 + np.tanh(0.5 * k * (x - t)))  # = the logistic, without overflow


def calibrate_foil_rank(
    similarity: np.ndarray, *, foil_similarity: np.ndarray | None = None, **_: Any
) -> np.ndarray:
    """Mid-rank of each similarity among the foils' similarities on the same slide, in [0, 1].

    ``(#foils below + ½ #foils equal) / #foils``.

    Raises:
        ValueError: no foil similarities were given.
    """
    foils = np.asarray(foil_similarity if foil_similarity is not None else [], dtype=np.float64)
    if foils.size == 0:
        raise ValueError("foil-rank calibration needs the foil phrases' similarities on the slide")
    x = np.asarray(similarity, dtype=np.float64)[..., None]
    below = (foils < x).sum(axis=-1)
    equal = (foils == x).sum(axis=-1)
    return (below + 0.5 * equal) / foils.size


Calibration = Callable[..., np.ndarray]

_CALIBRATIONS: dict[str, Calibration] = {
    "raw": calibrate_raw,
    "sigmoid": calibrate_sigmoid,
    "foil-rank": calibrate_foil_rank,
}


def get_calibration(name: str) -> Calibration:
    """The calibration function registered under ``name``.

    Raises:
        ConfigError: unknown name.
    """
    try:
        return _CALIBRATIONS[name]
    except KeyError as e:
        raise ConfigError(
            f"unknown grounding calibration {name!r}; known: {', '.join(CALIBRATIONS)}"
        ) from e


def grounding_value(calibrated: np.ndarray) -> float:
    """S_g: the mean of the calibrated per-entity maxima.

    Raises:
        ValueError: no entities, or a non-finite value.
    """
    c = np.asarray(calibrated, dtype=np.float64)
    if c.size == 0:
        raise ValueError("S_g needs at least one entity")
    if not np.all(np.isfinite(c)):
        raise ValueError("calibrated similarities must be finite")
    return float(c.mean())


def window_boxes(
    *,
    coords: np.ndarray,
    patch_index: np.ndarray,
    window_index: np.ndarray,
    window_offsets: np.ndarray,
    window_size: int,
    scale: float,
) -> np.ndarray:
    """Level-0 boxes ``(x, y, w, h)`` of windows given by (patch, window) indices.

    Args:
        coords: ``(N, 2)`` level-0 top-left of every patch.
        patch_index: ``(K,)`` patches.
        window_index: ``(K,)`` windows inside them (indices into ``window_offsets``).
        window_offsets: ``(W, 2)`` window top-left ``(x, y)`` in patch pixels.
        window_size: Window side in patch pixels.
        scale: Level-0 pixels per patch pixel (``patch_size_level0 / patch_size``).
    """
    c = np.asarray(coords, dtype=np.float64)[np.asarray(patch_index, dtype=np.int64)]
    off = np.asarray(window_offsets, dtype=np.float64)[np.asarray(window_index, dtype=np.int64)]
    xy = np.rint(c + off * scale).astype(np.int64)
    side = round(window_size * scale)
    return np.concatenate([xy, np.full_like(xy, side)], axis=1)
