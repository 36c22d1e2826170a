"""Rewrites that lose the previous result (issue 36).

A full disk while ``gate`` rewrote a complete ``gate.csv``, or a kill during the rewrite,
replaced the earlier complete file by a truncated or empty one. Every file pathgls rewrites is
now written beside and renamed (:mod:`pathgls.io.atomic`), so a failed rewrite keeps the
previous complete file.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.errors import PathGLSError
from pathgls.io.atomic import write_csv_atomic, write_text_atomic
from pathgls.io.outputs import write_run_csv
from pathgls.runner.run import run_benchmark

COLUMNS = ("item_id", "trust")


def _rows(n: int) -> list[dict[str, object]]:
    return [{"item_id": f"item-{i:06d}", "trust": i / n} for i in range(n)]


def _disk_full(*_: object, **__: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_keeps_the_previous_complete_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "gate.csv"
    write_run_csv(path, columns=COLUMNS, rows=_rows(500))
    before = path.read_bytes()
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(PathGLSError, match="no space left"):
        write_run_csv(path, columns=COLUMNS, rows=_rows(1000))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["gate.csv"]  # no temporary left behind


def test_a_writer_failing_midway_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    write_csv_atomic(path, columns=COLUMNS, rows=_rows(10))
    before = path.read_bytes()

    def rows() -> object:
        yield from _rows(5)
        raise RuntimeError("the process dies here")

    with pytest.raises(RuntimeError):
        write_csv_atomic(path, columns=COLUMNS, rows=rows())
    assert path.read_bytes() == before


def _rewrite_forever(path: str) -> None:
    text = path + "\n" + "x" * 2_000_000
    while True:
        write_text_atomic(path, text)


def test_a_kill_during_rewrites_leaves_a_complete_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.txt"
    complete = str(path) + "\n" + "x" * 2_000_000
    write_text_atomic(path, complete)
    ctx = multiprocessing.get_context("fork")
    for delay in (0.05, 0.2, 0.5):
        child = ctx.Process(target=_rewrite_forever, args=(str(path),))
        child.start()
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert path.read_text() == complete


def test_gate_on_a_full_disk_keeps_the_previous_gate_csv(
    tmp_path: Path, sample_rois: tuple[Path, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "roi.png").symlink_to(sample_rois[0].resolve())
    out = tmp_path / "run"
    run_benchmark(source=src, config=load_config(run={"subjects": ("captioner",)}), out=out,
                  plots=False)  # fmt: skip
    CliRunner().invoke(app, ["gate", str(out)])
    before = (out / "gate.csv").read_bytes()
    assert b"roi" in before
    monkeypatch.setattr(os, "fsync", _disk_full)
    result = CliRunner().invoke(app, ["gate", str(out), "--deploy", "0.9"])
    assert result.exit_code == 2
    assert "no space left" in result.output
    assert (out / "gate.csv").read_bytes() == before
