"""Image–text encoders: registry (PLIP, QuiltNet, CONCH, any HF/open_clip model), HighRes windows.

Build one with :func:`build_encoder` from an :class:`~pathgls.config.EncoderConfig` (names:
:mod:`pathgls.encoders.registry`); weights are only ever read from local directories
(``pathgls models pull`` fetches them, see :mod:`pathgls.hub.store`). Importing this package
loads no model and touches no network; transformers and open_clip are imported when an encoder
is built.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.io`, :mod:`pathgls.hub`.
"""

from pathgls.encoders import conch as _conch  # noqa: F401  (registers "conch")
from pathgls.encoders import hf_clip as _hf_clip  # noqa: F401  (registers "plip")
from pathgls.encoders import openclip as _openclip  # noqa: F401  (registers "quiltnet")
from pathgls.encoders.base import ClipEncoder, Encoder, TorchPreprocess
from pathgls.encoders.factory import build_encoder
from pathgls.encoders.highres import (
    WindowBuffers,
    encode_highres,
    window_coords,
    window_offsets,
)
from pathgls.encoders.registry import (
    ENCODERS,
    EncoderSpec,
    list_encoders,
    parse_encoder_spec,
    register_encoder,
)

__all__ = [
    "ENCODERS",
    "ClipEncoder",
    "Encoder",
    "EncoderSpec",
    "TorchPreprocess",
    "WindowBuffers",
    "build_encoder",
    "encode_highres",
    "list_encoders",
    "parse_encoder_spec",
    "register_encoder",
    "window_coords",
    "window_offsets",
]
