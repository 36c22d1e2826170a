"""Grounding, S_g: is every visual finding of a report seen somewhere in the slide?

- :mod:`.similarity` — the tensor kernels: chunked entity × window cosine, calibrations;
- :mod:`.targets` — which entities are grounded, as which phrases; the foil bank;
- :mod:`.sources` — where to look: a feature bag or an ROI image as HighRes windows;
- :mod:`.score` — :func:`ground`, tying them together into a ModuleScore with evidence.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.hub`, :mod:`pathgls.tiling`,
:mod:`pathgls.encoders`, :mod:`pathgls.features`, :mod:`pathgls.text`.
"""

from pathgls.grounding.score import RANDOM_WEIGHTS_WARNING, GroundingResult, ground
from pathgls.grounding.similarity import (
    SimilarityResult,
    calibrate_foil_rank,
    calibrate_raw,
    calibrate_sigmoid,
    get_calibration,
    grounding_value,
    max_similarity,
    normalize_rows,
    window_boxes,
)
from pathgls.grounding.sources import (
    WindowSource,
    check_encoder,
    load_roi_image,
    open_bag_source,
    read_slide_region,
    roi_source,
)
from pathgls.grounding.targets import (
    FoilEmbeddings,
    GroundingTarget,
    TargetSelection,
    encode_phrases,
    entity_phrase,
    load_foils,
    select_targets,
    unrelated_foils,
)

__all__ = [
    "RANDOM_WEIGHTS_WARNING",
    "FoilEmbeddings",
    "GroundingResult",
    "GroundingTarget",
    "SimilarityResult",
    "TargetSelection",
    "WindowSource",
    "calibrate_foil_rank",
    "calibrate_raw",
    "calibrate_sigmoid",
    "check_encoder",
    "encode_phrases",
    "entity_phrase",
    "get_calibration",
    "ground",
    "grounding_value",
    "load_foils",
    "load_roi_image",
    "max_similarity",
    "normalize_rows",
    "open_bag_source",
    "read_slide_region",
    "roi_source",
    "select_targets",
    "unrelated_foils",
    "window_boxes",
]
