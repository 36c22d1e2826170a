"""HighRes windows: encode each patch as a grid of model-sized windows.

A 512 px patch seen by a 224 px encoder loses detail when shrunk; HighRes instead cuts it into
windows of ``window_size`` px placed every ``window_stride`` px, with the last window of each
axis shifted inward so it ends exactly at the patch edge (512/224/224 → offsets 0, 224, 288).
Windows are numbered row-major (y outer, x inner). Grounding uses every window's embedding;
the patch feature is their mean.

With a :class:`~pathgls.encoders.base.ClipEncoder` whose input size is the window size (the
default), windows never exist as uint8 copies: the patch batch goes to the encoder's device
once and is made channels-first there (as bytes); each window position is then one copy of
every patch's window into a channels-first float buffer, normalised in place (one
multiply-add) — no per-window Python, no resize. A :class:`WindowBuffers` passed along keeps
those buffers from one batch to the next (allocating ~5 MB per patch afresh costs more than
the copy itself, in page faults).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from pathgls.encoders.base import ClipEncoder, Encoder, as_uint8_batch
from pathgls.errors import ConfigError


@dataclass
class WindowBuffers:
    """Staging tensors kept from one batch to the next; make one per extraction run.

    Not thread-safe: one consumer uses it at a time.
    """

    tensors: dict[str, torch.Tensor] = field(default_factory=dict)

    def get(
        self, name: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        """A tensor of at least ``shape[0]`` rows and exactly ``shape[1:]``; reused when it
        fits, else (re)allocated. Its contents are undefined."""
        t = self.tensors.get(name)
        if (
            t is None
            or t.dtype != dtype
            or t.device != device
            or tuple(t.shape[1:]) != tuple(shape[1:])
            or t.shape[0] < shape[0]
        ):
            t = torch.empty(shape, dtype=dtype, device=device)
            self.tensors[name] = t
        return t[: shape[0]]


def window_offsets(patch_size: int, window: int, stride: int) -> list[int]:
    """Window start offsets along one axis.

    ``0, stride, 2·stride, ...`` while the window fits, plus one last window shifted inward to
    end exactly at ``patch_size`` when the grid does not reach the edge. A window at least as
    large as the patch gives ``[0]`` (the whole patch is one window).

    Raises:
        ConfigError: a size or the stride is not positive.
    """
    if patch_size < 1 or window < 1 or stride < 1:
        raise ConfigError(
            f"patch_size, window and stride must be >= 1, got {patch_size}, {window}, {stride}"
        )
    if window >= patch_size:
        return [0]
    offsets = list(range(0, patch_size - window + 1, stride))
    if offsets[-1] + window < patch_size:
        offsets.append(patch_size - window)
    return offsets


def _sides(patch_size: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(patch_size, int):
        return patch_size, patch_size
    height, width = patch_size
    return int(height), int(width)


def window_coords(patch_size: int | tuple[int, int], window: int, stride: int) -> np.ndarray:
    """Top-left ``(x, y)`` of every window inside a patch, row-major (y outer, x inner).

    Args:
        patch_size: Patch side, or ``(height, width)`` for a rectangular image (e.g. an ROI).
        window: Window side in pixels (clipped to the patch).
        stride: Step between windows.

    Returns:
        ``(W, 2)`` int64 offsets in patch pixels; add them (scaled to level 0) to a patch's
        level-0 coordinates to place a window on the slide.
    """
    height, width = _sides(patch_size)
    ys = window_offsets(height, window, stride)
    xs = window_offsets(width, window, stride)
    return np.array([(x, y) for y in ys for x in xs], dtype=np.int64).reshape(-1, 2)


def cut_windows(batch: torch.Tensor, coords: np.ndarray, window: tuple[int, int]) -> torch.Tensor:
    """Every window of every patch as one ``(B·W, wh, ww, 3)`` tensor, patch-major, windows in
    the order of ``coords`` (row-major), on the batch's device: one strided copy per window
    position for the whole batch, no per-patch Python.

    ``coords`` must be a full grid (every x offset with every y offset), as
    :func:`window_coords` gives.
    """
    wh, ww = window
    xs = [int(v) for v in np.unique(coords[:, 0])]
    ys = [int(v) for v in np.unique(coords[:, 1])]
    if len(xs) * len(ys) != len(coords):
        raise ConfigError("window coordinates must form a full grid")
    b = int(batch.shape[0])
    out = torch.empty((b, len(ys), len(xs), wh, ww, 3), dtype=batch.dtype, device=batch.device)
    for iy, y in enumerate(ys):  # one strided copy per window position, over the whole batch
        for ix, x in enumerate(xs):
            out[:, iy, ix] = batch[:, y : y + wh, x : x + ww]
    return out.reshape(b * len(ys) * len(xs), wh, ww, 3)


def encode_highres(
    encoder: Encoder,
    patches: np.ndarray | torch.Tensor,
    *,
    window_size: int,
    window_stride: int,
    max_batch: int = 256,
    buffers: WindowBuffers | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Encode every HighRes window of a batch of patches.

    All windows of all patches go through the encoder as one stream of batched calls of at most
    ``max_batch`` windows (this bounds memory; it does not change the result).

    Args:
        encoder: Any :class:`~pathgls.encoders.Encoder`.
        patches: uint8 RGB ``(B, H, W, 3)`` (numpy, or a torch tensor on any device).
        window_size: Window side in pixels (windows larger than the patch cover the whole patch).
        window_stride: Step between windows.
        max_batch: Most windows per encoder call.
        buffers: staging buffers to reuse across calls (see :class:`WindowBuffers`); None
            allocates them per call. Results are the same either way.

    Returns:
        ``(window_features, features)``: ``(B, W, D)`` float32 normalised window embeddings in
        the order of :func:`window_coords`, and ``(B, D)`` float32 their mean per patch. The mean
        of unit vectors is deliberately **not** re-normalised: its norm says how much the
        windows agree, and bags store it as is.

    Raises:
        ConfigError: bad window parameters or ``max_batch``.
    """
    if max_batch < 1:
        raise ConfigError(f"max_batch must be >= 1, got {max_batch}")
    batch = as_uint8_batch(patches)
    n, height, width = int(batch.shape[0]), int(batch.shape[1]), int(batch.shape[2])
    coords = window_coords((height, width), window_size, window_stride)
    wh, ww = min(window_size, height), min(window_size, width)
    n_windows = len(coords)
    if n == 0:
        empty = np.zeros((0, n_windows, encoder.dim), dtype=np.float32)
        return empty, np.zeros((0, encoder.dim), dtype=np.float32)
    out = np.empty((n * n_windows, encoder.dim), dtype=np.float32)
    fused = isinstance(encoder, ClipEncoder) and encoder.preprocess.is_model_sized(wh, ww)
    if fused and max_batch >= n_windows and isinstance(encoder, ClipEncoder):
        _encode_model_sized(encoder, batch, coords, wh, max_batch, buffers or WindowBuffers(), out)
    else:
        # one window covering the whole patch (e.g. one resized view per patch) is the batch
        # itself — still in the reader's (pinned, on CUDA) memory; else one gather
        whole = n_windows == 1 and (wh, ww) == (height, width)
        windows = batch if whole else cut_windows(batch, coords, (wh, ww))
        for start in range(0, n * n_windows, max_batch):
            stop = min(start + max_batch, n * n_windows)
            out[start:stop] = encoder.encode_images(windows[start:stop]).numpy()
    window_features = out.reshape(n, n_windows, encoder.dim)
    return window_features, window_features.mean(axis=1, dtype=np.float32)


def _encode_model_sized(
    encoder: ClipEncoder,
    batch: torch.Tensor,
    coords: np.ndarray,
    size: int,
    max_batch: int,
    buffers: WindowBuffers,
    out: np.ndarray,
) -> None:
    """Windows of the model's input size: cut, made channels-first and normalised in one
    strided copy per window position into a reused float buffer, on the encoder's device."""
    xs = [int(v) for v in np.unique(coords[:, 0])]
    ys = [int(v) for v in np.unique(coords[:, 1])]
    if len(xs) * len(ys) != len(coords):
        raise ConfigError("window coordinates must form a full grid")
    device = torch.device(encoder.device)
    n, height, width = int(batch.shape[0]), int(batch.shape[1]), int(batch.shape[2])
    # uint8 patches cross to the device once (from pinned memory, asynchronously, on CUDA) and
    # are made channels-first there, still as bytes: the window copies below then read rows
    planar = buffers.get("patches", (n, 3, height, width), torch.uint8, device)
    planar.copy_(batch.to(device, non_blocking=True).permute(0, 3, 1, 2))
    scale, shift = encoder.preprocess.scale_shift(device)
    per = len(coords)
    step = max(1, max_batch // per)  # patches per encoder call
    for p0 in range(0, n, step):
        p1 = min(n, p0 + step)
        shape = (p1 - p0, len(ys), len(xs), 3, size, size)
        stage = buffers.get("windows", shape, torch.float32, device)
        for iy, y in enumerate(ys):
            for ix, x in enumerate(xs):
                window = stage[:, iy, ix]
                window.copy_(planar[p0:p1, :, y : y + size, x : x + size])
                window.mul_(scale).add_(shift)  # (x / 255 - mean) / std while it is in cache
        pixels = stage.view((p1 - p0) * per, 3, size, size)
        out[p0 * per : p1 * per] = encoder.encode_pixels(pixels).numpy()
