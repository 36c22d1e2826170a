"""``pathgls ground``: the Grounding score of a report on a feature bag or an ROI image."""

from __future__ import annotations

import contextlib
import json
import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli import preflight
from pathgls.cli.common import fail
from pathgls.config import PathGLSConfig
from pathgls.errors import PathGLSError, SlideIdentityError
from pathgls.io.sanitize import markup_text as escape
from pathgls.io.sniff import read_text_bytes

if TYPE_CHECKING:
    from pathgls.features.session import SlideSession

Opt = typer.Option
log = logging.getLogger(__name__)


def register(app: typer.Typer) -> None:
    """Add ``ground`` to ``app``."""
    app.command("ground")(ground)


def _parse_region(text: str) -> tuple[int, int, int, int]:
    try:
        x, y, w, h = (int(v) for v in text.split(","))
    except ValueError as e:
        raise PathGLSError(
            f"--region must be x,y,width,height in level-0 pixels, got {text!r}"
        ) from e
    return x, y, w, h


def ground(
    report: Annotated[Path, Opt(help="The report to ground (text file).")],
    bag: Annotated[Path | None, Opt(help="Feature bag (.h5) of the slide.")] = None,
    image: Annotated[Path | None, Opt(help="An ROI image (PNG/JPEG/TIFF) at 20×.")] = None,
    slide: Annotated[
        Path | None,
        Opt(help="The slide: heat-map background for --bag, or the source of --region."),
    ] = None,
    region: Annotated[
        str | None, Opt(help="ROI mode on --slide: x,y,width,height in level-0 pixels.")
    ] = None,
    mpp: Annotated[
        float | None, Opt(help="Level-0 µm/px of --slide when its metadata has none.")
    ] = None,
    encoder: Annotated[
        str | None, Opt(help="Encoder (default: the bag's; for ROIs the config's, plip).")
    ] = None,
    calibration: Annotated[
        str | None, Opt(help="raw, sigmoid or foil-rank (default: the config's, foil-rank).")
    ] = None,
    template: Annotated[
        list[str] | None, Opt(help="Prompt template with one {} (repeatable: ensembled).")
    ] = None,
    extractor: Annotated[
        str | None,
        Opt(help="Entity extractor: lexicon, hf-ner:<dir>, ... (default: models.extractor)."),
    ] = None,
    config: Annotated[
        Path | None,
        Opt(help="TOML config (grounding, encoder, tiling, models.extractor, run.mpp)."),
    ] = None,
    device: Annotated[str | None, Opt(help="auto, cpu, cuda, ...")] = None,
    geojson: Annotated[
        Path | None, Opt(help="Write the top patches per entity as QuPath GeoJSON here.")
    ] = None,
    heatmap: Annotated[
        str | None,
        Opt(
            help="Entity to draw a heat map of: its phrase, concept or mention, or a part of it "
            "that only one grounded entity has (case-insensitive)."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        Opt(help="PNG path of the heat map (default runs/ground/<report>-<entity>.png)."),
    ] = None,
    thumbnail_size: Annotated[int, Opt(help="Longest side of the heat-map thumbnail.")] = 1024,
    force: Annotated[
        bool,
        Opt(
            "--force",
            help="Use --slide (or the slide path the bag records) even when it is not the file "
            "the bag was made from (its size or SHA-256 differ); a warning says so.",
        ),
    ] = False,
    as_json: Annotated[bool, Opt("--json", help="Print the ModuleScore as JSON.")] = False,
) -> None:
    """Grounding score S_g: is every visual finding of the report seen in the slide or ROI?"""
    console = Console(stderr=True)
    sources = [bag is not None, image is not None, region is not None]
    if sum(sources) != 1:
        fail(console, "give exactly one of --bag, --image or --slide with --region")
    if region is not None and slide is None:
        fail(console, "--region needs --slide")
    if out is not None and heatmap is None:
        fail(console, "--out is the heat map's PNG: give --heatmap ENTITY with it")
    if heatmap is not None and out is None:
        out = default_heatmap_path(report, heatmap)
    try:  # inputs, config and models first: no heavy import before they are known to be good
        _check_inputs(report=report, bag=bag, image=image, slide=slide, config=config)
        request = GroundRequest(
            report=report,
            bag=bag,
            image=image,
            slide=slide,
            region=None if region is None else _parse_region(region),
            heatmap=heatmap is not None,
            thumbnail_size=thumbnail_size,
            force=force,
        )
        cfg = _config(
            config=config,
            bag=bag,
            encoder=encoder,
            calibration=calibration,
            template=template,
            extractor=extractor,
            device=device,
            mpp=mpp,
        )
        preflight.check_config_models(cfg, encoder=True, extractor=True)
    except PathGLSError as e:
        fail(console, e)
    try:
        result, thumb = run_ground(request, cfg)
        if geojson is not None and result.score.value is not None:
            from pathgls.inspect.geojson import grounding_geojson, write_geojson

            write_geojson(geojson, grounding_geojson(result.score.evidence))
            console.print(f"GeoJSON → {geojson}")
        if heatmap is not None and out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            _draw(result, thumb, heatmap, out)
            console.print(f"heat map of {heatmap!r} → {out}")
    except (PathGLSError, KeyError) as e:
        fail(console, e if isinstance(e, PathGLSError) else str(e.args[0]))
    except OSError as e:
        fail(console, f"cannot write {e.filename or out}: {e.strerror or e}")
    _print(result.score, as_json)


#: Where heat maps go when ``--out`` is not given.
HEATMAP_DIR = Path("runs") / "ground"


def default_heatmap_path(report: Path, entity: str) -> Path:
    """``runs/ground/<report>-<entity>.png`` (the entity's words joined by '-')."""
    slug = "-".join(re.findall(r"[A-Za-z0-9]+", entity.lower()))[:60] or "entity"
    return HEATMAP_DIR / f"{report.stem}-{slug}.png"


def _check_inputs(
    *, report: Path, bag: Path | None, image: Path | None, slide: Path | None, config: Path | None
) -> None:
    """The files exist and are what they should be (no heavy import)."""
    preflight.config_file(config)
    preflight.report_file(report, what="report")
    if bag is not None:
        preflight.feature_bag(bag)
    if image is not None:
        preflight.image_file(image, what="ROI image")
    if slide is not None:
        preflight.slide_file(slide, what="slide")


@dataclass(frozen=True)
class GroundRequest:
    """What ``pathgls ground`` was asked: one report on one source."""

    report: Path
    bag: Path | None = None  # a feature bag
    image: Path | None = None  # an ROI image
    slide: Path | None = None  # the slide: --region's source, or the heat map's background
    region: tuple[int, int, int, int] | None = None  # x, y, width, height in level-0 px
    heatmap: bool = False  # keep per-patch values and a background for a heat map
    thumbnail_size: int = 1024
    force: bool = False  # a slide that is not the bag's is used anyway, with a warning


@dataclass(frozen=True)
class Background:
    """What a heat map is drawn over: an image, the slide area it shows, the patches."""

    image: np.ndarray
    slide_size: tuple[int, int]
    origin: tuple[float, float]
    coords: np.ndarray
    patch_size_level0: int


def _config(
    *,
    config: Path | None,
    bag: Path | None,
    encoder: str | None,
    calibration: str | None,
    template: list[str] | None,
    extractor: str | None,
    device: str | None,
    mpp: float | None,
) -> PathGLSConfig:
    """The effective config: the file, then the options (a bag's encoder by default)."""
    from pathgls.config import DEFAULT_ENCODER, load_config
    from pathgls.features.bags import validate_bag

    grounding: dict[str, Any] = {"calibration": calibration, "device": device}
    if template:
        grounding["templates"] = tuple(template)
    name = encoder or (validate_bag(bag).encoder if bag is not None else None)
    cfg = load_config(
        config,
        grounding=grounding,
        encoder={"name": name, "device": device},
        models={"extractor": extractor},
        run={"mpp": mpp},
    )
    if cfg.encoder.name is None:  # an ROI without --encoder or a config's encoder.name
        cfg = replace(cfg, encoder=replace(cfg.encoder, name=DEFAULT_ENCODER))
    return cfg


def run_ground(request: GroundRequest, cfg: PathGLSConfig) -> tuple[Any, Background | None]:
    """Ground one report by the steps ``evaluate`` takes (:mod:`pathgls.runner.pipeline`):
    the report analysed by the run's extractor, its windows from a bag, an ROI image or a slide
    region read by the bag's read path, scored with the run's foil bank.

    Raises:
        PathGLSError: a bad report, bag, image, slide or region; a model that is missing.
    """
    from pathgls.features.session import session_for
    from pathgls.grounding.sources import load_roi_image, open_bag_source
    from pathgls.runner.models import load_grounding_models
    from pathgls.runner.pipeline import ground_report, roi_windows
    from pathgls.text import analyze_report, build_extractor

    if not request.report.is_file():
        raise PathGLSError(f"{request.report}: no such file")
    analyzed = analyze_report(
        read_text_bytes(request.report, what="report"),
        extractor=build_extractor(cfg.models.extractor),
    )
    enc, foils = load_grounding_models(cfg)
    gc = cfg.grounding
    if request.bag is not None:
        with contextlib.ExitStack() as stack:
            # with --slide, the bag is checked against it (coordinates inside the slide)
            session = (
                stack.enter_context(session_for(request.slide, tiling=cfg.tiling, mpp=cfg.run.mpp))
                if request.slide is not None
                else None
            )
            if session is not None:  # the bag's own slide, or refused (or --force, said)
                same_slide(request.bag, session.path, given="--slide", force=request.force)
            size = session.dimensions if session is not None else None
            src = stack.enter_context(open_bag_source(request.bag, slide_size=size))
            result = ground_report(
                report=analyzed,
                source=src,
                encoder=enc,
                config=gc,
                foils=foils,
                keep_patch_max=request.heatmap,
            )
            background = None
            if request.heatmap:
                image, size = _slide_thumbnail(request, src, cfg, session)
                background = Background(image, size, (0.0, 0.0), src.coords, src.patch_size_level0)
        return result, background
    if request.image is not None:
        img = load_roi_image(request.image)
        origin, scale, space, name = (0.0, 0.0), 1.0, "image", str(request.image)
    else:
        assert request.slide is not None and request.region is not None
        x, y, w, h = request.region
        with session_for(request.slide, tiling=cfg.tiling, mpp=cfg.run.mpp) as session:
            img, scale = session.read_region(x=x, y=y, width=w, height=h)
        origin, space, name = (float(x), float(y)), "level0", f"{request.slide.name}@{x},{y}"
    src = roi_windows(
        image=img,
        name=name,
        encoder=enc,
        config=cfg,
        origin=origin,
        scale=scale,
        space=space,  # type: ignore[arg-type]
    )
    result = ground_report(
        report=analyzed, source=src, encoder=enc, config=gc, foils=foils, keep_patch_max=True
    )
    h, w = img.shape[:2]
    size = (round(w * scale), round(h * scale))
    return result, Background(img, size, origin, src.coords, src.patch_size_level0)


def _slide_thumbnail(
    request: GroundRequest, src: Any, cfg: PathGLSConfig, session: SlideSession | None
) -> tuple[np.ndarray, tuple[int, int]]:
    """The slide's thumbnail for a heat map: --slide, else the path recorded in the bag."""
    from pathgls.features.bags import validate_bag
    from pathgls.features.session import session_for

    if session is not None:  # --slide, opened for the bag's check
        return _thumbnail_of(session, request, src)
    slide = request.slide
    if slide is None:
        recorded = str(validate_bag(src.path).extras.get("slide_path", ""))
        if not recorded or not Path(recorded).exists():
            raise PathGLSError(
                f"the heat map needs the slide: {src.name} was not found at the path recorded "
                f"in the bag ({recorded or 'none'}); pass --slide"
            )
        slide = Path(recorded)
        same_slide(src.path, slide, given="the slide recorded in the bag", force=request.force)
    with session_for(slide, tiling=cfg.tiling, mpp=cfg.run.mpp) as recorded_session:
        return _thumbnail_of(recorded_session, request, src)


def same_slide(bag: Path, slide: Path, *, given: str, force: bool) -> None:
    """``slide`` must be the file ``bag`` was made from (size, SHA-256: the bag's attributes).

    With ``force`` another file is used, and a warning (console and run log) names both.

    Raises:
        SlideIdentityError: another file (the message names both identities), without ``force``.
    """
    from pathgls.features.bags import validate_bag
    from pathgls.tiling.identity import require_same

    meta = validate_bag(bag)
    try:
        check = require_same(slide, meta.slide_identity(), made=f"the bag {bag}", given=given)
    except SlideIdentityError as e:
        if not force:
            raise SlideIdentityError(f"{e}; pass --force to draw it anyway", path=e.path) from e
        log.warning("--force: %s", e)
        return
    if check.reason == "no identity recorded" and Path(slide).stem != meta.slide_name:
        message = f"{given} {slide} is {Path(slide).stem!r}, the bag is of {meta.slide_name!r}"
        if not force:
            raise SlideIdentityError(f"{message}; pass --force to draw it anyway", path=str(slide))
        log.warning("--force: %s", message)


def _thumbnail_of(
    session: SlideSession, request: GroundRequest, src: Any
) -> tuple[np.ndarray, tuple[int, int]]:
    """The session's slide thumbnail and level-0 size (the slide is checked by
    :func:`same_slide` before)."""
    return session.thumbnail(request.thumbnail_size), session.dimensions


def _draw(result: Any, thumb: Background | None, entity: str, out: Path) -> None:
    """The heat map as a figure a reader can read: title, colour bar, best window, marks.

    Drawn on a :class:`matplotlib.figure.Figure` with the Agg canvas (no pyplot state).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from pathgls.cli.common import RANDOM_MARK
    from pathgls.inspect.viz import plot_heatmap

    if result.score.value is None or thumb is None:
        raise PathGLSError(f"no heat map: {result.score.missing_reason}")
    try:
        index = result.entity_index(entity)
    except KeyError as e:
        raise PathGLSError(f"no heat map: {e.args[0]}") from e
    target = result.selection.targets[index]
    values = result.patch_values(target.phrase)
    ox, oy = thumb.origin
    coords = thumb.coords - [round(ox), round(oy)]
    ev: dict[str, Any] = next(
        (e for e in result.score.evidence.get("entities", []) if e["phrase"] == target.phrase), {}
    )
    box = ev.get("box")
    mark = (box[0] - round(ox), box[1] - round(oy), box[2], box[3]) if box else None
    h, w = thumb.image.shape[:2]
    fig = Figure(figsize=(max(4.0, w / 100 * 1.25), max(3.0, h / 100 + 0.9)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    plot_heatmap(
        ax,
        thumbnail=thumb.image,
        values=values,
        coords=coords,
        patch_size_level0=thumb.patch_size_level0,
        slide_size=thumb.slide_size,
        title=(
            f"{target.phrase}: per-patch similarity (best window in cyan)\n"
            f"S_g {result.score.value:.3f}, {result.score.evidence.get('encoder')}"
        ),
        mark=mark,
    )
    if result.score.random_weights:
        fig.text(
            0.5,
            0.01,
            f"{RANDOM_MARK}: a wiring check, not a result",
            color="red",
            ha="center",
            va="bottom",
            fontsize=12,
            weight="bold",
        )
    from pathgls.io.atomic import write_via

    write_via(out, lambda p: fig.savefig(p, format="png"))


def _print(score: Any, as_json: bool) -> None:
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "grounding": score.value,
                    "missing_reason": score.missing_reason,
                    "evidence": score.evidence,
                    "warnings": score.warnings,
                },
                indent=2,
            )
        )
        return
    out = Console()
    ev = score.evidence
    value = "missing" if score.value is None else f"{score.value:.3f}"
    out.print(
        f"[bold]S_g = {value}[/]  ({ev.get('calibration')}, {escape(str(ev.get('encoder')))}, "
        f"{ev.get('source', {}).get('n_patches', 0)} patches)",
        soft_wrap=True,
    )
    if score.value is None:
        out.print(f"  {escape(score.missing_reason or '')}", soft_wrap=True)
    for w in score.warnings:
        out.print(f"[yellow]warning:[/] {escape(w)}", soft_wrap=True)
    if ev.get("entities"):
        table = Table()
        for col in ("entity", "type", "cosine", "calibrated", "best window (x, y, w, h)"):
            table.add_column(col)
        for e in ev["entities"]:
            table.add_row(
                escape(e["phrase"]) + (" (hedged)" if e["uncertain"] else ""),
                e["type"],
                f"{e['similarity']:.3f}",
                f"{e['calibrated']:.3f}",
                ", ".join(str(v) for v in e["box"]),
            )
        out.print(table)
    if ev.get("negated"):
        out.print("negated (not grounded): " + escape(", ".join(ev["negated"])), soft_wrap=True)
    for s in ev.get("skipped", []):
        out.print(f"skipped {escape(s['text'])}: {escape(s['reason'])}", soft_wrap=True)
