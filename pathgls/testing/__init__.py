"""Test fixtures that ship with the package: tiny random models and synthetic slides.

Randomly initialised models of the real architectures (:mod:`.models`), Aperio-style
pyramids built from real pixels (:mod:`.synthetic`) and hostile files that lie about themselves
(:mod:`.hostile`: bags pointing at other files, slides declaring what they do not hold), for
tests and benchmarks. Their scores mean nothing and are never reported as results.

Nothing in the runtime imports this package; it may import any stage.
"""

from pathgls.testing.models import (
    ConchVisualReference,
    load_conch_visual_reference,
    mark_random,
    save_random_conch,
    save_random_hf_clip,
    save_random_nli_classifier,
    save_random_open_clip,
    save_random_re_classifier,
    save_random_text_encoder,
    save_random_token_classifier,
    save_random_vlm,
)
from pathgls.testing.synthetic import (
    TiledSource,
    UpsampledSource,
    tiled_source,
    upsampled_source,
    write_aperio_pyramid,
)

__all__ = [
    "ConchVisualReference",
    "TiledSource",
    "UpsampledSource",
    "load_conch_visual_reference",
    "mark_random",
    "save_random_conch",
    "save_random_hf_clip",
    "save_random_nli_classifier",
    "save_random_open_clip",
    "save_random_re_classifier",
    "save_random_text_encoder",
    "save_random_token_classifier",
    "save_random_vlm",
    "tiled_source",
    "upsampled_source",
    "write_aperio_pyramid",
]
