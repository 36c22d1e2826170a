"""One report grounded on one source: what ``pathgls ground`` runs, by the run's own steps.

A feature bag (checked against ``--slide`` when one is given), an ROI image or a region read
from a slide; the report analysed by the run's extractor and scored with the run's encoder and
foil bank (:func:`pathgls.runner.pipeline.ground_report`), keeping per-patch values and the
heat map's background when asked. The command line only parses, checks files and draws.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from numpy.typing import NDArray

from pathgls.config import PathGLSConfig
from pathgls.errors import PathGLSError, SlideIdentityError
from pathgls.io.sniff import read_text_bytes

if TYPE_CHECKING:
    from pathgls.features.session import SlideSession
    from pathgls.grounding import GroundingResult

log = logging.getLogger(__name__)


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

    image: NDArray[Any]
    slide_size: tuple[int, int]
    origin: tuple[float, float]
    coords: NDArray[Any]
    patch_size_level0: int


@dataclass(frozen=True)
class GroundOutcome:
    """One report grounded: the result, and the background of its heat map (if asked)."""

    result: GroundingResult
    background: Background | None


def ground_one(*, request: GroundRequest, config: PathGLSConfig) -> GroundOutcome:
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

    cfg = config
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
        return GroundOutcome(result, background)
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
    return GroundOutcome(result, Background(img, size, origin, src.coords, src.patch_size_level0))


def _slide_thumbnail(
    request: GroundRequest, src: Any, cfg: PathGLSConfig, session: SlideSession | None
) -> tuple[NDArray[Any], tuple[int, int]]:
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
) -> tuple[NDArray[Any], tuple[int, int]]:
    """The session's slide thumbnail and level-0 size (the slide is checked by
    :func:`same_slide` before)."""
    return session.thumbnail(request.thumbnail_size), session.dimensions
