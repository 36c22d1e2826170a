"""Where model weights live: the models directory, local resolution, and explicit pulls.

pathgls never downloads implicitly. A repo id is looked up, in order, in

1. the models directory — ``EncoderConfig.models_dir``, else ``$PATHGLS_MODELS_DIR``, else
   ``~/.cache/pathgls/models`` — as the subdirectory ``<org>--<name>``;
2. the Hugging Face cache, with ``snapshot_download(repo_id, local_files_only=True)``.

A local directory is used as it is. When nothing is found, :class:`ModelNotFoundError` names
the model, the repo, the places searched and the ``pathgls models pull`` command that fetches
it on a connected machine. :func:`pull` is that command: it downloads a snapshot into the
models directory and records which commit it got in ``PATHGLS_SOURCE.json``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

from pathgls.encoders.registry import SpecKind, parse_encoder_spec
from pathgls.errors import ModelNotFoundError, UnknownNameError

logger = logging.getLogger(__name__)

#: Environment variable naming the models directory.
MODELS_DIR_ENV = "PATHGLS_MODELS_DIR"
#: File written next to randomly initialised test models (see :mod:`pathgls.testing`).
RANDOM_WEIGHTS_MARKER = "PATHGLS_RANDOM_WEIGHTS"
#: File written by :func:`pull` with the repo id and commit of the snapshot.
SOURCE_FILE = "PATHGLS_SOURCE.json"


def get_models_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The models directory: ``explicit``, else ``$PATHGLS_MODELS_DIR``, else the user cache."""
    if explicit is not None and str(explicit):
        return Path(explicit).expanduser()
    env = os.environ.get(MODELS_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "pathgls" / "models"


def local_dir_name(repo_id: str) -> str:
    """Subdirectory of the models directory holding ``repo_id`` (``org/name`` → ``org--name``)."""
    return repo_id.strip("/").replace("/", "--")


def _hf_cache_dir() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def find_model(repo_id: str, *, models_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The local directory of ``repo_id`` (models directory first, then the HF cache), or None."""
    candidate = get_models_dir(models_dir) / local_dir_name(repo_id)
    if candidate.is_dir() and any(candidate.iterdir()):
        return candidate
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except (OSError, ValueError) as e:  # LocalEntryNotFoundError, HFValidationError, offline
        logger.debug("%s not in the Hugging Face cache: %s", repo_id, e)
        return None


def resolve_model(
    repo_id: str,
    *,
    name: str,
    pull_name: str | None = None,
    models_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Find ``repo_id`` locally or fail with instructions.

    Args:
        repo_id: Hugging Face repo id.
        name: What the user asked for (shown in the error).
        pull_name: Argument of ``pathgls models pull`` that fetches it (default ``hf:<repo_id>``).
        models_dir: Models directory (None: ``$PATHGLS_MODELS_DIR`` or the user cache).

    Raises:
        ModelNotFoundError: the model is in neither place.
    """
    found = find_model(repo_id, models_dir=models_dir)
    if found is not None:
        return found
    root = get_models_dir(models_dir)
    raise ModelNotFoundError(
        f"model {name!r} (Hugging Face repo {repo_id}) is not available locally; searched "
        f"{root / local_dir_name(repo_id)} and the Hugging Face cache {_hf_cache_dir()}. "
        f"pathgls never downloads implicitly: on a connected machine run "
        f"`pathgls models pull {pull_name or 'hf:' + repo_id}` "
        f"(with --models-dir {root} or PATHGLS_MODELS_DIR set to where runs will look)"
    )


def resolve_path(path: str | os.PathLike[str], *, name: str) -> Path:
    """A local directory or file given directly; it must exist."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelNotFoundError(f"model {name!r}: {p} does not exist")
    return p


def location_source(location: str | os.PathLike[str]) -> tuple[str | None, str | None]:
    """``(repo_id, revision)`` of a local model directory when it can be told, else Nones.

    Knows the ``PATHGLS_SOURCE.json`` written by :func:`pull` and the Hugging Face cache layout
    ``.../models--org--name/snapshots/<commit>``.
    """
    p = Path(location)
    directory = p if p.is_dir() else p.parent
    source = directory / SOURCE_FILE
    if source.is_file():
        try:
            data = json.loads(source.read_text())
            return data.get("repo_id"), data.get("revision")
        except (OSError, ValueError):
            logger.warning("cannot read %s", source)
    parts = directory.resolve().parts if directory.exists() else directory.parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3][len("models--") :].replace("--", "/"), parts[-1]
    return None, None


def is_random_weights(location: str | os.PathLike[str]) -> bool:
    """True when the model directory (or a weights file's directory) holds the random marker."""
    p = Path(location)
    directory = p if p.is_dir() else p.parent
    return (directory / RANDOM_WEIGHTS_MARKER).exists()


def repo_for(name_or_repo: str) -> tuple[str, str]:
    """``(repo_id, label)`` for a registry name, ``hf:<repo>`` or ``open_clip:hf-hub:<repo>``.

    Raises:
        UnknownNameError: the name has no Hugging Face repo to pull.
    """
    spec = parse_encoder_spec(name_or_repo)
    if spec.repo_id is None:
        raise UnknownNameError(
            f"{name_or_repo!r} names no Hugging Face repo to pull; use a registered name "
            "(see `pathgls models list`) or hf:<org>/<name>"
        )
    label = spec.name if spec.kind is SpecKind.REGISTERED else spec.spec
    return spec.repo_id, label


def pull(
    name_or_repo: str,
    *,
    models_dir: str | os.PathLike[str] | None = None,
    token_env: str = "HF_TOKEN",
    revision: str | None = None,
) -> Path:
    """Download a model snapshot into ``<models dir>/<org>--<name>`` (the only download path).

    Args:
        name_or_repo: Registry name (``plip``), ``hf:<org>/<name>`` or ``open_clip:hf-hub:<repo>``.
        models_dir: Destination models directory (None: ``$PATHGLS_MODELS_DIR`` or user cache).
        token_env: Environment variable holding a Hugging Face token (gated repos such as
            CONCH); the token is never logged.
        revision: Branch, tag or commit (default: the main branch).

    Returns:
        The directory the snapshot was written to.

    Raises:
        UnknownNameError: the name has no repo.
        ModelNotFoundError: the download failed (offline, no access, unknown repo, ...).
    """
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import GatedRepoError

    repo_id, label = repo_for(name_or_repo)
    root = get_models_dir(models_dir)
    target = root / local_dir_name(repo_id)
    # Download into a staging directory (resumable) and move it in place only when complete,
    # so an interrupted pull never looks like a present model.
    staging = root / ".partial" / local_dir_name(repo_id)
    token = os.environ.get(token_env) or None
    logger.info("pulling %s (%s) into %s", label, repo_id, target)
    try:
        commit = HfApi().model_info(repo_id, revision=revision, token=token).sha or revision
        staging.mkdir(parents=True, exist_ok=True)
        snapshot_download(repo_id, revision=commit, local_dir=staging, token=token)
    except Exception as e:  # network, HTTP, auth, disk: the client's error types vary by version
        hint = ""
        if isinstance(e, GatedRepoError):
            hint = f" The repo is gated: accept its terms on huggingface.co and set ${token_env}."
        elif os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
            hint = " HF_HUB_OFFLINE is set; unset it on a connected machine."
        raise ModelNotFoundError(
            f"could not pull {label!r} (Hugging Face repo {repo_id}) into {target}: "
            f"{type(e).__name__}: {str(e).rstrip('.')}.{hint}"
        ) from e
    source = {
        "repo_id": repo_id,
        "revision": commit,
        "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (staging / SOURCE_FILE).write_text(json.dumps(source, indent=2))
    if target.is_symlink():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    os.replace(staging, target)
    return target


def weights_provenance(
    location: str | os.PathLike[str], *, label: str
) -> tuple[str | None, str | None, bool]:
    """``(source repo, revision, random_weights)`` of a model directory.

    Random test weights are logged as a warning naming ``label`` (their outputs mean nothing).
    """
    source_repo, revision = location_source(location)
    random_weights = is_random_weights(location)
    if random_weights:
        logger.warning("%s has random weights: its outputs mean nothing", label)
    return source_repo, revision, random_weights
