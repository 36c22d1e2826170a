"""Hostile run directories (issue 25): pathgls never writes through a link, never into its input,
and the run report opens only the run's own files.

A symbolic link planted where a run writes its own files (lock, errors log, logs, cards, caches,
bags, configs) made pathgls truncate or append to the link's target; each is now refused with a
``RunDirError`` naming it, and the target is left as it was.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.errors import PathGLSError, RunDirError
from pathgls.io.lock import acquire
from pathgls.runner.run import run_benchmark
from pathgls.runner.store import ResultsStore
from pathgls.testing.hostile import remove_deep_tree

CAPTIONER = load_config(run={"subjects": ("captioner",)})


@pytest.fixture
def src(tmp_path: Path, sample_rois: tuple[Path, ...]) -> Path:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "roi.png").symlink_to(sample_rois[0].resolve())  # inputs may be links
    return folder


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file and a folder outside the run that links point at; they must stay untouched."""
    (tmp_path / "victim-dir").mkdir()
    path = tmp_path / "victim.txt"
    path.write_text("keep me\n")
    return path


def _untouched(victim: Path) -> bool:
    return victim.read_text() == "keep me\n" and not any((victim.parent / "victim-dir").iterdir())


@pytest.mark.parametrize(
    ("entry", "is_dir"),
    [
        (".pathgls.lock", False),
        ("errors.jsonl", False),
        ("manifest.json", False),
        ("config.toml", False),
        ("config.json", False),
        ("summary.csv", False),
        ("logs", True),
        ("scorecards", True),
        ("cache", True),
        ("grounding", True),
        ("plots", True),
        ("features_plip", True),
        ("scorecards/captioner", True),
        ("scorecards/captioner/roi.json", False),
        ("cache/subjects", True),
    ],
)
def test_a_link_where_the_run_writes_is_refused_and_its_target_untouched(
    tmp_path: Path, src: Path, victim: Path, entry: str, is_dir: bool
) -> None:
    out = tmp_path / "run"
    link = out / entry
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim.parent / "victim-dir" if is_dir else victim)
    with pytest.raises(RunDirError, match=rf"{link} -> .*victim.*pathgls never writes"):
        run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    assert _untouched(victim)


def test_the_cli_refuses_a_linked_log_folder_with_exit_2(
    tmp_path: Path, src: Path, victim: Path
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "logs").symlink_to(victim.parent / "victim-dir")
    res = CliRunner().invoke(
        app, ["benchmark", str(src), "--out", str(out), "--subject", "captioner"]
    )
    assert res.exit_code == 2 and "never writes through a link" in res.output, res.output
    assert _untouched(victim)


def test_lock_and_errors_log_are_opened_without_following_a_link(
    tmp_path: Path, victim: Path
) -> None:
    # links planted after the run's check: O_NOFOLLOW refuses them at the open itself
    (tmp_path / "lock").symlink_to(victim)
    with pytest.raises(RunDirError, match="is a symbolic link"):
        acquire(tmp_path / "lock", what="test")
    store = ResultsStore(tmp_path / "run")
    store.root.mkdir()
    store.errors_path.symlink_to(victim)
    with pytest.raises(RunDirError, match="is a symbolic link"):
        store.log_error(item_id="a", subject="s", status="failed", errors=["x"])
    assert _untouched(victim)


@pytest.mark.parametrize("where", ["file", "inside-input", "the-input", "nested-input"])
def test_an_output_that_is_a_file_or_inside_the_input_is_refused(
    tmp_path: Path, src: Path, where: str
) -> None:
    out = {
        "file": tmp_path / "a-file",
        "inside-input": src / "run",
        "the-input": src,
        "nested-input": src / "deeper" / "run",
    }[where]
    if where == "file":
        out.write_text("not a folder")
    words = "is a file" if where == "file" else "is inside the input folder"
    with pytest.raises(RunDirError, match=words):
        run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    res = CliRunner().invoke(
        app, ["benchmark", str(src), "--out", str(out), "--subject", "captioner"]
    )
    assert res.exit_code == 2 and words in res.output, res.output
    assert not (src / "run").exists() and not (src / "deeper").exists()


def test_evaluate_and_extract_refuse_an_output_that_is_a_file(
    tmp_path: Path, sample_rois: tuple[Path, ...]
) -> None:
    out = tmp_path / "a-file"
    out.write_text("x")
    for args in (
        ["evaluate", str(sample_rois[0]), "--subject", "captioner", "--out", str(out)],
        ["extract", str(sample_rois[0]), "--out", str(out)],
    ):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2 and "is a file, not a folder" in res.output, res.output
    assert out.read_text() == "x"


def test_hidden_slide_files_are_named_when_skipped(
    tmp_path: Path, sample_rois: tuple[Path, ...], caplog: pytest.LogCaptureFixture
) -> None:
    from pathgls.tiling.slides import find_slides

    for name in ("a.png", "..png", "...png", ".x.svs", "._a.png", ".notes.txt"):
        (tmp_path / name).symlink_to(sample_rois[0].resolve())
    with caplog.at_level(logging.WARNING, logger="pathgls.tiling.slides"):
        assert find_slides(tmp_path) == [tmp_path / "a.png"]
    (message,) = [r.getMessage() for r in caplog.records]
    assert "skipped 4 hidden file(s)" in message
    for name in ("..png", "...png", ".x.svs", "._a.png"):
        assert name in message
    assert ".notes.txt" not in message


# -- the run report embeds only the run's own files ------------------------------------------


def test_the_report_never_opens_a_file_a_card_merely_names(
    tmp_path: Path, src: Path, sample_rois: tuple[Path, ...]
) -> None:
    from pathgls.inspect.paths import item_path, map_path
    from pathgls.inspect.run_report import write_run_report

    out = tmp_path / "run"
    run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    outside = tmp_path / "private" / "secret.png"  # a real image, outside source and run
    outside.parent.mkdir()
    outside.write_bytes(sample_rois[1].read_bytes())
    (card_path,) = (out / "scorecards").rglob("*.json")
    card = json.loads(card_path.read_text())
    card["inputs"]["item"] = str(outside)
    card_path.write_text(json.dumps(card))
    page = write_run_report(run_dir=out, out=tmp_path / "report.html").read_text()
    assert "lies outside the run directory" in page
    assert "secret.png" in page  # named in the refusal, never read
    with pytest.raises(PathGLSError, match="not a slide or image"):
        item_path("/etc/passwd", run_dir=out)
    with pytest.raises(PathGLSError, match="outside the run"):
        item_path(str(src / ".." / "private" / "secret.png"), run_dir=out, sources=[src])
    # an input the user names is theirs: its links (to the shared data) are followed
    assert item_path(str(src / "roi.png"), run_dir=out, sources=[src]) == src / "roi.png"
    with pytest.raises(PathGLSError, match="outside the run directory"):
        item_path(str(src / "roi.png"), run_dir=out)  # not named on this command line
    for bad in ("../../private/x.npz", "/etc/x.npz", "grounding/../../x.npz", "grounding/a.json"):
        with pytest.raises(PathGLSError, match=r"not a \.npz inside the run"):
            map_path(bad, run_dir=out)
    (out / "grounding").mkdir()
    (out / "grounding" / "link.npz").symlink_to(tmp_path / "private" / "x.npz")
    with pytest.raises(PathGLSError, match=r"not a \.npz inside the run"):
        map_path("grounding/link.npz", run_dir=out)  # a link out of the run is not followed
    assert map_path("grounding/s/a.npz", run_dir=out) == Path(
        os.path.realpath(out / "grounding" / "s" / "a.npz")
    )


# -- a received run folder is untrusted input (issue 36) ---------------------------------------


def _received_run(tmp_path: Path, src: Path) -> tuple[Path, Path, Path]:
    """A run whose card was edited to name a private image; the private image's path."""
    out = tmp_path / "run"
    run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    private = tmp_path / "private" / "secret.png"
    private.parent.mkdir()
    from PIL import Image

    Image.new("RGB", (64, 64), (13, 200, 77)).save(private)
    (card_path,) = (out / "scorecards").rglob("*.json")
    return out, card_path, private


def _edit_card(card_path: Path, **inputs: str) -> None:
    card = json.loads(card_path.read_text())
    card["inputs"].update(inputs)
    card_path.write_text(json.dumps(card))


def test_a_manifest_source_of_root_opens_nothing_outside_the_run(tmp_path: Path, src: Path) -> None:
    from pathgls.inspect.run_report import write_run_report

    out, card_path, private = _received_run(tmp_path, src)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["source"] = "/"
    (out / "manifest.json").write_text(json.dumps(manifest))
    _edit_card(card_path, item=str(private))
    page = write_run_report(run_dir=out, out=tmp_path / "report.html").read_text()
    assert "Grounding of" not in page  # no picture of the private file
    assert "lies outside the run directory" in page


def test_a_link_inside_the_run_to_a_private_file_is_not_followed(tmp_path: Path, src: Path) -> None:
    from pathgls.inspect.paths import item_path
    from pathgls.inspect.run_report import RunReportConfig, write_run_report

    out, card_path, private = _received_run(tmp_path, src)
    inside = out / "inputs" / "roi.png"
    inside.parent.mkdir()
    inside.symlink_to(private)
    _edit_card(card_path, item=str(inside))
    with pytest.raises(PathGLSError, match="links resolved"):
        item_path(str(inside), run_dir=out)
    # naming the run's own folder as a source does not make its links trusted
    with pytest.raises(PathGLSError, match="links resolved"):
        item_path(str(inside), run_dir=out, sources=[out / "inputs"])
    config = RunReportConfig(sources=(out / "inputs",))
    page = write_run_report(run_dir=out, out=tmp_path / "r.html", config=config).read_text()
    assert "Grounding of" not in page


def test_report_source_option_shows_the_named_inputs_only(tmp_path: Path, src: Path) -> None:
    out, _, _ = _received_run(tmp_path, src)
    hidden = CliRunner().invoke(app, ["report", str(out), "--out", str(tmp_path / "a.html")])
    assert hidden.exit_code == 0, hidden.output
    shown = CliRunner().invoke(
        app, ["report", str(out), "--out", str(tmp_path / "b.html"), "--source", str(src)]
    )
    assert shown.exit_code == 0, shown.output
    assert "Grounding of" not in (tmp_path / "a.html").read_text()
    assert "Grounding of" in (tmp_path / "b.html").read_text()


def test_cards_and_config_linked_out_of_the_run_are_not_read(tmp_path: Path, src: Path) -> None:
    out, card_path, _ = _received_run(tmp_path, src)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = elsewhere / card_path.name
    moved.write_bytes(card_path.read_bytes())
    card_path.unlink()
    card_path.symlink_to(moved)  # a card of the run that is a link to a file outside it
    [(_path, card, error)] = list(ResultsStore(out).iter_cards())
    assert card is None and "link out of the run" in error
    result = CliRunner().invoke(app, ["gate", str(out)])
    assert "lies outside the run" in result.output
    (out / "manifest.json").rename(tmp_path / "manifest.json")
    (out / "manifest.json").symlink_to(tmp_path / "manifest.json")
    from pathgls.runner.manifest import read_manifest

    assert read_manifest(out) is None


def test_gate_never_writes_gate_csv_through_a_link(tmp_path: Path, src: Path, victim: Path) -> None:
    out = tmp_path / "run"
    run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    (out / "gate.csv").symlink_to(victim)
    result = CliRunner().invoke(app, ["gate", str(out)])
    assert result.exit_code == 2
    assert "symbolic link" in result.output
    assert _untouched(victim)
    assert (out / "gate.csv").is_symlink()


def test_a_card_edited_to_a_module_value_of_7_5_is_refused_and_rerun(
    tmp_path: Path, src: Path
) -> None:
    out = tmp_path / "run"
    run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    (card_path,) = (out / "scorecards").rglob("*.json")
    card = json.loads(card_path.read_text())
    card["modules"]["stability"]["value"] = 7.5
    card_path.write_text(json.dumps(card))
    gated = CliRunner().invoke(app, ["gate", str(out)])
    assert "outside [0, 1]" in gated.output
    assert "1.000" not in gated.output  # never fused into a trust
    # the rerun evaluates the item again instead of keeping the edited card
    run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    stored = json.loads(card_path.read_text())
    assert 0.0 <= stored["modules"]["stability"]["value"] <= 1.0


def test_a_cache_that_is_a_file_is_refused_before_any_item(tmp_path: Path, src: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "cache").write_text("x")
    with pytest.raises(RunDirError, match="cache is a file where pathgls keeps a folder"):
        run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)


def test_an_input_nested_2100_folders_deep_is_walked_without_recursion(
    tmp_path: Path, sample_rois: tuple[Path, ...]
) -> None:
    from pathgls.tiling.slides import find_slides

    root = tmp_path / "deep"
    root.mkdir()
    (root / "top.png").symlink_to(sample_rois[0].resolve())
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(2100):  # deeper than a path may be written: built folder by folder
            os.mkdir("a", dir_fd=fd)
            nxt = os.open("a", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        os.symlink(sample_rois[1].resolve(), "roi.png", dir_fd=fd)
    finally:
        os.close(fd)
    shallow = root / "a" / "a" / "b.png"
    shallow.symlink_to(sample_rois[2].resolve())
    try:
        found = find_slides(root)  # no RecursionError; the unreachable depth is skipped, named
    finally:
        remove_deep_tree(root / "a")  # rmtree itself recurses too deep for it
    assert shallow in found and root / "top.png" in found


def test_an_edited_replay_file_is_evaluated_again_on_resume(tmp_path: Path, src: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from replay_inputs import ATTACKED, contradicting_records, write_replay

    replay = write_replay(tmp_path / "replay.jsonl", contradicting_records("roi", "attack"))
    config = load_config(run={"subjects": (f"replay:{replay}",)})
    out = tmp_path / "run"
    run_benchmark(source=src, config=config, out=out, plots=False)
    (card_path,) = (out / "scorecards").rglob("*.json")
    first = json.loads(card_path.read_text())
    edited = [dict(r, report=ATTACKED) for r in contradicting_records("roi", "attack")]
    write_replay(replay, edited)
    run_benchmark(source=src, config=config, out=out, plots=False)
    second = json.loads(card_path.read_text())
    assert second["inputs"]["subject_revision"] != first["inputs"]["subject_revision"]
    assert second["reports"]["original"]["text"] == ATTACKED
