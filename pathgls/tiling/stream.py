"""Batched patch streaming with reader threads: bounded memory, deterministic order.

OpenSlide's C decoder, libjpeg-turbo (simplejpeg) and Pillow's resize release the GIL, so
threads read patches in parallel while the consumer (the encoder) computes. At most
``workers × prefetch`` batches are in flight, whatever the slide size.

With ``reuse_buffers`` the batches are written into a fixed ring of ``workers × prefetch + 1``
arrays (pinned host memory with ``pin_memory``, for asynchronous copies to a CUDA device): a
batch's array is handed to the next read as soon as the consumer asks for the next batch, so
the consumer must be done with a batch — or have copied it — before it advances.
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


def read_patch(
    reader: SlideReader,
    xy_level0: tuple[int, int],
    plan: ReadPlan,
    *,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """One patch at the target resolution: read at ``plan.level`` and resized when needed.

    A whole-factor reduction with ``plan.resample == "area"`` averages factor × factor blocks.
    On JPEG-tiled TIFF levels (``plan.scaled_decode``) pathgls decodes the tiles itself —
    at that scale directly, which skips decoding and resizing the discarded pixels, or at full
    scale for a patch read without resize (the same pixels as OpenSlide, several times faster:
    no ARGB conversion, no PIL round trip) — straight into ``out`` when it is given (then
    ``out`` is returned; other paths return a new array).
    """
    size = (plan.read_size, plan.read_size)
    return _read_resampled(reader, xy_level0, plan, size, (plan.patch_size,) * 2, out=out)


def read_rect(
    reader: SlideReader,
    xy_level0: tuple[int, int],
    size_level0: tuple[int, int],
    plan: ReadPlan,
) -> np.ndarray:
    """Any level-0 rectangle at the plan's target resolution, by the path patches take.

    The one read-at-resolution path of pathgls: the feature bag's patches (:func:`read_patch`),
    the patches a subject is shown (montage) and the regions grounding embeds all come
    through it, so a rectangle that is a bag patch gives exactly that patch's pixels. The
    rectangle is read at ``plan.level`` (``size_level0 / downsample`` pixels) and reduced by
    the plan's factor: area (or scaled JPEG decode) when the plan reduces by a whole factor
    that divides the read, else Lanczos.

    Returns:
        ``(H, W, 3)`` uint8 RGB of ``round(size_level0 / downsample / factor)`` pixels.
    """
    ds = reader.level_downsamples[plan.level]
    w0, h0 = int(size_level0[0]), int(size_level0[1])
    read = (max(1, round(w0 / ds)), max(1, round(h0 / ds)))
    factor = plan.read_size / plan.patch_size
    target = (max(1, round(read[0] / factor)), max(1, round(read[1] / factor)))
    return _read_resampled(reader, xy_level0, plan, read, target)


def _read_resampled(
    reader: SlideReader,
    xy_level0: tuple[int, int],
    plan: ReadPlan,
    read: tuple[int, int],
    target: tuple[int, int],
    *,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``read`` pixels at ``plan.level`` resampled to ``target`` pixels (see :func:`read_rect`)."""
    k = plan.reduction
    whole = k is not None and read == (target[0] * k, target[1] * k)
    area = whole and plan.resample == "area"
    factor = 1 if read == target else (k if area else None)
    if plan.scaled_decode and factor in SCALES:
        scaled = getattr(reader, "read_region_scaled", None)
        patch = scaled(xy_level0, plan.level, read, factor, out=out) if scaled else None
        if patch is not None:
            return patch
    region = reader.read_region(xy_level0, plan.level, read)
    if read == target:
        return region
    if area:
        assert k is not None
        return area_reduce(region, k)
    im = Image.fromarray(region).resize(target, Image.Resampling.LANCZOS, reducing_gap=2.0)
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


def _read_batch(
    reader: SlideReader, coords: np.ndarray, plan: ReadPlan, start: int, out: np.ndarray | None
) -> PatchBatch:
    shape = (len(coords), plan.patch_size, plan.patch_size, 3)
    images = np.empty(shape, dtype=np.uint8) if out is None else out[: len(coords)]
    for i, (x, y) in enumerate(coords):
        view = images[i]
        patch = read_patch(reader, (int(x), int(y)), plan, out=view)
        if patch is not view:  # a path that made its own array
            view[...] = patch
    return PatchBatch(start=start, coords=coords, images=images)


class _Ring:
    """A fixed set of batch arrays handed out and returned in turn (no allocation per batch)."""

    def __init__(self, count: int, shape: tuple[int, ...], *, pin_memory: bool) -> None:
        self._free = [_host_array(shape, pin_memory=pin_memory) for _ in range(count)]

    def take(self) -> np.ndarray:
        return self._free.pop()  # sized so that it is never empty (see stream_patches)

    def give(self, array: np.ndarray | None) -> None:
        if array is not None:
            self._free.append(array)


def _host_array(shape: tuple[int, ...], *, pin_memory: bool) -> np.ndarray:
    if not pin_memory:
        return np.empty(shape, dtype=np.uint8)
    import torch

    # page-locked: a CUDA copy from it can run asynchronously (non_blocking=True)
    return torch.empty(shape, dtype=torch.uint8, pin_memory=True).numpy()


def stream_patches(
    reader: SlideReader,
    coords: np.ndarray,
    plan: ReadPlan,
    *,
    batch_size: int = 32,
    workers: int = 2,
    prefetch: int = 2,
    start: int = 0,
    reuse_buffers: bool = False,
    pin_memory: bool = False,
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
        reuse_buffers: write batches into a fixed ring of arrays; a batch's ``images`` may be
            overwritten as soon as the consumer asks for the next batch, so use (or copy) each
            batch before advancing. Without it every batch is a new array.
        pin_memory: allocate the ring in page-locked memory (needs CUDA; implies
            ``reuse_buffers``), so copies to the GPU can overlap with reading.

    Raises:
        SlideReadError: a patch could not be read (raised in the consumer, in order).
    """
    coords = np.asarray(coords, dtype=np.int64).reshape(-1, 2)
    starts = range(start, len(coords), batch_size)
    window = max(1, workers * prefetch)
    ring = None
    if reuse_buffers or pin_memory:
        shape = (batch_size, plan.patch_size, plan.patch_size, 3)
        # in flight: `window` reads, plus the batch the consumer holds
        ring = _Ring(1 if workers <= 0 else window + 1, shape, pin_memory=pin_memory)
    if workers <= 0:
        for s in starts:
            buf = ring.take() if ring else None
            yield _read_batch(reader, coords[s : s + batch_size], plan, s, buf)
            if ring:
                ring.give(buf)
        return
    pending: collections.deque[tuple[Future[PatchBatch], np.ndarray | None]] = collections.deque()
    it = iter(starts)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pathgls-read") as pool:

        def submit(s: int) -> None:
            buf = ring.take() if ring else None
            future = pool.submit(_read_batch, reader, coords[s : s + batch_size], plan, s, buf)
            pending.append((future, buf))

        try:
            for s in it:
                submit(s)
                if len(pending) >= window:
                    break
            while pending:
                future, buf = pending.popleft()
                batch = future.result()
                nxt = next(it, None)
                if nxt is not None:
                    submit(nxt)
                yield batch
                if ring:
                    ring.give(buf)
        finally:
            for f, _ in pending:
                f.cancel()
