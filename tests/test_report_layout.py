"""The HTML run report fits the window: at 1024 and 1920 px no table scrolls sideways and the
page uses the window's width (headless Chromium; skipped where it is not installed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from browser import check_page, find_chromium
from typer.testing import CliRunner

from pathgls.cli import app

V1 = Path(__file__).parent / "data" / "scorecards_v1"
CHROMIUM = find_chromium()
#: Where the screenshots go (default: the test's tmp_path), to look at them.
SCREENSHOT_DIR = os.environ.get("PATHGLS_SCREENSHOT_DIR")


@pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)"
)
@pytest.mark.parametrize("width", [1024, 1920])
def test_the_report_fits_the_window(tmp_path: Path, width: int) -> None:
    run = tmp_path / "run"
    folder = run / "scorecards" / "replay"
    folder.mkdir(parents=True)
    for name in ("failed", "ok_grounded", "partial"):
        shutil.copy(V1 / f"{name}.json", folder / f"{name}.json")
    res = CliRunner().invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    shots = Path(SCREENSHOT_DIR) if SCREENSHOT_DIR else tmp_path
    seen = check_page(
        run / "report.html", screenshot=shots / f"report-{width}.png", chromium=str(CHROMIUM),
        width=width,
    )  # fmt: skip
    assert not seen.errors, seen.errors
    assert seen.images == seen.images_loaded
    assert seen.page_width <= seen.window_width  # the page never scrolls sideways
    assert seen.scrolled == 0  # nor does any table inside it
    assert seen.body_width >= 0.9 * seen.window_width  # no fixed page width at 1920 px
