"""``pathgls extract``: slides → HDF5 feature bags."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from pathgls.cli import preflight
from pathgls.cli.common import fail, progress_bar, run_logging
from pathgls.config import DEFAULT_ENCODER, load_config, save_effective_config
from pathgls.errors import PathGLSError
from pathgls.io.rundirs import check_new_run_dir
from pathgls.io.sanitize import markup_text as escape


def register(app: typer.Typer) -> None:
    """Add the ``extract`` command to ``app``."""
    app.command("extract")(extract)


Opt = typer.Option


def extract(
    slides: Annotated[
        Path | None, typer.Argument(help="A slide/image file or a directory searched recursively.")
    ] = None,
    out: Annotated[Path, Opt("--out", "-o", help="Run directory for bags, config and log.")] = Path(
        "runs/extract"
    ),
    encoder: Annotated[
        str | None,
        Opt(
            "--encoder",
            "-e",
            help="plip, quiltnet, conch, hf:<repo-or-dir>, open_clip:... (default: the config's "
            "encoder.name, else plip).",
        ),
    ] = None,
    mag: Annotated[float | None, Opt(help="Target magnification (default 20 = 0.5 µm/px).")] = None,
    patch_size: Annotated[int | None, Opt(help="Patch side in px at --mag (default 512).")] = None,
    mpp: Annotated[
        float | None, Opt(help="µm/px of level 0, for slides without metadata (or run.mpp).")
    ] = None,
    workers: Annotated[int | None, Opt(help="Reader threads (default 2).")] = None,
    batch_size: Annotated[int | None, Opt(help="Patches per batch (default 32).")] = None,
    torch_threads: Annotated[
        int | None, Opt(help="Torch threads of a CPU encoder while extracting (0: unchanged).")
    ] = None,
    tissue_threshold: Annotated[
        float | None, Opt(help="Minimum tissue fraction of a patch.")
    ] = None,
    device: Annotated[str | None, Opt(help="auto, cpu, cuda, cuda:N.")] = None,
    windows: Annotated[
        bool,
        Opt(
            "--windows",
            help="Also encode each patch's HighRes windows (window_features: what Grounding "
            "reads; ~9x the encoder work of 512 px patches) instead of one view per patch "
            "(or encoder.windows = true in the config).",
        ),
    ] = False,
    models_dir: Annotated[Path | None, Opt(help="Directory of pulled models.")] = None,
    overwrite: Annotated[bool, Opt(help="Redo slides whose bag exists.")] = False,
    verify: Annotated[
        bool,
        Opt(
            help="Hash each slide in full to check its patches file and bag, even when its "
            "size, mtime and header are unchanged."
        ),
    ] = False,
    config: Annotated[
        Path | None,
        Opt(help="TOML config (tiling, stream, encoder, bag; run.mpp); options given here win."),
    ] = None,
    sample: Annotated[str | None, Opt(help="Use a sample slide (see `pathgls data list`).")] = None,
) -> None:
    """Tile slides at --mag, encode one view per patch (--windows: HighRes windows), write one
    HDF5 feature bag per slide."""
    console = Console(stderr=True)
    try:  # inputs, config and encoder first: no heavy import before they are known to be good
        preflight.config_file(config)
        if (slides is None) == (sample is None):
            fail(console, "give either SLIDES or --sample NAME")
        if slides is not None:
            preflight.slides_source(slides)
        check_new_run_dir(out)
        cfg = load_config(
            config,
            tiling={
                "magnification": mag,
                "patch_size": patch_size,
                "tissue_threshold": tissue_threshold,
            },
            stream={"workers": workers, "batch_size": batch_size, "torch_threads": torch_threads},
            encoder={
                "name": encoder,
                "device": device,
                "models_dir": str(models_dir) if models_dir else None,
                "windows": windows or None,
            },
            bag={"overwrite": overwrite or None},
            run={"mpp": mpp, "verify": verify or None},
        )
        if cfg.encoder.name is None:
            cfg = replace(cfg, encoder=replace(cfg.encoder, name=DEFAULT_ENCODER))
        preflight.check_config_models(cfg, encoder=True)
        if sample is not None:
            from pathgls.io.samples import sample_path

            paths = [sample_path(sample)]
    except PathGLSError as e:
        fail(console, e)
    try:
        if slides is not None:
            from pathgls.tiling import find_slides

            paths = find_slides(slides)
        with run_logging(out, "extract", own=EXTRACT_ENTRIES) as log_path:
            results, elapsed = _extract_all(cfg, paths, out, console)
    except PathGLSError as e:
        fail(console, e)
    _report(results, elapsed, log_path, console)


#: What ``pathgls extract`` writes in its output folder (none of it may be a link): bags, the
#: patches files (``<mag>x_<size>px_<overlap>px_overlap/``), logs and the effective config.
EXTRACT_ENTRIES = ("features_*", "*px_overlap", "logs", "extract-config.*")


def _extract_all(
    cfg: Any, paths: list[Path], out: Path, console: Console
) -> tuple[list[Any], float]:
    """Save the config, build the encoder and extract every slide (inside the run log).

    Returns:
        The per-slide results and the seconds they took.
    """
    from pathgls.encoders import build_encoder
    from pathgls.features.extract import ExtractResult, extract_slides
    from pathgls.io.atomic import describe_os_error

    try:
        save_effective_config(cfg, out, name="extract-config")
    except OSError as e:
        raise PathGLSError(
            f"cannot write {out / 'extract-config.toml'}: {describe_os_error(e)}"
        ) from e
    try:
        enc = build_encoder(cfg.encoder, image_only=True)  # extraction never encodes text
    except PathGLSError as e:
        logging.getLogger("pathgls.features.extract").error("%s", e)
        raise
    if enc.random_weights:
        console.print(
            f"[yellow]warning:[/] encoder {cfg.encoder.name} has random weights: "
            "its features prove wiring only, never report them as results"
        )
    t0 = time.perf_counter()
    with progress_bar(console) as progress:
        overall = progress.add_task("slides", total=len(paths))
        current = progress.add_task("patches", total=None)

        def on_start(p: Path, i: int) -> None:
            progress.reset(current, total=None, description=escape(p.name))

        def on_progress(done: int, total: int) -> None:
            progress.update(current, completed=done, total=total)

        def on_done(r: ExtractResult) -> None:
            if r.status == "skipped":
                progress.update(current, total=r.n_patches, completed=r.n_patches)
            progress.advance(overall)

        results = extract_slides(
            slides=paths,
            out_dir=out,
            encoder=enc,
            config=cfg,
            mpp=cfg.run.mpp,
            on_start=on_start,
            progress=on_progress,
            on_done=on_done,
            verify=cfg.run.verify,
        )
    return results, time.perf_counter() - t0


def _report(results: list[Any], elapsed: float, log_path: Path, console: Console) -> None:
    """Print each slide's failure and warnings and the counts; exit 1 when a slide failed."""
    for r in results:
        if r.status == "failed":
            console.print(
                f"[red]failed[/] {escape(Path(r.slide).name)}: {escape(r.error or '')}",
                soft_wrap=True,
            )
        for w in r.warnings:
            console.print(
                f"[yellow]warning[/] {escape(Path(r.slide).name)}: {escape(w)}", soft_wrap=True
            )
    counts = {s: sum(r.status == s for r in results) for s in ("done", "skipped", "failed")}
    encoded = sum(r.n_encoded for r in results)
    rate = encoded / elapsed if elapsed > 0 else 0.0
    per = sorted({r.views_per_patch for r in results if r.views_per_patch})
    views = (
        ""
        if not per
        else "one view per patch, "
        if per == [1]
        else f"{'/'.join(map(str, per))} HighRes windows per patch, "
    )
    # the patch stage alone (reading, encoding, writing) is what a peer given ready patch
    # coordinates times; the overall rate also carries tiling, hashing and opening
    stage = sum(r.timings.get("slide.encoding", 0.0) for r in results if r.n_encoded)
    stage_text = f", {stage:.1f} s of it reading, encoding and writing patches" if encoded else ""
    typer.echo(
        f"slides: {counts['done']} done, {counts['skipped']} skipped, {counts['failed']} failed; "
        f"patches: {encoded} encoded ({views}{rate:.1f} patches/s) in {elapsed:.1f} s"
        f"{stage_text}; log: {log_path}"
    )
    if counts["failed"]:
        raise typer.Exit(1)
