"""Exceptions raised by pathgls.

Every failure a user can cause (bad slide, missing model, wrong config) has its own type so
that runners can record it per item and carry on with the rest of the run.
"""

from __future__ import annotations


class PathGLSError(Exception):
    """Base class of every error pathgls raises on purpose."""


class ConfigError(PathGLSError, ValueError):
    """A configuration value is invalid or a config file cannot be read."""


class UnknownNameError(PathGLSError, KeyError):
    """A registry was asked for a name it does not know."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


class SlideError(PathGLSError):
    """Base class of slide problems; ``path`` names the slide."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class SlideOpenError(SlideError):
    """The file is not a slide or image pathgls can open."""


class SlideReadError(SlideError):
    """The slide opened, but its pixels cannot be read."""


class ResolutionError(SlideError):
    """The slide's resolution does not allow patches at the target magnification."""


class MissingResolutionError(ResolutionError):
    """The slide carries no microns-per-pixel or objective metadata and none was given."""


class NoSlidesFoundError(SlideError):
    """A directory was given that holds no slide or image pathgls can read."""


class ModelNotFoundError(PathGLSError):
    """Model weights are not available locally (and pathgls never downloads implicitly)."""


class EncoderError(PathGLSError):
    """An encoder could not be built or used."""


class BagError(PathGLSError):
    """An HDF5 feature bag is invalid, incomplete or does not match what was asked."""


class SampleDataError(PathGLSError):
    """Sample data could not be fetched or failed its checksum."""


class GroundingError(PathGLSError):
    """Grounding cannot run on what it was given (not a missing score: a wrong input)."""


class EncoderMismatchError(GroundingError):
    """The feature bag was made by another encoder than the text tower grounding uses."""


class ScoreCardError(PathGLSError, ValueError):
    """A ScoreCard (JSON or object) is malformed, or of a version this pathgls cannot read."""


class EvidenceError(ScoreCardError):
    """A module's evidence does not have the shape of its typed view (the message names the key)."""
