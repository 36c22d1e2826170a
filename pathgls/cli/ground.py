"""``pathgls ground``: the Grounding score of a report on a feature bag or an ROI image."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli import preflight
from pathgls.cli.common import fail
from pathgls.config import PathGLSConfig
from pathgls.errors import PathGLSError
from pathgls.io.sanitize import markup_text as escape

if TYPE_CHECKING:
    from pathgls.runner.ground_one import Background

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
    from pathgls.runner.ground_one import GroundRequest, ground_one

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
        outcome = ground_one(request=request, config=cfg)
        result, thumb = outcome.result, outcome.background
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
