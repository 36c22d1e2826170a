"""A fresh clone has no ``../shared``: no test may build a path to it outside the fixture.

The shared data reaches tests only through ``tests/conftest.py`` (``shared_data`` and the
fixtures built on it, which skip with the reason when the folder is absent); end-to-end tests
use the sample data of ``pathgls data sample``. ``.ci/run`` also runs the collection and a
subset of the suite with ``PATHGLS_SHARED_DATA`` pointing nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: A path literal that reaches the shared folder: ``/ "shared"``, ``"../shared"``, ``"shared" /``.
SHARED_PATH = re.compile(r"""/\s*["']shared["']|["'](\.\./)*shared/|["']shared["']\s*/""")
#: Scripts run by hand, not by pytest, that read $PATHGLS_SHARED_DATA first.
ALLOWED = {"data/scorecards_v1/make_v1_cards.py"}


def shared_paths(text: str) -> list[str]:
    return [m.group(0) for m in SHARED_PATH.finditer(text)]


def test_the_pattern_finds_the_ways_a_path_to_shared_is_built() -> None:
    assert shared_paths('ROOT.parent / "shared" / "data"')
    assert shared_paths('Path("../shared/data/slides")')
    assert shared_paths('root / "shared/data"')
    assert shared_paths("p = 'shared' / 'data'")
    assert not shared_paths('"""the shared data fixture"""')
    assert not shared_paths("shared_data / 'slides'")


def test_no_test_hard_codes_the_shared_folder() -> None:
    offenders = {
        str(p.relative_to(TESTS)): found
        for p in sorted(TESTS.rglob("*.py"))
        if p.name != "conftest.py" and p != Path(__file__).resolve()
        if str(p.relative_to(TESTS)) not in ALLOWED
        if (found := shared_paths(p.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "use the shared_data fixture (tests/conftest.py)"


def test_shared_fixture_skips_with_the_reason_when_hidden(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import conftest

    monkeypatch.setenv(conftest.SHARED_ENV, str(tmp_path / "nowhere"))
    assert conftest.shared_root() == tmp_path / "nowhere"
    with pytest.raises(pytest.skip.Exception, match=r"shared data not found.*PATHGLS_SHARED_DATA"):
        conftest._shared("slides")
    monkeypatch.delenv(conftest.SHARED_ENV)
    assert conftest.shared_root() == conftest.DEFAULT_SHARED


def test_sample_data_is_the_real_slide(sample_slide: Path, sample_rois: tuple[Path, ...]) -> None:
    import hashlib

    import numpy as np
    from PIL import Image

    from pathgls.io.samples import get_spec

    digest = hashlib.sha256(sample_slide.read_bytes()).hexdigest()
    assert digest == get_spec("cmu-small-region").sha256
    for roi in sample_rois:  # every ROI is mostly tissue, not background
        rgb = np.asarray(Image.open(roi).convert("RGB"), dtype=float)
        assert rgb.shape == (512, 512, 3)
        assert (rgb.mean(axis=-1) < 200).mean() > 0.25, roi.name
