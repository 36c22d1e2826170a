"""The HTML run report: valid HTML, self-contained images, what it shows, and a real browser."""

from __future__ import annotations

import base64
import io
import os
import re
from pathlib import Path

import html5lib
import pytest
from browser import check_page, find_chromium
from PIL import Image
from replay_inputs import contradicting_records, write_references, write_replay
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import EncoderConfig, PathGLSConfig, RunConfig
from pathgls.errors import NoScoreCardsError, RunReportError
from pathgls.inspect.run_report import (
    RunReportConfig,
    render_run_report,
    report_context,
    write_run_report,
)
from pathgls.runner.run import run_benchmark

ATTACK = "attack:false-malignant-history"
DATA_URI = re.compile(r"^data:image/png;base64,([A-Za-z0-9+/=]+)$")
#: Where the browser tests keep their screenshots (default: the test's tmp_path).
SCREENSHOT_DIR = os.environ.get("PATHGLS_SCREENSHOT_DIR")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, shared_data: Path, tiny_clip: Path) -> Path:
    """A real run on the real CMU slide: a recorded report with a contradiction, grounded by a
    tiny random CLIP (its heat map kept), scored against a reference, and the captioner."""
    root = tmp_path_factory.mktemp("report-run")
    cmu = shared_data / "slides" / "cmu-1-small-region.svs"
    slides = root / "slides"
    slides.mkdir()
    (slides / cmu.name).symlink_to(cmu.resolve())
    replay = write_replay(root / "replay.jsonl", contradicting_records(cmu.stem, ATTACK))
    refs = write_references(root / "refs.tsv", cmu.stem)
    config = PathGLSConfig(
        run=RunConfig(subjects=(f"replay:{replay}", "captioner")),
        encoder=EncoderConfig(name=f"hf:{tiny_clip}"),
    )
    run_benchmark(source=slides, config=config, out=root / "run", references=refs, plots=False)
    return root / "run"


def _images(html: str) -> list[str]:
    return re.findall(r'<img[^>]*\ssrc="([^"]*)"', html)


def test_the_report_is_valid_html_with_only_inline_images(run_dir: Path, tmp_path: Path) -> None:
    # the slides lie outside the run: named as its source, their pictures are shown
    config = RunReportConfig(sources=(run_dir.parent / "slides",))
    out = write_run_report(run_dir=run_dir, out=tmp_path / "report.html", config=config)
    html = out.read_text(encoding="utf-8")
    html5lib.HTMLParser(strict=True).parse(html)  # raises on any parse error
    srcs = _images(html)
    assert len(srcs) == 1 + 2  # the distributions, and one picture per gallery card
    for src in srcs:  # every image it references is inside the page and decodes
        m = DATA_URI.match(src)
        assert m, src[:60]
        im = Image.open(io.BytesIO(base64.b64decode(m.group(1))))
        im.verify()
        assert im.size[0] > 10 and im.size[1] > 10
    # nothing is loaded from anywhere: every link is an anchor in the page
    assert not re.search(r'\s(?:src|href)="(?!data:|#)', html)
    assert all(f'id="{a}"' in html for a in re.findall(r'href="#([^"]+)"', html))


def test_the_report_shows_the_run(run_dir: Path) -> None:
    sources = (run_dir.parent / "slides",)  # the slides lie outside the run: named here
    ctx = report_context(run_dir=run_dir, config=RunReportConfig(failures=2, sources=sources))
    # rank order: the recorded report was scored on more of the trust's weight than the
    # captioner (nothing to ground, no diagnosis for Logic), so it ranks first
    ranks = [(s["subject"].split(":")[0], s["rank"]) for s in ctx["subjects"]]
    assert ranks == [("replay", "1"), ("captioner", "2")]
    first = ctx["subjects"][0]
    assert first["matched_on"].endswith("(1 item)") and first["coverage"]["mean"] != "missing"
    # "ranked on" shows what the rank uses: the coverage tier first, then the matched trust
    assert [s["tier"] for s in ctx["subjects"]] == ["tier 1", "tier 2"]
    assert "coverage first" in ctx["rank_rule"]
    assert {"trust", "grounding", "logic", "stability", "report"} <= set(ctx["metrics"])
    # two subjects on one item: the paired comparison refuses, and says why
    (cmp,) = ctx["comparisons"]
    assert "share 1 completed item(s)" in cmp["refused"] and "at least 5" in cmp["refused"]
    # the tiny CLIP has random weights: the page says so, and marks the rows it scored (the
    # captioner's report had nothing to ground, so no score of it came from the tiny CLIP)
    assert any(m.startswith("encoder: ") for m in ctx["random_models"])
    marked = {g["subject"].split(":")[0]: g["random"] for g in ctx["gate"]}
    assert marked["replay"] and marked["captioner"] == []
    replay = next(f for f in ctx["gallery"] if f["subject"].startswith("replay:"))
    # the grounding heat map of the least grounded entity over the thumbnail
    assert replay["grounding"]["image"].startswith("data:image/png;base64,")
    assert replay["grounding"]["note"].startswith("least grounded: ")
    assert "brighter: more similar" in replay["grounding"]["note"]
    # the contradicting sentences with the rule that fired
    rules = {c["rule"] for c in replay["logic"]["checks"]}
    assert rules, replay["logic"]
    check = replay["logic"]["checks"][0]
    assert "no lymphovascular invasion" in check["first"] + check["second"]
    # the case model beside it: the two facts of the fired check come first, marked
    rows = replay["logic"]["case"]
    assert [r["fired"] for r in rows[:2]] == [True, True]
    assert {r["slot"] for r in rows[:2]} == {"invasion lymphovascular"}
    assert {r["value"] for r in rows[:2]} == {"present", "absent"}
    assert check["explanation"]
    # the attack diff: the text that changed, and the diagnoses
    attack = next(a for a in replay["attack"] if a["condition"] == ATTACK)
    assert "+Diagnosis: invasive carcinoma, high grade." in attack["lines"]
    assert "-Microscopic: benign glands without atypia. Lymphocytes are present." in attack["lines"]
    # the gate table carries the reasons, the report side among them
    gate = next(g for g in ctx["gate"] if g["subject"].startswith("replay:"))
    reasons = gate["reasons"] + gate["more"]
    assert any(r.startswith("report ") and "of the weight" in r for r in reasons)
    assert "[run]" in ctx["info"]["config"] and ctx["info"]["packages"]
    html = render_run_report(run_dir=run_dir, config=RunReportConfig(failures=2))
    assert "random weights" in html and "Paired comparison" in html
    assert "ranked on: tier, matched trust" in html and "tier 1 ·" in html
    assert "&lt;" not in ctx["title"] and "<script" not in html  # autoescaped, no script


def test_report_errors(tmp_path: Path, run_dir: Path) -> None:
    with pytest.raises(NoScoreCardsError):
        write_run_report(run_dir=tmp_path, out=tmp_path / "r.html")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(RunReportError, match="cannot write the run report"):
        write_run_report(run_dir=run_dir, out=blocker / "r.html")
    with pytest.raises(RunReportError):
        RunReportConfig(thumbnail_side=4)


def test_report_cli(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    args = ["report", str(run_dir), "--out", str(out), "--failures", "1"]
    res = CliRunner().invoke(app, [*args, "--source", str(run_dir.parent / "slides")])
    assert res.exit_code == 0, res.output
    assert f"run report: {out.resolve()}" in res.stdout.replace("\n", "")
    assert len(_images(out.read_text(encoding="utf-8"))) == 2
    # without --source, the slides outside the run are not opened: the distributions only
    assert CliRunner().invoke(app, args).exit_code == 0
    assert len(_images(out.read_text(encoding="utf-8"))) == 1
    bad = CliRunner().invoke(app, ["report", str(tmp_path / "none"), "--out", str(out)])
    assert bad.exit_code == 2 and "no ScoreCard" in bad.output


# --- a real browser ------------------------------------------------------------------------------

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium not installed (Debian package `chromium`: apt-get install chromium)",
)


def _shot(tmp_path: Path, name: str) -> Path:
    return Path(SCREENSHOT_DIR) / name if SCREENSHOT_DIR else tmp_path / name


@needs_chromium
def test_the_browser_notices_a_broken_page(tmp_path: Path) -> None:
    """The check can fail: a missing image and a console error are seen."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><head><title>b</title></head><body><img src="missing.png" alt="">'
        "<script>console.error('boom')</script></body></html>"
    )
    seen = check_page(page, screenshot=tmp_path / "broken.png", chromium=str(CHROMIUM))
    assert (seen.images, seen.images_loaded) == (1, 0)
    assert any("boom" in e for e in seen.errors) and len(seen.errors) >= 2


@needs_chromium
def test_the_demo_writes_a_report_that_opens_in_chromium(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    res = CliRunner().invoke(app, ["demo", "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = out / "report.html"
    assert f"run report: {report.resolve()}" in res.stdout.replace("\n", "")
    seen = check_page(report, screenshot=_shot(tmp_path, "demo-report.png"), chromium=str(CHROMIUM))
    assert seen.title == f"pathgls run report — {out.name}"
    assert seen.images == len(_images(report.read_text(encoding="utf-8"))) >= 1 + 4
    assert seen.images_loaded == seen.images and seen.errors == []
    shot = Image.open(seen.screenshot)
    assert shot.size[0] >= 1000 and shot.size[1] > 2000  # the whole page, not a blank viewport


@needs_chromium
def test_the_grounded_run_report_opens_in_chromium(run_dir: Path, tmp_path: Path) -> None:
    sources = (run_dir.parent / "slides",)  # the slides lie outside the run: named here
    report = write_run_report(
        run_dir=run_dir, out=tmp_path / "report.html", config=RunReportConfig(sources=sources)
    )
    seen = check_page(
        report, screenshot=_shot(tmp_path, "grounded-report.png"), chromium=str(CHROMIUM)
    )
    assert seen.images == seen.images_loaded == 3 and seen.errors == []
