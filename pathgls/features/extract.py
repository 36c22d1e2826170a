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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pathgls.config import SLIDE_SECTIONS, PathGLSConfig, config_to_dict
from pathgls.encoders import Encoder, WindowBuffers, encode_highres, window_offsets
from pathgls.encoders.registry import encoder_name
from pathgls.errors import BagError, PathGLSError
from pathgls.features.bags import BagMeta, BagWriter, validate_bag
from pathgls.features.session import SlideSession
from pathgls.io.lock import locked
from pathgls.io.names import printable, safe_stem, unique_ids
from pathgls.registry import parse_spec
from pathgls.tiling import PatchBatch, stream_patches
from pathgls.tiling.readers import SlideReader
from pathgls.tiling.resolution import ReadPlan
from pathgls.version import __version__

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
    # seconds by stage: slide.identity, slide.tiling (plan, mask, grid or the patches file),
    # slide.open, slide.encoding (reading, encoding and writing the patches)
    timings: dict[str, float] = field(default_factory=dict)
    tiling_reused: bool = False  # the plan and grid came from the patches file
    views_per_patch: int = 0  # encoder views per patch: 1 (one view) or the HighRes windows

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
    session: SlideSession | None = None,
    verify: bool = False,
    windows: bool | None = None,
) -> ExtractResult:
    """Extract the feature bag of one slide (resuming a partial bag, skipping a complete one).

    The slide's read plan and tissue grid come from its patches file in ``out_dir`` when the
    slide is unchanged (:mod:`pathgls.features.patches`), so a second encoder or a rerun does
    not tile again; a complete bag of an unchanged slide is skipped without opening the slide.
    A bag made from a slide that has changed since is rebuilt, with a warning.

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
        session: the item's open slide session (the runner's); None opens one for this call.
        verify: hash the whole slide to check its stored patches file, even when its size,
            mtime and header are unchanged.
        windows: encode HighRes windows (``window_features``, which Grounding needs) instead
            of one view per patch; None takes ``config.encoder.windows``. The runner passes
            True.

    Returns:
        The result; ``status="failed"`` with ``error`` set when the slide could not be done.
    """
    t0 = time.perf_counter()
    name = Path(slide).stem
    result = ExtractResult(slide=str(slide), status="failed")
    own = session is None
    sess = session or SlideSession(
        Path(slide),
        tiling_config=config.tiling,
        mpp=mpp,
        out_dir=Path(out_dir),
        name=bag_name or name,
        verify=verify,
    )
    before = dict(sess.timings)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cfg = _with_windows(config, windows)
            _extract(sess, Path(out_dir), encoder, cfg, progress, result, bag_name)
        result.warnings.extend(str(w.message) for w in caught)
    except PathGLSError as e:
        result.status, result.error = "failed", str(e)
        log.error("%s: %s", name, e)
    except Exception as e:  # an unexpected failure of one slide must not end the run
        result.status, result.error = "failed", f"{type(e).__name__}: {e}"
        log.error("%s: unexpected error\n%s", name, traceback.format_exc())
    finally:
        if own:
            result.warnings.extend(w for w in sess.notes if w not in result.warnings)
            sess.close()
    for key, value in sess.timings.items():
        if value - before.get(key, 0.0) > 0:
            result.timings[key] = value - before.get(key, 0.0)
    result.tiling_reused = sess.stats.tiling_reused
    result.seconds = time.perf_counter() - t0
    for w in result.warnings:
        log.warning("%s: %s", name, w)
    return result


def _with_windows(config: PathGLSConfig, windows: bool | None) -> PathGLSConfig:
    """``config`` with ``encoder.windows`` set to ``windows`` (None: unchanged)."""
    if windows is None or windows == config.encoder.windows:
        return config
    return replace(config, encoder=replace(config.encoder, windows=windows))


def views_per_patch(patch_size: int, config: PathGLSConfig) -> int:
    """Encoder views per patch: 1 for one view, the HighRes window count with windows."""
    ec = config.encoder
    if not ec.windows:
        return 1
    return len(window_offsets(patch_size, ec.window_size, ec.window_stride)) ** 2


def _extract(
    session: SlideSession,
    out_dir: Path,
    encoder: Encoder,
    config: PathGLSConfig,
    progress: ProgressFn | None,
    result: ExtractResult,
    bag_name: str | None,
) -> None:
    ec = config.encoder
    tiling = session.tiling()
    grid, plan, ident = tiling.grid, tiling.plan, tiling.identity
    per_patch = views_per_patch(plan.patch_size, config)
    # one view per patch: the window is the whole patch (the encoder resizes it)
    win_size = ec.window_size if ec.windows else plan.patch_size
    win_stride = ec.window_stride if ec.windows else plan.patch_size
    meta = BagMeta(
        encoder=encoder_name(ec),
        patch_size=plan.patch_size,
        patch_size_level0=plan.patch_size_level0,
        target_magnification=plan.target_magnification,
        target_mpp=plan.target_mpp,
        level0_magnification=plan.level0_magnification,
        level0_mpp=plan.level0_mpp,
        window_size=win_size,
        window_stride=win_stride,
        slide_name=tiling.slide_name,
        slide_sha256=ident.sha256,
        pathgls_version=__version__,
        patch_level=plan.level,
        mpp_source=plan.mpp_source,
        tissue_threshold=config.tiling.tissue_threshold,
        overlap=config.tiling.overlap,
        encoder_model_id=encoder.model_id,
        encoder_revision=encoder.revision or "",
        random_weights=encoder.random_weights,
        n_windows=per_patch if ec.windows else 0,
        views="windows" if ec.windows else "patch",
        views_per_patch=per_patch,
        resample=plan.resampling,
        scaled_decode=plan.scaled_decode and plan.resampling in ("area", "none"),
        dim=encoder.dim,
        config_json=json.dumps(
            {k: v for k, v in config_to_dict(config).items() if k in SLIDE_SECTIONS},
            sort_keys=True,
        ),
        slide_size=ident.size,
        slide_mtime_ns=ident.mtime_ns,
        slide_header_sha256=ident.header_sha256,
        # where the slide was (heat maps draw over its thumbnail); not part of its identity
        extras={"slide_path": printable(str(session.path.resolve()))},
    )
    if plan.mpp_source == "default":
        result.warnings.append(
            f"no resolution metadata; assumed {plan.level0_mpp:g} µm/px (pass --mpp to set it)"
        )
    path = bag_path_for(out_dir, bag_name or session.name, encoder_name(ec))
    result.bag_path, result.n_patches = str(path), len(grid)
    result.views_per_patch = per_patch
    if len(grid) == 0:
        result.warnings.append("no tissue patches found; the bag is empty")
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.with_name(path.name + ".lock"), what=f"feature bag {path}"):
        _write_bag(path, meta, grid, session, encoder, config, progress, result)


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
    session: SlideSession,
    encoder: Encoder,
    config: PathGLSConfig,
    progress: ProgressFn | None,
    result: ExtractResult,
) -> None:
    """Skip a complete bag or write (resume) it; the caller holds the bag's lock."""
    sc, plan = config.stream, grid.plan
    if path.exists() and not config.bag.overwrite:
        stale = _check_existing(path, meta, session=session)
        if stale is None:
            result.status = "skipped"
            return
        result.warnings.append(f"{path.name}: {stale}; the bag is rebuilt")
        path.unlink()
    t0 = time.perf_counter()
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
        if done0 < writer.n_total:
            log.info(
                "%s: encoding %d patches, %s",
                session.name,
                writer.n_total - done0,
                describe_views(meta.views_per_patch, windows=meta.has_windows),
            )
            reader = session.reader  # opened only when there are patches to read
            for batch, win, feats in encode_patches(
                reader=reader,
                coords=grid.coords,
                plan=plan,
                encoder=encoder,
                config=config,
                start=done0,
            ):
                writer.append(
                    start=batch.start,
                    coords=batch.coords,
                    window_features=win if meta.has_windows else None,
                    features=feats,
                )
                if progress:
                    progress(writer.n_done, writer.n_total)
        result.n_encoded = writer.n_done - done0
        writer.finalize()
    result.timings["slide.encoding"] = time.perf_counter() - t0
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

    With ``config.encoder.windows`` False each patch is one view (``window_features`` is then
    ``(B, 1, D)``, the features themselves); else its HighRes windows.

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
        side = int(batch.images.shape[1])
        win, feats = encode_highres(
            encoder,
            batch.images,
            window_size=ec.window_size if ec.windows else side,
            window_stride=ec.window_stride if ec.windows else side,
            buffers=buffers,
        )
        yield batch, win, feats


def describe_views(per_patch: int, *, windows: bool) -> str:
    """What an extraction encodes, for its log: the views per patch and who needs them."""
    if not windows:
        return "one view per patch (as CLAM/TRIDENT; --windows adds Grounding's HighRes windows)"
    return (
        f"{per_patch} HighRes windows per patch (--windows: Grounding needs them; ~{per_patch}x "
        "the encoder work of one view)"
    )


def _check_existing(path: Path, meta: BagMeta, *, session: SlideSession) -> str | None:
    """None when the complete bag at ``path`` is what ``meta`` asks for; the reason when it was
    made from another version of the slide (rebuild it). The bag is checked against the slide
    (:meth:`SlideSession.validate_bag`: coordinates inside it).

    Raises:
        BagError: the bag is invalid, or was made with other settings.
    """
    try:
        old = session.validate_bag(path)
    except BagError as e:
        stale = _other_slide(path, meta)
        if stale is not None:  # e.g. the coordinates of an earlier, larger version
            return stale
        raise BagError(
            f"{path}: an existing bag is invalid ({e}); delete it (or run `pathgls extract "
            "--overwrite`) or use another --out"
        ) from e
    diffs = [d for d in meta.mismatches(old) if not d.startswith("slide_sha256:")]
    if diffs:
        raise BagError(
            f"{path}: an existing bag was made with other settings ({'; '.join(diffs)}); "
            "delete it (or run `pathgls extract --overwrite`) or use another --out"
        )
    return _stale_reason(old, meta)


def _stale_reason(old: BagMeta, meta: BagMeta) -> str | None:
    if old.slide_sha256 != meta.slide_sha256:
        return (
            f"it was made from another version of the slide (SHA-256 {old.slide_sha256[:12]}… "
            f"→ {meta.slide_sha256[:12]}…)"
        )
    return None


def _other_slide(path: Path, meta: BagMeta) -> str | None:
    """Why a bag refused against this slide is stale (made from another version of it, with
    these settings), or None when it is not (then it is invalid)."""
    try:
        old = validate_bag(path)  # everything but the slide's size
    except BagError:
        return None
    if any(not d.startswith("slide_sha256:") for d in meta.mismatches(old)):
        return None
    return _stale_reason(old, meta)


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
    verify: bool = False,
    windows: bool | None = None,
) -> list[ExtractResult]:
    """Extract several slides in order; a failed slide is recorded and the run goes on.

    ``windows``: as :func:`extract_slide`."""
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
            verify=verify,
            windows=windows,
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
