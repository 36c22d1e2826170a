"""Slide → HDF5 feature bag: tiling, streaming, HighRes encoding, resumable writing.

:func:`extract_slide` does one slide and never raises for a bad slide: it returns an
:class:`ExtractResult` whose ``status`` is ``failed`` with the reason, so a folder run goes on
with the other slides. :func:`extract_slides` runs a list and writes the run log and config.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pathgls import __version__
from pathgls.config import SLIDE_SECTIONS, PathGLSConfig, config_to_dict
from pathgls.encoders import Encoder, WindowBuffers, encode_highres, window_offsets
from pathgls.errors import BagError, PathGLSError
from pathgls.features.bags import BagMeta, BagWriter, validate_bag
from pathgls.io.lock import locked
from pathgls.io.names import printable, safe_stem, unique_ids
from pathgls.registry import parse_spec
from pathgls.tiling import PatchBatch, make_grid, open_slide, slide_sha256, stream_patches
from pathgls.tiling.readers import SlideReader
from pathgls.tiling.resolution import ReadPlan

log = logging.getLogger("pathgls.features.extract")

Status = Literal["done", "skipped", "failed"]
#: Called with (patches done, patches total) after every batch.
ProgressFn = Callable[[int, int], None]


@dataclass
class ExtractResult:
    """What happened to one slide."""

    slide: str
    status: Status
    bag_path: str | None = None
    n_patches: int = 0
    n_encoded: int = 0  # patches encoded in this run (less than n_patches after a resume)
    seconds: float = 0.0
    error: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def patches_per_second(self) -> float:
        """Encoding throughput of this run."""
        return self.n_encoded / self.seconds if self.seconds > 0 else 0.0


def encoder_slug(name: str) -> str:
    """Filesystem-safe short name of an encoder spec (``hf:/x/tiny-clip`` → ``hf-tiny-clip``)."""
    spec = parse_spec(name, what="encoder")
    scheme, rest = spec.kind, spec.arg
    if not rest:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "encoder"
    tail = Path(rest.rstrip("/")).name or rest
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{scheme}-{tail}").strip("-")


def bag_path_for(out_dir: str | Path, slide_name: str, encoder_name: str) -> Path:
    """Where the bag of ``slide_name`` for ``encoder_name`` lives (TRIDENT-like layout)."""
    return Path(out_dir) / f"features_{encoder_slug(encoder_name)}" / f"{slide_name}.h5"


def extract_slide(
    *,
    slide: str | Path,
    out_dir: str | Path,
    encoder: Encoder,
    config: PathGLSConfig,
    mpp: float | None = None,
    progress: ProgressFn | None = None,
    bag_name: str | None = None,
) -> ExtractResult:
    """Extract the feature bag of one slide (resuming a partial bag, skipping a complete one).

    The bag is locked while it is written: a second process asking for the same bag fails
    this slide with :class:`~pathgls.errors.LockedError` naming the writer (never touching
    its ``.partial`` file); a lock left by a killed writer is taken over.

    Args:
        slide: slide or image file.
        out_dir: run directory; the bag goes to ``features_<encoder>/<slide>.h5``.
        encoder: image encoder (its ``name`` must equal ``config.encoder.name``).
        config: effective configuration.
        mpp: µm/px of level 0 given by the user (overrides metadata; required when it is absent).
        progress: called with (done, total) after each batch.
        bag_name: file stem of the bag (default: the slide's stem); the runner passes the
            item's unique file name, so two slides with one stem never share a bag.

    Returns:
        The result; ``status="failed"`` with ``error`` set when the slide could not be done.
    """
    t0 = time.perf_counter()
    name = Path(slide).stem
    result = ExtractResult(slide=str(slide), status="failed")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _extract(Path(slide), Path(out_dir), encoder, config, mpp, progress, result, bag_name)
        result.warnings.extend(str(w.message) for w in caught)
    except PathGLSError as e:
        result.status, result.error = "failed", str(e)
        log.error("%s: %s", name, e)
    except Exception as e:  # an unexpected failure of one slide must not end the run
        result.status, result.error = "failed", f"{type(e).__name__}: {e}"
        log.error("%s: unexpected error\n%s", name, traceback.format_exc())
    result.seconds = time.perf_counter() - t0
    for w in result.warnings:
        log.warning("%s: %s", name, w)
    return result


def _extract(
    slide: Path,
    out_dir: Path,
    encoder: Encoder,
    config: PathGLSConfig,
    mpp: float | None,
    progress: ProgressFn | None,
    result: ExtractResult,
    bag_name: str | None,
) -> None:
    tc, ec = config.tiling, config.encoder
    reader = open_slide(
        slide, mpp=mpp, image_mpp=tc.image_mpp, max_pixels_per_byte=tc.max_pixels_per_byte
    )
    try:
        if reader.mpp_source == "default":
            result.warnings.append(
                f"no resolution metadata; assumed {reader.mpp:g} µm/px (pass --mpp to set it)"
            )
        grid = make_grid(reader, tc)
        plan = grid.plan
        offsets = window_offsets(plan.patch_size, ec.window_size, ec.window_stride)
        meta = BagMeta(
            encoder=ec.name,
            patch_size=plan.patch_size,
            patch_size_level0=plan.patch_size_level0,
            target_magnification=plan.target_magnification,
            target_mpp=plan.target_mpp,
            level0_magnification=plan.level0_magnification,
            level0_mpp=plan.level0_mpp,
            window_size=ec.window_size,
            window_stride=ec.window_stride,
            slide_name=reader.name,
            slide_sha256=slide_sha256(slide),
            pathgls_version=__version__,
            patch_level=plan.level,
            mpp_source=plan.mpp_source,
            tissue_threshold=tc.tissue_threshold,
            overlap=tc.overlap,
            encoder_model_id=encoder.model_id,
            encoder_revision=encoder.revision or "",
            random_weights=encoder.random_weights,
            n_windows=len(offsets) ** 2,
            resample=plan.resampling,
            scaled_decode=plan.scaled_decode and plan.resampling in ("area", "none"),
            dim=encoder.dim,
            config_json=json.dumps(
                {k: v for k, v in config_to_dict(config).items() if k in SLIDE_SECTIONS},
                sort_keys=True,
            ),
            # where the slide was (heat maps draw over its thumbnail); not part of its identity
            extras={"slide_path": printable(str(Path(slide).resolve()))},
        )
        path = bag_path_for(out_dir, bag_name or reader.name, ec.name)
        result.bag_path, result.n_patches = str(path), len(grid)
        if len(grid) == 0:
            result.warnings.append("no tissue patches found; the bag is empty")
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path.with_name(path.name + ".lock"), what=f"feature bag {path}"):
            _write_bag(path, meta, grid, reader, encoder, config, progress, result)
    finally:
        reader.close()


@contextlib.contextmanager
def _torch_threads(n: int, device: str) -> Iterator[None]:
    """Run with ``n`` torch threads on a CPU encoder (0: unchanged), restoring the setting."""
    if n <= 0 or not str(device).startswith("cpu"):
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _write_bag(
    path: Path,
    meta: BagMeta,
    grid: Any,
    reader: Any,
    encoder: Encoder,
    config: PathGLSConfig,
    progress: ProgressFn | None,
    result: ExtractResult,
) -> None:
    """Skip a complete bag or write (resume) it; the caller holds the bag's lock."""
    sc, plan = config.stream, grid.plan
    if path.exists() and not config.bag.overwrite:
        _check_existing(path, meta, slide_size=tuple(reader.dimensions))
        result.status = "skipped"
        return
    writer = BagWriter(
        path,
        meta=meta,
        coords=grid.coords,
        compression=config.bag.compression,
        chunk_rows=sc.batch_size,
    )
    with writer, _torch_threads(sc.torch_threads, encoder.device):
        if writer.resume_note:
            result.warnings.append(writer.resume_note)
        done0 = writer.n_done
        if progress:
            progress(done0, writer.n_total)
        for batch, win, feats in encode_patches(
            reader=reader,
            coords=grid.coords,
            plan=plan,
            encoder=encoder,
            config=config,
            start=done0,
        ):
            writer.append(
                start=batch.start, coords=batch.coords, window_features=win, features=feats
            )
            if progress:
                progress(writer.n_done, writer.n_total)
        result.n_encoded = writer.n_done - done0
        writer.finalize()
    result.status = "done"


def encode_patches(
    *,
    reader: SlideReader,
    coords: np.ndarray,
    plan: ReadPlan,
    encoder: Encoder,
    config: PathGLSConfig,
    start: int = 0,
) -> Iterator[tuple[PatchBatch, np.ndarray, np.ndarray]]:
    """Read and encode patches in order: yields ``(batch, window_features, features)``.

    The extraction hot path (``pathgls extract`` and ``benchmarks/bench_extract_io.py``):
    reader threads fill a ring of batch arrays (page-locked for a CUDA encoder, so the copy to
    the device overlaps with reading), and HighRes windows are cut and normalised into one
    staging buffer kept across batches. Each batch is encoded before the next is read into its
    array, so a caller must not keep ``batch.images`` past the next step.
    """
    ec, sc = config.encoder, config.stream
    buffers = WindowBuffers()
    for batch in stream_patches(
        reader,
        coords,
        plan,
        batch_size=sc.batch_size,
        workers=sc.workers,
        prefetch=sc.prefetch,
        start=start,
        reuse_buffers=True,
        pin_memory=str(encoder.device).startswith("cuda"),
    ):
        win, feats = encode_highres(
            encoder,
            batch.images,
            window_size=ec.window_size,
            window_stride=ec.window_stride,
            buffers=buffers,
        )
        yield batch, win, feats


def _check_existing(path: Path, meta: BagMeta, *, slide_size: tuple[int, int]) -> None:
    try:
        old = validate_bag(path, slide_size=slide_size)
    except BagError as e:
        raise BagError(
            f"{path}: an existing bag is invalid ({e}); delete it (or run `pathgls extract "
            "--overwrite`) or use another --out"
        ) from e
    diffs = meta.mismatches(old)
    if diffs:
        raise BagError(
            f"{path}: an existing bag was made with other settings ({'; '.join(diffs)}); "
            "delete it (or run `pathgls extract --overwrite`) or use another --out"
        )


def extract_slides(
    *,
    slides: Sequence[str | Path],
    out_dir: str | Path,
    encoder: Encoder,
    config: PathGLSConfig,
    mpp: float | None = None,
    on_start: Callable[[Path, int], None] | None = None,
    progress: ProgressFn | None = None,
    on_done: Callable[[ExtractResult], None] | None = None,
) -> list[ExtractResult]:
    """Extract several slides in order; a failed slide is recorded and the run goes on."""
    log.info(
        "extract: %d slide(s) → %s; encoder %s; mpp %s; pathgls %s",
        len(slides),
        out_dir,
        config.encoder.name,
        f"{mpp:g} µm/px (given)" if mpp else "from metadata",
        __version__,
    )
    results = []
    paths = [Path(s) for s in slides]
    root = Path(os.path.commonpath([str(p.absolute().parent) for p in paths])) if paths else None
    names = unique_ids([p.absolute() for p in paths], root=root)  # same stem: path below root
    for i, s in enumerate(slides):
        if on_start:
            on_start(Path(s), i)
        r = extract_slide(
            slide=s,
            out_dir=out_dir,
            encoder=encoder,
            config=config,
            mpp=mpp,
            progress=progress,
            bag_name=safe_stem(names[i]),
        )
        log.info(
            "%s: %s (%d patches, %.1f s)%s",
            Path(s).name,
            r.status,
            r.n_patches,
            r.seconds,
            f" — {r.error}" if r.error else "",
        )
        results.append(r)
        if on_done:
            on_done(r)
    return results
