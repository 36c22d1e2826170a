"""Every exception and warning class pathgls defines, grouped by the stage that raises it.

Every failure a user can cause (bad slide, missing model, wrong config) has its own type so
that runners can record it per item and carry on with the rest of the run. Errors pathgls raises
on purpose derive from :class:`PathGLSError`; those about a bad value also derive from
``ValueError`` (and a missing name from ``KeyError``), so callers that catch the builtin keep
working.

The stage modules import their classes from here and keep them importable under their old
names (``from pathgls.hare import HareError`` works as before). The one exception defined
elsewhere is ``pathgls.llm.client._Transient``, a private retry signal inside ``ChatClient``
that never leaves it.

This module imports nothing from pathgls (it is the bottom floor).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

# -- core ---------------------------------------------------------------------------------------


class PathGLSError(Exception):
    """Base class of every error pathgls raises on purpose.

    Instances pickle with their attributes whatever their ``__init__`` asks for (the Ray executor
    sends a worker's error to the driver, which raises it again with its own type).
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return _restore, (type(self), self.args, self.__dict__)


def _restore(cls: type[PathGLSError], args: tuple[Any, ...], state: dict[str, Any]) -> Exception:
    """Rebuild an unpickled error without calling its ``__init__`` (keyword-only arguments)."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigError(PathGLSError, ValueError):
    """A configuration value is invalid or a config file cannot be read."""


class ScoreModuleError(ConfigError):
    """A score-module plugin (entry-point group ``pathgls.score_modules``) cannot be used: it does
    not import, is not a :class:`~pathgls.modules.ModuleScorer`, or its name is taken; or a
    module's ``score`` hook cannot be resolved. The message names the entry point or hook."""


class JSONTextError(PathGLSError, ValueError):
    """JSON text from outside (a server, a model, a file) that cannot be read: invalid, a key
    given twice in one object, nested too deeply, or not UTF-8 (see :mod:`pathgls.jsontext`)."""


class UnknownNameError(PathGLSError, KeyError):
    """A registry was asked for a name it does not know."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


# -- io, hub ------------------------------------------------------------------------------------


class TableError(PathGLSError, ValueError):
    """A user table (TSV/CSV) cannot be read as one: the message names the file and line."""


class SampleDataError(PathGLSError):
    """Sample data could not be fetched or failed its checksum."""


class ModelNotFoundError(PathGLSError):
    """Model weights are not available locally (and pathgls never downloads implicitly)."""


class JudgeModelError(ModelNotFoundError):
    """The learned judge's weights are missing, incomplete or made for other base weights."""


class ScorerBuildError(PathGLSError):
    """A Logic scorer factory failed in a worker process (the message is the factory's)."""


class NotTextError(PathGLSError, ValueError):
    """A file that must be text (a report, a table) is missing, or is binary (format named)."""


class InputTooLargeError(NotTextError, TableError):
    """An input passes a reader's cap (size, stream length, nesting, rows): the message names
    the cap and the environment variable that raises it (:mod:`pathgls.io.limits`). Caught
    wherever an unreadable text or table is."""


class SameInputError(PathGLSError, ValueError):
    """Two inputs that must differ are the same (references and candidates read from one column)."""


# -- tiling -------------------------------------------------------------------------------------


class SlideError(PathGLSError):
    """Base class of slide problems; ``path`` names the slide."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class SlideOpenError(SlideError):
    """The file is not a slide or image pathgls can open."""


class SlideReadError(SlideError):
    """The slide opened, but its pixels cannot be read."""


class DamagedTileError(SlideReadError):
    """A JPEG tile pathgls's strict decoder refuses (libjpeg reports corrupt data): the slide is
    refused rather than read through OpenSlide, which decodes such a tile without a word.
    ``level`` and ``tile`` (index, column, row) name it."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        level: int | None = None,
        tile: tuple[int, int, int] | None = None,
    ) -> None:
        super().__init__(message, path=path)
        self.level = level
        self.tile = tile


class ResolutionError(SlideError):
    """The slide's resolution does not allow patches at the target magnification."""


class MissingResolutionError(ResolutionError):
    """The slide carries no microns-per-pixel or objective metadata and none was given."""


class NoSlidesFoundError(SlideError):
    """A directory was given that holds no slide or image pathgls can read."""


class SlideIdentityError(SlideError):
    """A slide file is not the one a bag, a patches file or a ScoreCard was made from (another
    file under the same name, or the file changed): the message names both identities."""


# -- features, encoders -------------------------------------------------------------------------


class BagError(PathGLSError):
    """An HDF5 feature bag is invalid, incomplete or does not match what was asked."""


class EncoderError(PathGLSError):
    """An encoder could not be built or used."""


# -- llm ----------------------------------------------------------------------------------------


class LLMError(PathGLSError):
    """A chat-completion request failed, or its answer could not be used.

    Attributes:
        status: HTTP status of the last failed request (None: no HTTP answer).
        endpoint: URL that was asked.
        model: Model name that was asked for.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        endpoint: str = "",
        model: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint
        self.model = model


class ReplyFormatError(ValueError):
    """One model reply is not valid JSON or breaks the schema asked for; the message says how.

    The JSON-chat loop (:func:`pathgls.llm.json_chat.ask_json`) sends the message back to the
    model as a correction, so it must name what to fix. Only a ``ValueError`` (not a
    :class:`PathGLSError`): it is the parser's answer to one reply, and the loop turns running out
    of attempts into :class:`NoValidReplyError`.
    """


class NoValidReplyError(LLMError):
    """Every attempt of the JSON-chat loop gave a reply that could not be used.

    Attributes:
        problem: Why the last reply was refused.
        replies: Every raw reply, in order.
        problems: Why each reply was refused, aligned with ``replies``.
    """

    def __init__(
        self,
        message: str,
        *,
        replies: Sequence[str],
        problems: Sequence[str],
        endpoint: str = "",
        model: str = "",
    ) -> None:
        super().__init__(message, endpoint=endpoint, model=model)
        self.replies = tuple(replies)
        self.problems = tuple(problems)
        self.problem = self.problems[-1] if self.problems else ""

    @property
    def n_attempts(self) -> int:
        """Requests made (one per reply)."""
        return len(self.replies)


# -- text ---------------------------------------------------------------------------------------


class LexiconError(PathGLSError, ValueError):
    """A lexicon file is malformed or uses an unknown type, attribute key or value."""


class NERModelError(PathGLSError):
    """A token-classification model cannot be loaded or used for entity extraction."""


class AnswerError(ReplyFormatError):
    """An LLM extractor's answer is not valid JSON or breaks the entity schema."""


# -- attacks, subjects --------------------------------------------------------------------------


class StainInputError(PathGLSError, ValueError):
    """Images or image ids given to a stain function are not what it needs."""


class SubjectError(PathGLSError):
    """A subject failed to produce a report (endpoint down, bad answer, missing record)."""


class ReplayFileError(ConfigError):
    """A replay file is missing, unreadable or holds an invalid record.

    Attributes:
        path: The file.
        line: 1-based line of the bad record (None: the file as a whole).
    """

    def __init__(self, message: str, *, path: Path, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


# -- grounding ----------------------------------------------------------------------------------


class GroundingError(PathGLSError):
    """Grounding cannot run on what it was given (not a missing score: a wrong input)."""


class EncoderMismatchError(GroundingError):
    """The feature bag was made by another encoder than the text tower grounding uses."""


# -- hare ---------------------------------------------------------------------------------------


class HareError(PathGLSError):
    """A HARE model cannot be loaded or used."""


class HareInputError(PathGLSError, ValueError):
    """The texts given to HARE cannot be scored (e.g. lists of different lengths)."""


# -- baselines ----------------------------------------------------------------------------------


class BaselineInputError(PathGLSError, ValueError):
    """The texts given to a baseline metric cannot be scored (e.g. lists of different lengths)."""


class FactCountError(PathGLSError, ValueError):
    """A fact-count table is malformed; ``line`` is the offending line or row when known."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class JudgeError(PathGLSError):
    """The judge produced no usable score (every sample failed, or the input was empty)."""


class VerdictError(ReplyFormatError):
    """A judge reply is not valid JSON or breaks the rubric schema."""


# -- meta ---------------------------------------------------------------------------------------


class MetaError(PathGLSError, ValueError):
    """A validation table or request cannot be used."""


class CalibrationError(PathGLSError, ValueError):
    """A validation table or calibration request cannot be used."""


class ComparisonError(PathGLSError, ValueError):
    """A paired comparison cannot be made (unknown subject, too few shared items, bad options)."""


# -- results ------------------------------------------------------------------------------------


class ScoreCardError(PathGLSError, ValueError):
    """A ScoreCard (JSON or object) is malformed, or of a version this pathgls cannot read."""


class EvidenceError(ScoreCardError):
    """A module's evidence does not have the shape of its typed view (the message names the key)."""


# -- runner -------------------------------------------------------------------------------------


class LockedError(PathGLSError):
    """Another live process holds the lock of a run directory or a feature bag.

    ``holder`` is what that process wrote into the lock: pid, host, start time, command.
    """

    def __init__(self, message: str, *, holder: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.holder = dict(holder or {})


class RunDirError(PathGLSError):
    """An output folder pathgls will not write: a file, inside an input folder, or holding a
    symbolic link where pathgls writes its own files (the message names the path)."""


class ClusterError(PathGLSError):
    """The Ray cluster of a run stopped answering (no live node within the health deadline)."""


class RunIntegrityError(PathGLSError):
    """A run's results do not add up (fewer or more ScoreCards than items × subjects)."""


# -- inspect ------------------------------------------------------------------------------------


class NoScoreCardsError(PathGLSError):
    """A folder holds no readable ScoreCard (not a run directory, or an empty run)."""


class SeveralRunsError(NoScoreCardsError):
    """A folder given as one run directory holds several runs (``runs/`` instead of ``runs/x``).

    ``runs`` lists the run directories found in it.
    """

    def __init__(self, message: str, *, runs: Sequence[Path] = ()) -> None:
        super().__init__(message)
        self.runs = tuple(runs)


class RunReportError(PathGLSError):
    """The HTML run report cannot be written (its template, or the output file)."""


class ReviewError(PathGLSError):
    """The review page cannot start (no review card, port in use) or a label is refused."""


# -- warnings -----------------------------------------------------------------------------------
# Categories a caller filters or asserts on (``warnings.filterwarnings``, ``pytest.warns``), so
# they are public vocabulary like the errors above.


class EmptyReportWarning(UserWarning):
    """HARE: some candidate or reference reports were empty; those pairs scored 0."""


class EmptyTextWarning(UserWarning):
    """Baselines: some candidate or reference texts were empty; those pairs were scored 0.0."""
