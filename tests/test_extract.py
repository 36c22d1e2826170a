"""End-to-end extraction with a tiny random CLIP of the real architecture (wiring, not quality)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.encoders import build_encoder
from pathgls.features.bags import partial_path, read_bag, validate_bag
from pathgls.features.extract import bag_path_for, extract_slide
from pathgls.tiling import make_grid, open_slide

ROOT = Path(__file__).resolve().parents[1]


def _cfg(tiny_clip: Path, *, windows: bool = True, **stream):
    """HighRes windows unless told (the tests of the windows path; one view has its own)."""
    return load_config(
        encoder={"name": f"hf:{tiny_clip}", "windows": windows}, stream={"batch_size": 4, **stream}
    )


def _bag_arrays(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as f:
        out = {k: f[k][:] for k in ("features", "coords", "window_features")}
        out["attrs"] = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
    return out


def test_extract_cmu_writes_a_valid_bag(tmp_path: Path, tiny_clip: Path, cmu_slide: Path) -> None:
    cfg = _cfg(tiny_clip)
    enc = build_encoder(cfg.encoder)
    seen: list[tuple[int, int]] = []
    r = extract_slide(
        slide=cmu_slide,
        out_dir=tmp_path,
        encoder=enc,
        config=cfg,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert r.status == "done", r.error
    assert r.bag_path == str(bag_path_for(tmp_path, "cmu-1-small-region", cfg.encoder.name))
    meta = validate_bag(r.bag_path)
    bag = read_bag(r.bag_path)
    grid = make_grid(open_slide(cmu_slide), cfg.tiling)
    assert np.array_equal(bag.coords, grid.coords)
    assert bag.window_features.shape == (len(grid), 9, enc.dim)
    # the patch feature is the mean of its (fp32) window embeddings; windows are stored in fp16
    np.testing.assert_allclose(
        bag.features, bag.window_features.astype(np.float32).mean(1), atol=2e-3
    )
    assert not np.allclose(bag.features[0], bag.features[1])
    assert meta.random_weights and meta.encoder == cfg.encoder.name
    assert (
        meta.patch_size == 512
        and meta.patch_size_level0 == 512
        and meta.level0_mpp == pytest.approx(0.499)
    )
    assert meta.slide_sha256 == "ed92d5a9f2e86df67640d6f92ce3e231419ce127131697fbbce42ad5e002c8a7"
    assert seen[-1] == (len(grid), len(grid))
    # a complete bag is skipped; --overwrite redoes it identically
    assert (
        extract_slide(slide=cmu_slide, out_dir=tmp_path, encoder=enc, config=cfg).status
        == "skipped"
    )
    cfg_over = load_config(
        encoder={"name": cfg.encoder.name, "windows": True},
        stream={"batch_size": 4},
        bag={"overwrite": True},
    )
    r2 = extract_slide(slide=cmu_slide, out_dir=tmp_path, encoder=enc, config=cfg_over)
    assert r2.status == "done"
    np.testing.assert_array_equal(read_bag(r2.bag_path).window_features, bag.window_features)
    # a bag made with other settings is never silently reused
    cfg_other = load_config(
        encoder={"name": cfg.encoder.name, "windows": True},
        stream={"batch_size": 4},
        tiling={"tissue_threshold": 0.5},
    )
    r3 = extract_slide(slide=cmu_slide, out_dir=tmp_path, encoder=enc, config=cfg_other)
    assert r3.status == "failed" and "other settings" in r3.error and "--overwrite" in r3.error


_KILL_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from pathgls.config import load_config
    from pathgls.encoders import build_encoder
    from pathgls.features.extract import extract_slide
    slide, out, model, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cfg = load_config(encoder={"name": "hf:" + model, "windows": True}, stream={"batch_size": 4})
    enc = build_encoder(cfg.encoder)
    def progress(done, total):
        if kill_at and done >= kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    r = extract_slide(slide=slide, out_dir=out, encoder=enc, config=cfg, progress=progress)
    print(r.status, r.warnings)
    """
)


def _run_script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "run_extract.py"
    script.write_text(_KILL_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=300
    )


def _reference_windows(enc, slide: Path, cfg, coords: np.ndarray) -> np.ndarray:
    """Each patch read on its own, each window encoded as an image: no ring, no fused path."""
    from pathgls.encoders import window_coords
    from pathgls.tiling.stream import read_patch

    reader = open_slide(slide)
    plan = make_grid(reader, cfg.tiling).plan
    out = []
    for x, y in coords:
        patch = read_patch(reader, (int(x), int(y)), plan)
        wins = [
            patch[wy : wy + 224, wx : wx + 224]
            for wx, wy in window_coords(plan.patch_size, 224, 224)
        ]
        out.append(enc.encode_images(np.stack(wins)).numpy())
    reader.close()
    return np.stack(out)


def _spy_stream(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    import pathgls.features.extract as extract_module

    calls: list[dict] = []
    real = extract_module.stream_patches

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(extract_module, "stream_patches", spy)
    return calls


def test_extraction_with_reused_buffers_matches_patch_by_patch_encoding(
    tmp_path: Path, tiny_clip: Path, cmu_slide: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the hot path (ring of read buffers, fused window normalisation) stores what reading and
    # encoding each window on its own gives, batch after batch
    cfg = _cfg(tiny_clip, workers=2, prefetch=1)
    enc = build_encoder(cfg.encoder)
    calls = _spy_stream(monkeypatch)
    r = extract_slide(slide=cmu_slide, out_dir=tmp_path, encoder=enc, config=cfg)
    assert r.status == "done", r.error
    assert calls and calls[0]["reuse_buffers"] is True and calls[0]["pin_memory"] is False
    bag = read_bag(r.bag_path)
    want = _reference_windows(enc, cmu_slide, cfg, bag.coords)
    assert len(bag.coords) > 3 * cfg.stream.batch_size  # several trips round the ring
    np.testing.assert_allclose(bag.window_features.astype(np.float32), want, atol=2e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_extraction_reads_into_pinned_memory_and_equals_cpu(
    tmp_path: Path, tiny_clip: Path, cmu_slide: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bags = {}
    calls = _spy_stream(monkeypatch)
    for device in ("cpu", "cuda"):
        cfg = load_config(
            encoder={"name": f"hf:{tiny_clip}", "device": device, "precision": "fp32"},
            stream={"batch_size": 4, "workers": 2},
        )
        r = extract_slide(
            slide=cmu_slide,
            out_dir=tmp_path / device,
            encoder=build_encoder(cfg.encoder),
            config=cfg,
        )
        assert r.status == "done", r.error
        bags[device] = read_bag(r.bag_path)
    assert [c["pin_memory"] for c in calls] == [False, True]
    assert np.array_equal(bags["cpu"].coords, bags["cuda"].coords)
    np.testing.assert_allclose(
        bags["cuda"].window_features.astype(np.float32),
        bags["cpu"].window_features.astype(np.float32),
        atol=2e-3,
    )


@pytest.fixture(scope="module")
def reference_bag(
    tmp_path_factory: pytest.TempPathFactory, tiny_clip: Path, cmu_slide: Path
) -> Path:
    """The sample slide's bag from one uninterrupted extraction in a fresh process."""
    work = tmp_path_factory.mktemp("reference-extraction")
    done = _run_script(work, str(cmu_slide), str(work / "ref"), str(tiny_clip), "0")
    assert done.returncode == 0 and done.stdout.startswith("done"), done.stderr
    return bag_path_for(work / "ref", "cmu-1-small-region", f"hf:{tiny_clip}")


@pytest.mark.slow
def test_killed_extraction_resumes_to_an_identical_bag(
    tmp_path: Path, tiny_clip: Path, cmu_slide: Path, reference_bag: Path
) -> None:
    kill_dir = tmp_path / "killed"
    killed = _run_script(tmp_path, str(cmu_slide), str(kill_dir), str(tiny_clip), "8")
    assert killed.returncode == -signal.SIGKILL
    bag = bag_path_for(kill_dir, "cmu-1-small-region", f"hf:{tiny_clip}")
    assert not bag.exists() and partial_path(bag).exists()
    resumed = _run_script(tmp_path, str(cmu_slide), str(kill_dir), str(tiny_clip), "0")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed at patch 8" in resumed.stdout
    a = _bag_arrays(reference_bag)
    b = _bag_arrays(bag)
    for k in ("features", "coords", "window_features"):
        np.testing.assert_array_equal(a[k], b[k])
    assert a["attrs"] == b["attrs"]


@pytest.mark.slow
def test_kill_at_an_arbitrary_moment(
    tmp_path: Path, tiny_clip: Path, cmu_slide: Path, reference_bag: Path
) -> None:
    """SIGKILL from outside at a random point: the rerun resumes or redoes, never trusts junk."""
    out = tmp_path / "ext"
    script = tmp_path / "run_extract.py"
    script.write_text(_KILL_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bag = bag_path_for(out, "cmu-1-small-region", f"hf:{tiny_clip}")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(cmu_slide), str(out), str(tiny_clip), "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while not partial_path(bag).exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(float(np.random.default_rng().uniform(0.0, 0.3)))
    proc.kill()
    proc.wait()
    rerun = _run_script(tmp_path, str(cmu_slide), str(out), str(tiny_clip), "0")
    assert rerun.returncode == 0 and rerun.stdout.split()[0] in ("done", "skipped"), rerun.stderr
    a = _bag_arrays(reference_bag)
    b = _bag_arrays(bag)
    for k in ("features", "coords", "window_features"):
        np.testing.assert_array_equal(a[k], b[k])


def test_cli_folder_with_bad_slides(tmp_path: Path, tiny_clip: Path, slides_dir: Path) -> None:
    folder = tmp_path / "slides"
    folder.mkdir()
    for name in (
        "cmu-1-small-region.svs",
        "broken.svs",
        "openslide-unopenable.tiff",
        "openslide-unreadable.svs",
        "kidney-48-5.tif",
        "tcga-cr-7395-01a-01-ts1.svs",
    ):
        (folder / name).symlink_to(slides_dir / name)
    (folder / "zero.svs").write_bytes(b"")
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            "extract",
            str(folder),
            "--out",
            str(out),
            "--encoder",
            f"hf:{tiny_clip}",
            "--batch-size",
            "4",
        ],
    )
    assert res.exit_code == 1, res.output
    text = res.output
    assert "slides: 2 done, 0 skipped, 5 failed" in text
    assert "broken.svs: " in text and "not a slide format" in text
    assert "openslide-unreadable.svs: " in text and "reading pixels failed" in text
    assert "openslide-unopenable.tiff" in text and "zero.svs" in text and "empty" in text
    assert "tcga-cr-7395-01a-01-ts1.svs" in text and "--mpp" in text
    assert "kidney-48-5.tif" in text and "read as a plain image" in text
    bags = out / "features_hf-tiny-clip"
    assert validate_bag(bags / "cmu-1-small-region.h5").complete
    assert (out / "extract-config.toml").exists()
    logs = list((out / "logs").glob("extract-*.log"))
    assert logs and "broken.svs" in logs[0].read_text()
    # the slide without metadata works once its resolution is given
    res = CliRunner().invoke(
        app,
        [
            "extract",
            str(folder / "tcga-cr-7395-01a-01-ts1.svs"),
            "--out",
            str(out),
            "--encoder",
            f"hf:{tiny_clip}",
            "--mpp",
            "0.25",
            "--batch-size",
            "4",
        ],
    )
    assert res.exit_code == 0, res.output
    meta = validate_bag(bags / "tcga-cr-7395-01a-01-ts1.h5")
    assert meta.mpp_source == "user" and meta.patch_size_level0 == 1024
    assert meta.patch_level == 1  # its second level is 0.5 µm/px: read there, no resize


def test_cli_errors_before_any_work(tmp_path: Path, cmu_slide: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(app, ["extract", str(empty), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no slides found" in res.output
    res = CliRunner().invoke(app, ["extract", "--sample", "cmu-small-region", str(empty)])
    assert res.exit_code != 0
    res = CliRunner().invoke(
        app,
        [
            "extract",
            str(cmu_slide),
            "--out",
            str(tmp_path / "o"),
            "--encoder",
            "plip",
            "--models-dir",
            str(tmp_path / "no-models"),
        ],
    )
    assert res.exit_code == 2 and "pathgls models pull plip" in res.output
    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip()
