"""A bag or a ScoreCard drawn over a slide that is not the one it was made from (issue 36).

``pathgls ground --heatmap`` drew the CMU bag over another slide that had the same file name
(only the names were compared), although the bag stores the slide's size and SHA-256; the run
report, the review page and the failure figures drew a card's stored heat map over whatever
file now sits at the item's path. Now the file must be the one recorded: another file (another
slide under the same name, or the slide edited in place) is refused with an error naming both
identities, or used with ``ground --force`` and a warning; an identical copy is accepted.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.errors import SlideIdentityError
from pathgls.features.bags import validate_bag
from pathgls.io.checksums import file_sha256

REPORT = "Microscopic: sheets of atypical cells with lymphocytes. Diagnosis: carcinoma."


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> dict[str, Path]:
    """A bag of a copy of the real CMU slide (tiny random CLIP), a report, another slide."""
    from pathgls.encoders import build_encoder
    from pathgls.features.extract import extract_slide
    from pathgls.testing import save_random_hf_clip

    root = tmp_path_factory.mktemp("identity")
    slide = root / "slides" / "cmu-1-small-region.svs"
    slide.parent.mkdir()
    shutil.copyfile(shared_data / "slides" / "cmu-1-small-region.svs", slide)
    model = save_random_hf_clip(root / "clip", size="tiny", seed=0)
    cfg = load_config(encoder={"name": f"hf:{model}", "windows": True}, stream={"batch_size": 8})
    done = extract_slide(
        slide=slide, out_dir=root / "bags", encoder=build_encoder(cfg.encoder), config=cfg
    )
    assert done.status == "done", done.error
    report = root / "r.txt"
    report.write_text(REPORT)
    # another real slide under the same file name
    other = root / "other" / "cmu-1-small-region.svs"
    other.parent.mkdir()
    shutil.copyfile(shared_data / "slides" / "tcga-cr-7395-01a-01-ts1.svs", other)
    return {"bag": Path(done.bag_path), "slide": slide, "report": report, "other": other}


def _ground(made: dict[str, Path], png: Path, *extra: str) -> tuple[int, str]:
    args = ["ground", "--bag", str(made["bag"]), "--report", str(made["report"])]
    result = CliRunner().invoke(app, [*args, "--heatmap", "lymphocytes", "--out", str(png), *extra])
    return result.exit_code, " ".join(result.output.split())  # unwrapped


def test_a_heat_map_over_another_slide_of_the_same_name_is_refused_or_forced(
    made: dict[str, Path], tmp_path: Path
) -> None:
    meta = validate_bag(made["bag"])
    ours, theirs = meta.slide_sha256, file_sha256(made["other"])
    assert meta.slide_size == made["slide"].stat().st_size and ours == file_sha256(made["slide"])
    png = tmp_path / "h.png"
    code, text = _ground(made, png, "--slide", str(made["other"]))
    assert code == 2 and not png.exists(), text
    assert "is not the slide the bag" in text and "pass --force" in text
    # both identities named: the bag's slide and the file given
    assert f"{meta.slide_size:,} bytes, SHA-256 {ours[:16]}" in text
    assert f"{made['other'].stat().st_size:,} bytes, SHA-256 {theirs[:16]}" in text
    code, text = _ground(made, png, "--slide", str(made["other"]), "--force")
    assert code == 0 and png.is_file(), text
    assert "warning: --force:" in text and theirs[:16] in text
    # the bag's own slide, and an identical copy of it (another mtime), are accepted silently
    copy = tmp_path / "copy" / "cmu-1-small-region.svs"
    copy.parent.mkdir()
    shutil.copyfile(made["slide"], copy)
    for slide in (made["slide"], copy):
        png.unlink(missing_ok=True)
        code, text = _ground(made, png, "--slide", str(slide))
        assert code == 0 and png.is_file() and "warning: --force" not in text, text


def test_the_same_slide_edited_in_place_is_refused(made: dict[str, Path], tmp_path: Path) -> None:
    # same name, same size, same header and tile table: one pixel tile's bytes differ
    edited = tmp_path / "cmu-1-small-region.svs"
    data = bytearray(made["slide"].read_bytes())
    data[len(data) // 2] ^= 0xFF
    edited.write_bytes(bytes(data))
    code, text = _ground(made, tmp_path / "h.png", "--slide", str(edited))
    assert code == 2 and "its content changed" in text, text


def test_the_slide_recorded_in_the_bag_is_checked_too(
    made: dict[str, Path], tmp_path: Path
) -> None:
    recorded = made["slide"]
    keep = tmp_path / "keep.svs"
    shutil.copyfile(recorded, keep)
    shutil.copyfile(made["other"], recorded)  # another slide at the path the bag records
    try:
        code, text = _ground(made, tmp_path / "h.png")
        assert code == 2 and "the slide recorded in the bag" in text and "size changed" in text
    finally:
        os.replace(keep, recorded)
    code, text = _ground(made, tmp_path / "h.png")
    assert code == 0, text


def test_a_run_report_never_draws_a_card_over_another_file(tmp_path: Path, tiles_dir: Path) -> None:
    from pathgls.inspect.failures import grounding_figure, load_run
    from pathgls.runner.run import run_benchmark

    tissue = sorted(tiles_dir.glob("tissue-*.png"))
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.png").symlink_to(tissue[0].resolve())
    out = tmp_path / "run"
    run_benchmark(
        source=src, config=load_config(run={"subjects": ("captioner",)}), out=out, plots=False
    )
    view = load_run(out)
    (card,) = view.cards
    fig = grounding_figure(card, run_dir=out, sources=(src,))
    assert "cannot be read" not in fig.axes[0].get_title()
    (src / "a.png").unlink()
    (src / "a.png").symlink_to(tissue[1].resolve())  # another picture under the item's name
    fig = grounding_figure(card, run_dir=out, sources=(src,))
    title = " ".join(fig.axes[0].get_title().split())
    assert "is not the slide ScoreCard a was made from" in title, title
    page = tmp_path / "r.html"
    done = CliRunner().invoke(app, ["report", str(out), "--out", str(page), "--source", str(src)])
    assert done.exit_code == 0, done.output
    html = page.read_text()
    assert "is not the slide ScoreCard a was made from" in html
    with pytest.raises(SlideIdentityError):
        from pathgls.inspect.failures import _item_image

        _item_image(card, 64, run_dir=out, sources=(src,))
