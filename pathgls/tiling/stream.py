"""Batched patch streaming with reader threads: bounded memory, deterministic order.

OpenSlide's C decoder and Pillow's resize release the GIL, so threads read patches in
parallel while the consumer (the encoder) computes. At most ``workers × prefetch`` batches are
in flight, whatever the slide size.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from PIL import Image

from pathgls.tiling.jpeg_tiles import SCALES
from pathgls.tiling.readers import SlideReader
from pathgls.tiling.resolution import ReadPlan


@dataclass(frozen=True)
class PatchBatch:
    """A batch of patches: ``images[i]`` was read at level-0 ``coords[i]``."""

    start: int  # index of the first patch of the batch in the whole coordinate list
    coords: np.ndarray  # (B, 2) int64 level-0 top-left
    images: np.ndarray  # (B, patch_size, patch_size, 3) uint8 RGB


def read_patch(reader: SlideReader, xy_level0: tuple[int, int], plan: ReadPlan) -> np.ndarray:
    """One patch at the target resolution: read at ``plan.level`` and resized when needed.

    A whole-factor reduction with ``plan.resample == "area"`` averages factor × factor blocks;
    on JPEG-tiled TIFF levels the tiles are decoded at that scale directly
    (``plan.scaled_decode``), which skips decoding and resizing the discarded pixels.
    """
    size = (plan.read_size, plan.read_size)
    k = plan.reduction
    area = k is not None and plan.resample == "area"
    if area and plan.scaled_decode and k in SCALES:
        scaled = getattr(reader, "read_region_scaled", None)
        patch = scaled(xy_level0, plan.level, size, k) if scaled else None
        if patch is not None:
            return patch
    region = reader.read_region(xy_level0, plan.level, size)
    if not plan.needs_resize:
        return region
    if area:
        return area_reduce(region, k)
    im = Image.fromarray(region).resize(
        (plan.patch_size, plan.patch_size), Image.Resampling.LANCZOS, reducing_gap=2.0
    )
    return np.asarray(im)


def area_reduce(rgb: np.ndarray, factor: int) -> np.ndarray:
    """Average ``factor`` × ``factor`` blocks of a uint8 ``(H, W, C)`` image (rounded half up).

    H and W must be multiples of ``factor``.
    """
    h, w, c = rgb.shape
    blocks = rgb.reshape(h // factor, factor, w // factor, factor, c)
    total = blocks.sum(axis=(1, 3), dtype=np.uint32)
    n = factor * factor
    return ((total + n // 2) // n).astype(np.uint8)


def _read_batch(reader: SlideReader, coords: np.ndarray, plan: ReadPlan, start: int) -> PatchBatch:
    out = np.empty((len(coords), plan.patch_size, plan.patch_size, 3), dtype=np.uint8)
    for i, (x, y) in enumerate(coords):
        out[i] = read_patch(reader, (int(x), int(y)), plan)
    return PatchBatch(start=start, coords=coords, images=out)


def stream_patches(
    reader: SlideReader,
    coords: np.ndarray,
    plan: ReadPlan,
    *,
    batch_size: int = 32,
    workers: int = 2,
    prefetch: int = 2,
    start: int = 0,
) -> Iterator[PatchBatch]:
    """Yield :class:`PatchBatch` es in coordinate order, read by ``workers`` threads.

    Args:
        reader: open slide (its ``read_region`` must be thread-safe; OpenSlide's is).
        coords: (N, 2) level-0 top-left coordinates.
        plan: how to read a patch (level, size, resize).
        batch_size: patches per batch.
        workers: reader threads; 0 reads in the calling thread.
        prefetch: batches read ahead per worker.
        start: index of the first patch to read (resuming); batches keep absolute indices.

    Raises:
        SlideReadError: a patch could not be read (raised in the consumer, in order).
    """
    coords = np.asarray(coords, dtype=np.int64).reshape(-1, 2)
    starts = range(start, len(coords), batch_size)
    if workers <= 0:
        for s in starts:
            yield _read_batch(reader, coords[s : s + batch_size], plan, s)
        return
    window = max(1, workers * prefetch)
    pending: collections.deque[Future[PatchBatch]] = collections.deque()
    it = iter(starts)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pathgls-read") as pool:
        try:
            for s in it:
                pending.append(
                    pool.submit(_read_batch, reader, coords[s : s + batch_size], plan, s)
                )
                if len(pending) >= window:
                    break
            while pending:
                batch = pending.popleft().result()
                nxt = next(it, None)
                if nxt is not None:
                    pending.append(
                        pool.submit(_read_batch, reader, coords[nxt : nxt + batch_size], plan, nxt)
                    )
                yield batch
        finally:
            for f in pending:
                f.cancel()
