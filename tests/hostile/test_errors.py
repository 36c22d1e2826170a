"""Hostile conditions that used to end in a traceback (issue 25): each is now a PathGLSError
naming the file and the setting, and one bad input never ends the run.

Disk full, a read-only output, pickled weights, a UTF-16 config, a numeric revision in
``PATHGLS_SOURCE.json``, a 2^60-byte tile, a damaged tile (refused, naming it), a Ray cluster
that dies under the driver.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import TilingConfig, load_config
from pathgls.errors import (
    ConfigError,
    EncoderError,
    ModelNotFoundError,
    PathGLSError,
    SlideOpenError,
)
from pathgls.runner.run import run_benchmark
from pathgls.testing.hostile import damage_jpeg_tile, set_tile_byte_count

CAPTIONER = load_config(run={"subjects": ("captioner",)})
SUBJ = "captioner"


@pytest.fixture
def src(tmp_path: Path, sample_rois: tuple[Path, ...]) -> Path:
    folder = tmp_path / "src"
    folder.mkdir()
    for roi in sample_rois[:2]:
        (folder / roi.name).symlink_to(roi.resolve())
    return folder


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs (root only; skipped where mounting is not allowed)."""
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> None:
    with (folder / "filler").open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 16))
                fh.flush()
        except OSError:
            pass


def test_a_full_disk_ends_the_run_with_the_file_and_the_reason(src: Path, small_fs: Path) -> None:
    out = small_fs / "run"
    out.mkdir()
    _fill(small_fs)
    with pytest.raises(PathGLSError, match=r"cannot (write|lock) .*no space left on the device"):
        run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    res = CliRunner().invoke(
        app, ["benchmark", str(src), "--out", str(out), "--subject", "captioner"]
    )
    assert res.exit_code == 2 and "no space left on the device" in res.output, res.output
    (small_fs / "filler").unlink()  # room again: the rerun completes
    result = run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    assert result.counts["ok"] == 2


def test_a_read_only_output_is_named(src: Path, small_fs: Path) -> None:
    out = small_fs / "run"
    out.mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    res = CliRunner().invoke(
        app, ["benchmark", str(src), "--out", str(out), "--subject", "captioner"]
    )
    assert res.exit_code == 2 and "file system is read-only" in res.output, res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_a_failed_card_write_names_the_card_and_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    import pathgls.io.atomic as atomic
    from pathgls.runner.store import ResultsStore
    from pathgls.types import ScoreCard

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(atomic.os, "replace", refuse)
    store = ResultsStore(tmp_path / "run")
    card = ScoreCard(item_id="a", subject="captioner", status="ok")
    words = {errno.ENOSPC: "disk is full", errno.EROFS: "read-only", errno.EDQUOT: "quota"}[code]
    with pytest.raises(PathGLSError, match=rf"cannot write ScoreCard .*a\.json: .*{words}"):
        store.write_card(card)


# -- models, configs ----------------------------------------------------------------------------


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.marker}",))


def test_pickled_weights_are_refused_with_one_message_and_never_run(
    tmp_path: Path, tiny_clip: Path
) -> None:
    import torch

    from pathgls.config import EncoderConfig
    from pathgls.encoders import build_encoder

    model = tmp_path / "clip"
    shutil.copytree(tiny_clip, model)
    for weights in model.glob("*.safetensors"):
        weights.unlink()
    marker = tmp_path / "PWNED"
    torch.save({"vision_model.embeddings.patch_embedding.weight": _Evil(marker)},
               model / "pytorch_model.bin")  # fmt: skip
    with pytest.raises(EncoderError) as info:
        build_encoder(EncoderConfig(name=f"hf:{model}"))
    message = str(info.value)
    assert (
        "this checkpoint is a pickle; pathgls loads only safetensors or weights_only "
        "checkpoints" in message
    )
    assert str(model) in message and "weights_only=False" not in message
    assert not marker.exists()


def test_a_utf16_config_is_read_and_other_encodings_are_named(tmp_path: Path, src: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[run]\nsubjects = ["captioner"]\n', encoding="utf-16")  # with a BOM
    assert load_config(config).run.subjects == ("captioner",)
    config.write_bytes('[run]\nsubjects = ["captioner"]\n'.encode("utf-16-le"))  # without
    with pytest.raises(ConfigError, match="UTF-16 without a byte-order mark"):
        load_config(config)
    res = CliRunner().invoke(app, ["benchmark", str(src), "--out", str(tmp_path / "r"),
                                   "--config", str(config)])  # fmt: skip
    assert res.exit_code == 2 and "save it as UTF-8" in res.output, res.output
    config.write_bytes(b'[run]\nattack = "\xff\xfe"\n')
    with pytest.raises(ConfigError, match=r"not UTF-8 text: byte 16"):
        load_config(config)


@pytest.mark.parametrize("revision", [1234, 1.5, ["abc"], {"sha": "abc"}, True])
def test_a_revision_that_is_not_text_is_named(tmp_path: Path, revision: object) -> None:
    from pathgls.hub.store import location_source, resolve_model

    copy = tmp_path / "org--model"
    copy.mkdir()
    (copy / "PATHGLS_SOURCE.json").write_text(
        json.dumps({"repo_id": "org/model", "revision": revision})
    )
    assert location_source(copy) == (None, None)  # unknown provenance, with a warning
    with pytest.raises(
        ModelNotFoundError, match=r"PATHGLS_SOURCE\.json cannot be used: 'revision' must be text"
    ):
        resolve_model("org/model", name="m", models_dir=tmp_path, revision="abcdef1")


# -- tiles that lie ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pyramid(tmp_path_factory: pytest.TempPathFactory, sample_slide: Path) -> Path:
    """A one-level 40× BigTIFF of real pixels (1024², 16 JPEG tiles): patches at 20× are read
    scaled from its JPEG tiles by pathgls's own decoder, or through OpenSlide."""
    import openslide

    from pathgls.testing.synthetic import write_aperio_pyramid

    with openslide.OpenSlide(str(sample_slide)) as s:
        rgb = np.asarray(s.read_region((512, 1024), 0, (1024, 1024)).convert("RGB"))
    return write_aperio_pyramid(
        tmp_path_factory.mktemp("pyr") / "s.svs", source=rgb, width=1024, height=1024,
        mpp=0.25, magnification=40, levels_down=0, thumbnail=False, bigtiff=True,
    )  # fmt: skip


def _patches(path: Path, *, scaled: bool) -> list[str]:
    """What reading each of four 20× patches gives (a fresh reader each: OpenSlide answers every
    call after a failed one with that failure): ok, or the error's type and message."""
    from pathgls.tiling.resolution import plan_read
    from pathgls.tiling.slides import open_slide
    from pathgls.tiling.stream import read_patch

    outcomes = []
    for xy in [(0, 0), (512, 0), (0, 512), (512, 512)]:
        reader = open_slide(path, probe=False)
        try:
            plan = plan_read(reader, TilingConfig(patch_size=256, scaled_decode=scaled))
            assert plan.scaled_decode == scaled and plan.reduction == 2
            read_patch(reader, xy, plan)
            outcomes.append("ok")
        except Exception as e:
            outcomes.append(f"{type(e).__name__}: {e}".split(" at (")[0])
        finally:
            reader.close()
    return outcomes


def test_a_tile_byte_count_of_2_to_the_60_is_refused_on_open(tmp_path: Path, pyramid: Path) -> None:
    from pathgls.tiling.slides import open_slide

    path = tmp_path / "count.svs"
    shutil.copy(pyramid, path)
    set_tile_byte_count(path, count=2**60, tile=5)
    # before: "MemoryError:" with no message from the own decoder, and OpenSlide asked for that
    # tile aborts the process (GLib cannot allocate 2^60 bytes)
    with pytest.raises(SlideOpenError, match=r"block 5 is 1152921504606846976 bytes .* beyond"):
        open_slide(path)


@pytest.mark.parametrize(
    ("how", "tile", "seed"),
    [("truncate", 5, 0), ("garbage", 5, 0), ("garbage", 5, 3), ("garbage", 0, 1)],
)
def test_a_damaged_tile_is_refused_naming_it_never_handed_to_openslide(
    tmp_path: Path, pyramid: Path, how: str, tile: int, seed: int
) -> None:
    path = tmp_path / f"{how}-{tile}-{seed}.svs"
    shutil.copy(pyramid, path)
    damage_jpeg_tile(path, tile=tile, how=how, seed=seed)  # inside the first patch
    # tile 0 is also the tile the level's probe decodes first: the next one is probed instead
    own = _patches(path, scaled=True)
    where = f"JPEG tile {tile} (column {tile % 4}, row {tile // 4}) of level 0 is damaged"
    assert own[0].startswith(f"DamagedTileError: {path}: {where}"), own
    assert own[1:] == ["ok", "ok", "ok"], own  # the other patches do not touch that tile
    if (how, tile, seed) == ("garbage", 5, 0):
        # before: refused by pathgls's decoder, handed to OpenSlide, which decodes the garbage
        # (what tiling.scaled_decode = false still does: OpenSlide alone decides)
        assert _patches(path, scaled=False) == ["ok"] * 4


def test_a_damaged_tile_fails_the_extraction_of_its_slide(tmp_path: Path, pyramid: Path) -> None:
    from pathgls.testing import save_random_hf_clip

    slides = tmp_path / "slides"
    slides.mkdir()
    path = slides / "s.svs"
    shutil.copy(pyramid, path)
    damage_jpeg_tile(path, tile=5, how="garbage")
    model = save_random_hf_clip(tmp_path / "clip", size="tiny", seed=0)
    out = tmp_path / "out"
    done = CliRunner().invoke(
        app, ["extract", str(slides), "--out", str(out), "--encoder", f"hf:{model}"]
    )
    text = " ".join(done.output.split())
    assert done.exit_code == 1, text  # before: exit 0 and a bag of the garbage's pixels
    assert "JPEG tile 5 (column 1, row 1) of level 0 is damaged" in text
    assert [p.parent.name for p in out.rglob("*.h5")] == ["patches"]  # coordinates, no bag
    (log,) = (out / "logs").glob("extract-*.log")
    assert "JPEG tile 5 (column 1, row 1) of level 0 is damaged" in log.read_text()


# -- a Ray cluster that dies under the driver ----------------------------------------------------


#: The run of the test below, in a process of its own: a Ray driver whose head died is ended by
#: Ray itself a minute later (it cannot reach the head), which must not be the test session.
_RAY_RUN = """
import os, signal, sys, threading, time
from pathlib import Path
from pathgls.config import load_config
from pathgls.errors import ClusterError
from pathgls.runner.run import run_benchmark

folder, out = Path(sys.argv[1]), Path(sys.argv[2])
config = load_config(
    run={"subjects": ("captioner",), "executor": "ray", "workers": 1, "ray_health_s": 5}
)

def ppid(pid):
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None

def kill_this_runs_cluster():  # only the processes of this run's own Ray
    import ray

    while (node := ray._private.worker._global_node) is None:
        time.sleep(0.05)
    while not any((out / "scorecards").rglob("*.json")):
        time.sleep(0.05)
    raylet = node.all_processes["raylet"][0].process.pid
    gcs = node.all_processes["gcs_server"][0].process.pid
    workers = [int(p) for p in os.listdir("/proc") if p.isdigit() and ppid(int(p)) == raylet]
    for pid in [raylet, gcs, *workers]:
        os.kill(pid, signal.SIGKILL)

threading.Thread(target=kill_this_runs_cluster, daemon=True).start()
try:
    run_benchmark(source=folder, config=config, out=out, plots=False)
except ClusterError as e:
    print("ClusterError:", e, flush=True)
    os._exit(3)
os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_run_whose_ray_head_dies_ends_with_a_failed_manifest(
    tmp_path: Path, sample_rois: tuple[Path, ...]
) -> None:
    import sys

    pytest.importorskip("ray")
    from pathgls.runner.manifest import read_manifest

    folder = tmp_path / "src"
    folder.mkdir()
    for i in range(6):
        (folder / f"roi{i}.png").symlink_to(sample_rois[i % len(sample_rois)].resolve())
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-c", _RAY_RUN, str(folder), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    # before: the driver waited for ever (then Ray ended it, manifest still "running")
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    assert "run.ray_health_s = 5" in done.stdout
    manifest = read_manifest(out)
    assert manifest is not None
    assert manifest.status == "failed" and "ClusterError" in (manifest.reason or "")
    assert 1 <= len(list((out / "scorecards").rglob("*.json"))) < 6  # the done ones are kept
