"""Shared fixtures: the real data in ../shared/data and small derived slides."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _shared(*parts: str) -> Path:
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared data not found: {p}")
    return p


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only shared data folder (../shared/data from the repository root)."""
    return _shared()


@pytest.fixture(scope="session")
def slides_dir() -> Path:
    return _shared("slides")


@pytest.fixture(scope="session")
def tiles_dir() -> Path:
    return _shared("tiles")


@pytest.fixture(scope="session")
def cmu_slide() -> Path:
    """Real H&E Aperio SVS, 2220×2967 px, 0.499 µm/px (20×)."""
    return _shared("slides", "cmu-1-small-region.svs")


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
