"""``pathgls ground``: the Grounding score of a report on a feature bag or an ROI image."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError

Opt = typer.Option


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
    out: Annotated[Path | None, Opt(help="PNG path of the heat map.")] = None,
    thumbnail_size: Annotated[int, Opt(help="Longest side of the heat-map thumbnail.")] = 1024,
    as_json: Annotated[bool, Opt("--json", help="Print the ModuleScore as JSON.")] = False,
) -> None:
    """Grounding score S_g: is every visual finding of the report seen in the slide or ROI?"""
    console = Console(stderr=True)
    sources = [bag is not None, image is not None, region is not None]
    if sum(sources) != 1:
        fail(console, "give exactly one of --bag, --image or --slide with --region")
    if region is not None and slide is None:
        fail(console, "--region needs --slide")
    if (heatmap is None) != (out is None):
        fail(console, "--heatmap ENTITY and --out PNG go together")
    try:
        result, thumb = _run(
            report=report,
            bag=bag,
            image=image,
            slide=slide,
            region=region,
            mpp=mpp,
            encoder=encoder,
            calibration=calibration,
            template=template,
            extractor=extractor,
            config=config,
            device=device,
            heatmap=heatmap is not None,
            thumbnail_size=thumbnail_size,
            console=console,
        )
        if geojson is not None and result.score.value is not None:
            from pathgls.inspect.geojson import grounding_geojson, write_geojson

            write_geojson(geojson, grounding_geojson(result.score.evidence))
            console.print(f"GeoJSON → {geojson}")
        if heatmap is not None and out is not None:
            _draw(result, thumb, heatmap, out)
            console.print(f"heat map of {heatmap!r} → {out}")
    except (PathGLSError, KeyError) as e:
        fail(console, e if isinstance(e, PathGLSError) else str(e.args[0]))
    _print(result.score, as_json)


def _run(**kw: Any) -> tuple[Any, dict[str, Any] | None]:
    from pathgls.config import DEFAULT_ENCODER, load_config
    from pathgls.encoders import build_encoder
    from pathgls.grounding.score import ground as ground_fn
    from pathgls.grounding.sources import (
        load_roi_image,
        open_bag_source,
        read_slide_region,
        roi_source,
    )
    from pathgls.text import analyze_report, build_extractor

    report: Path = kw["report"]
    if not report.is_file():
        raise PathGLSError(f"{report}: no such file")
    overrides: dict[str, Any] = {}
    if kw["calibration"]:
        overrides["calibration"] = kw["calibration"]
    if kw["template"]:
        overrides["templates"] = tuple(kw["template"])
    if kw["device"]:
        overrides["device"] = kw["device"]
    enc_over: dict[str, Any] = {"device": kw["device"]} if kw["device"] else {}
    bag_path: Path | None = kw["bag"]
    if bag_path is not None and not kw["encoder"]:
        from pathgls.features.bags import validate_bag

        enc_over["name"] = validate_bag(bag_path).encoder
    elif kw["encoder"]:
        enc_over["name"] = kw["encoder"]
    cfg = load_config(
        kw["config"],
        grounding=overrides,
        encoder=enc_over,
        models={"extractor": kw["extractor"]},
        run={"mpp": kw["mpp"]},
    )
    if cfg.encoder.name is None:  # an ROI without --encoder or a config's encoder.name
        cfg = replace(cfg, encoder=replace(cfg.encoder, name=DEFAULT_ENCODER))
    extractor = build_extractor(cfg.models.extractor)
    analyzed = analyze_report(report.read_bytes(), extractor=extractor)
    enc = build_encoder(cfg.encoder)
    gc = cfg.grounding
    if bag_path is not None:
        with open_bag_source(bag_path, slide_size=_slide_size(kw["slide"], cfg.run.mpp)) as src:
            result = ground_fn(
                entities=analyzed.entities,
                encoder=enc,
                source=src,
                config=gc,
                keep_patch_max=kw["heatmap"],
            )
            thumb = _slide_thumbnail(kw | {"mpp": cfg.run.mpp}, src) if kw["heatmap"] else None
            if thumb is not None:
                thumb["coords"], thumb["patch_size_level0"] = src.coords, src.patch_size_level0
        return result, thumb
    if kw["image"] is not None:
        img = load_roi_image(kw["image"])
        origin, scale, space, name = (0.0, 0.0), 1.0, "image", str(kw["image"])
    else:
        x, y, w, h = _parse_region(kw["region"])
        img, scale = read_slide_region(
            kw["slide"],
            x=x,
            y=y,
            width=w,
            height=h,
            target_mpp=cfg.tiling.target_mpp,
            mpp=cfg.run.mpp,
        )
        origin, space, name = (float(x), float(y)), "level0", f"{Path(kw['slide']).name}@{x},{y}"
    src = roi_source(
        encoder=enc,
        image=img,
        name=name,
        window_size=cfg.encoder.window_size,
        window_stride=cfg.encoder.window_stride,
        origin=origin,
        scale=scale,
        space=space,  # type: ignore[arg-type]
        max_side=gc.roi_max_side,
    )
    result = ground_fn(
        entities=analyzed.entities, encoder=enc, source=src, config=gc, keep_patch_max=True
    )
    h, w = img.shape[:2]
    thumb = {
        "image": img,
        "slide_size": (round(w * scale), round(h * scale)),
        "origin": origin,
        "coords": src.coords,
        "patch_size_level0": src.patch_size_level0,
    }
    return result, thumb


def _slide_size(slide: Path | None, mpp: float | None) -> tuple[int, int] | None:
    """Level-0 ``(width, height)`` of ``--slide`` (the bag's coordinates must lie inside it)."""
    if slide is None:
        return None
    from pathgls.tiling.slides import open_slide

    reader = open_slide(Path(slide), mpp=mpp, probe=False)
    try:
        return tuple(reader.dimensions)
    finally:
        reader.close()


def _slide_thumbnail(kw: dict[str, Any], src: Any) -> dict[str, Any]:
    """The slide's thumbnail for a heat map: --slide, else the path recorded in the bag."""
    import h5py

    from pathgls.tiling.slides import open_slide

    slide = kw["slide"]
    if slide is None:
        with h5py.File(src.path, "r") as f:
            recorded = f.attrs.get("slide_path", "")
        recorded = recorded.decode() if isinstance(recorded, bytes) else str(recorded)
        if not recorded or not Path(recorded).exists():
            raise PathGLSError(
                f"the heat map needs the slide: {src.name} was not found at the path recorded "
                f"in the bag ({recorded or 'none'}); pass --slide"
            )
        slide = Path(recorded)
    reader = open_slide(Path(slide), mpp=kw["mpp"])
    try:
        if reader.name != src.name:
            raise PathGLSError(f"--slide {slide} is {reader.name!r}, the bag is of {src.name!r}")
        return {
            "image": reader.thumbnail(kw["thumbnail_size"]),
            "slide_size": reader.dimensions,
            "origin": (0.0, 0.0),
        }
    finally:
        reader.close()


def _draw(result: Any, thumb: dict[str, Any] | None, entity: str, out: Path) -> None:
    """The heat map as a figure a reader can read: title, colour bar, best window, marks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pathgls.cli.common import RANDOM_MARK
    from pathgls.grounding import RANDOM_WEIGHTS_WARNING
    from pathgls.inspect.viz import plot_heatmap

    if result.score.value is None or thumb is None:
        raise PathGLSError(f"no heat map: {result.score.missing_reason}")
    try:
        index = result.entity_index(entity)
    except KeyError as e:
        raise PathGLSError(f"no heat map: {e.args[0]}") from e
    target = result.selection.targets[index]
    values = result.patch_values(target.phrase)
    ox, oy = thumb["origin"]
    coords = thumb["coords"] - [round(ox), round(oy)]
    ev = next(
        (e for e in result.score.evidence.get("entities", []) if e["phrase"] == target.phrase), {}
    )
    box = ev.get("box")
    mark = (box[0] - round(ox), box[1] - round(oy), box[2], box[3]) if box else None
    h, w = thumb["image"].shape[:2]
    fig, ax = plt.subplots(figsize=(max(4.0, w / 100 * 1.25), max(3.0, h / 100 + 0.9)), dpi=100)
    plot_heatmap(
        ax,
        thumbnail=thumb["image"],
        values=values,
        coords=coords,
        patch_size_level0=thumb["patch_size_level0"],
        slide_size=thumb["slide_size"],
        title=(
            f"{target.phrase}: per-patch similarity (best window in cyan)\n"
            f"S_g {result.score.value:.3f}, {result.score.evidence.get('encoder')}"
        ),
        mark=mark,
    )
    if RANDOM_WEIGHTS_WARNING in result.score.warnings:
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
    try:
        fig.savefig(out, format="png")
    finally:
        plt.close(fig)


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
