"""Reruns cost nothing: a finished benchmark over a folder of slides, run again (issue #26).

The folder (built once into ``--workdir``; the large pyramid is the one
``benchmarks/bench_extract_io.py`` builds, so one workdir serves both):

* ``cmu-1-small-region.svs`` — the real CMU-1 H&E region, 20×, 2220 × 2967 (shared data);
* ``cmu-40x-no20x-20480.svs`` — a 20480 × 20480 40× Aperio pyramid without a 20× level
  (``pathgls.testing.synthetic.write_mosaic_40x(level_factor=4)``: 20× patches are 2×
  reductions of level 0, decoded at half scale);
* ``cmu-40x-8192.svs`` — an 8192 × 8192 40× pyramid with a native 20× level (``level_factor=2``);
* ``cmu-flat.tif`` — the CMU region's real pixels as a flat (stripped, deflate) TIFF with its
  0.499 µm/px in the resolution tags: OpenSlide cannot open it, pathgls reads it as a plain
  image (one level, no pyramid) with that mpp.

The command, each time in a fresh process (``python -m pathgls benchmark``)::

    benchmark SLIDES --out RUN --encoder hf:<tiny random CLIP> --subject captioner
        --subject captioner-obedient --view montage

1. **first run**: tiles, hashes and encodes every slide, asks both subjects, scores; timed from
   process start to exit;
2. **rerun**: the same command on the finished run, timed the same way (median of
   ``--repeats``), and once more in an instrumented process that counts slide opens, pixel reads
   (every ``read_region`` / scaled read of any reader), whole-file hashes and model loads.
   Targets: rerun ≤ 5% of the first run; 0 opens, 0 pixel reads, 0 models loaded;
3. **second encoder**: ``extract_slides`` with another tiny CLIP into the same RUN (a second
   bag per slide next to the first). Its tiling — the slide's identity and its read plan and
   tissue grid, from the patches file the first run saved — against the first run's (full hash,
   tissue mask and grid, from its ScoreCards' timings). Target: ≤ 10% of the first.

The montage a subject is shown is the bag's own patch pixels (exact equality, both the native
20× and the 2×-reduced 40× path): ``tests/test_slide_session.py::
test_montage_patches_are_the_bags_patch_pixels``.

The tiny CLIP has RANDOM weights (written at run time): timings only, no score is a result.
The machine is shared: the load average is printed, and each figure is a ratio within one run.

Usage: python benchmarks/bench_rerun.py [--workdir DIR] [--repeats 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "slides"
CMU = SHARED / "cmu-1-small-region.svs"
BIG = 20480
MID = 8192
SUBJECTS = ("captioner", "captioner-obedient")
RERUN_TARGET = 0.05
TILING_TARGET = 0.10


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def build_slides(workdir: Path) -> Path:
    """The slide folder (pyramids written once into ``workdir``, shared files linked)."""
    import numpy as np
    import openslide

    from pathgls.testing.synthetic import write_mosaic_40x

    big = workdir / f"cmu-40x-no20x-{BIG}.svs"
    mid = workdir / f"cmu-40x-{MID}.svs"
    flat = workdir / "cmu-flat.tif"
    if not big.exists() or not mid.exists() or not flat.exists():
        from PIL import Image

        with openslide.OpenSlide(str(CMU)) as s:
            rgb = np.asarray(s.read_region((0, 0), 0, s.dimensions).convert("RGB"))
            mpp = float(s.properties[openslide.PROPERTY_NAME_MPP_X])
        if not flat.exists():  # resolution in pixels per centimetre
            res = 1e4 / mpp
            Image.fromarray(rgb).save(
                flat,
                compression="tiff_deflate",
                resolution_unit=3,
                x_resolution=res,
                y_resolution=res,
            )
        if not big.exists():
            t = time.perf_counter()
            write_mosaic_40x(big, rgb=rgb, size=BIG, level_factor=4)
            print(f"built {big.name} in {time.perf_counter() - t:.0f} s")
        if not mid.exists():
            write_mosaic_40x(mid, rgb=rgb, size=MID, level_factor=2)
    slides = workdir / "slides"
    shutil.rmtree(slides, ignore_errors=True)
    slides.mkdir()
    for f in (CMU, big, mid, flat):
        (slides / f.name).symlink_to(f.resolve())
    return slides


def command(slides: Path, run: Path, clip: Path) -> list[str]:
    args = ["benchmark", str(slides), "--out", str(run), "--encoder", f"hf:{clip}"]
    for s in SUBJECTS:
        args += ["--subject", s]
    return [*args, "--view", "montage"]


def timed_process(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd[:4])} … failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    return seconds, proc


def child_rerun(argv: list[str]) -> None:
    """Hidden mode: the CLI command in this process, counting what it opens, reads, hashes and
    loads (benchmark instrumentation); prints the counts as JSON."""
    import pathgls.features.session as session_module
    import pathgls.runner.models as models_module
    import pathgls.tiling.identity as identity_module
    from pathgls.cli import main
    from pathgls.tiling.readers import ImageReader, OpenSlideReader

    counts = {"opens": 0, "pixel_reads": 0, "full_hashes": 0, "models_loaded": 0}

    def count(owner: Any, name: str, key: str) -> None:
        real = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[key] += 1
            return real(*args, **kwargs)

        setattr(owner, name, wrapper)

    count(session_module, "open_slide", "opens")
    count(identity_module, "full_sha256", "full_hashes")
    count(models_module, "load_models", "models_loaded")
    for cls, name in (
        (OpenSlideReader, "read_region"),
        (OpenSlideReader, "read_region_scaled"),
        (OpenSlideReader, "thumbnail"),
        (ImageReader, "read_region"),
        (ImageReader, "thumbnail"),
    ):
        count(cls, name, "pixel_reads")
    sys.argv = ["pathgls", *argv]
    try:
        main()
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    print("COUNTS " + json.dumps(counts), flush=True)


def child_extract(run: Path, slides: Path, clip: Path) -> None:
    """Hidden mode: a second encoder's bags into RUN; prints each slide's timings as JSON."""
    from pathgls.config import load_config
    from pathgls.encoders import build_encoder
    from pathgls.features.extract import extract_slides
    from pathgls.tiling import find_slides

    config = load_config(encoder={"name": f"hf:{clip}"})
    encoder = build_encoder(config.encoder)
    results = extract_slides(
        slides=find_slides(slides), out_dir=run, encoder=encoder, config=config
    )
    out = {
        Path(r.slide).stem: {
            "status": r.status,
            "timings": r.timings,
            "reused": r.tiling_reused,
            "n": r.n_patches,
        }
        for r in results
    }
    print("EXTRACT " + json.dumps(out), flush=True)


def first_tiling(run: Path) -> dict[str, dict[str, float]]:
    """Each slide's identity and tiling seconds in the first run (from a card of the item)."""
    from pathgls.runner.store import ResultsStore

    out: dict[str, dict[str, float]] = {}
    for card in ResultsStore(run).load_cards():
        if card.subject == SUBJECTS[0]:
            t = card.timings
            out[card.item_id] = {
                "identity": t.get("slide.identity", 0.0),
                "tiling": t.get("slide.tiling", 0.0),
                "encoding": t.get("slide.encoding", 0.0),
            }
    return out


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=None, help="keeps the built pyramids")
    ap.add_argument("--repeats", type=int, default=3, help="timed reruns (median)")
    ap.add_argument("--keep", action="store_true", help="keep the run directory")
    ap.add_argument("--child-rerun", nargs=argparse.REMAINDER, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-extract", nargs=3, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_rerun is not None:
        child_rerun(args.child_rerun)
        return
    if args.child_extract is not None:
        run, slides, clip = (Path(a) for a in args.child_extract)
        child_extract(run, slides, clip)
        return
    if not CMU.exists():
        raise SystemExit(f"shared data not found: {CMU}")
    workdir = args.workdir or Path(tempfile.gettempdir()) / "pathgls-bench-rerun"
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs; load {load_average()}")
    slides = build_slides(workdir)
    for p in sorted(slides.iterdir()):
        print(f"  {p.name}: {p.resolve().stat().st_size / 1e6:.1f} MB")
    from pathgls.testing import save_random_hf_clip

    clip = save_random_hf_clip(workdir / "tiny-clip", size="tiny", seed=0)
    clip2 = save_random_hf_clip(workdir / "tiny-clip-2", size="tiny", seed=1)
    run = workdir / "run"
    shutil.rmtree(run, ignore_errors=True)
    cmd = [sys.executable, "-m", "pathgls", *command(slides, run, clip)]
    print(f"encoder: tiny CLIP with RANDOM weights (timings only); subjects {', '.join(SUBJECTS)}")
    print(f"\n1. first run (load {load_average()})")
    first, proc = timed_process(cmd)
    pairs = next((ln for ln in proc.stderr.splitlines() if "item × subject pairs" in ln), "")
    print(f"   {first:.1f} s; {pairs.strip()}")
    tiling = first_tiling(run)
    for name, t in tiling.items():
        print(
            f"   {name}: identity (full hash) {t['identity']:.2f} s, tiling (plan, mask, grid) "
            f"{t['tiling']:.2f} s, encoding {t['encoding']:.1f} s"
        )

    print(f"\n2. rerun of the finished run (load {load_average()})")
    reruns = [timed_process(cmd)[0] for _ in range(args.repeats)]
    rerun = statistics.median(reruns)
    _, proc = timed_process(
        [sys.executable, __file__, "--child-rerun", *command(slides, run, clip)]
    )
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("COUNTS "))
    counts = json.loads(line.removeprefix("COUNTS "))
    ratio = rerun / first
    print(f"   {', '.join(f'{s:.2f}' for s in reruns)} s → median {rerun:.2f} s")
    print(
        f"   rerun / first run: {ratio:.1%} (target ≤ {RERUN_TARGET:.0%}): "
        f"{verdict(ratio <= RERUN_TARGET)}"
    )
    zero = all(counts[k] == 0 for k in ("opens", "pixel_reads", "models_loaded"))
    print(
        f"   instrumented rerun: {counts['opens']} slide opens, {counts['pixel_reads']} pixel "
        f"reads, {counts['full_hashes']} whole-file hashes, {counts['models_loaded']} model "
        f"loads (target: 0 opens, 0 pixel reads, 0 models): {verdict(zero)}"
    )

    print(f"\n3. a second encoder on the same slides, into the same run (load {load_average()})")
    t = time.perf_counter()
    _, proc = timed_process(
        [sys.executable, __file__, "--child-extract", str(run), str(slides), str(clip2)]
    )
    wall = time.perf_counter() - t
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("EXTRACT "))
    second = json.loads(line.removeprefix("EXTRACT "))
    sum_first = sum_second = 0.0
    for name, r in second.items():
        t1 = tiling.get(name, {})
        before = t1.get("identity", 0.0) + t1.get("tiling", 0.0)
        after = r["timings"].get("slide.identity", 0.0) + r["timings"].get("slide.tiling", 0.0)
        sum_first, sum_second = sum_first + before, sum_second + after
        print(
            f"   {name}: {r['status']}, tiling reused {r['reused']}: {1e3 * after:.1f} ms vs "
            f"{1e3 * before:.1f} ms in the first run; encoding "
            f"{r['timings'].get('slide.encoding', 0.0):.1f} s ({r['n']} patches)"
        )
    tr = sum_second / sum_first if sum_first else float("nan")
    print(
        f"   second encoder's tiling (identity + plan + grid) / first run's: {tr:.1%} "
        f"({1e3 * sum_second:.0f} ms / {1e3 * sum_first:.0f} ms; target ≤ "
        f"{TILING_TARGET:.0%}): {verdict(tr <= TILING_TARGET)}; extraction process {wall:.1f} s"
    )
    print(f"\nload average at the end: {load_average()}")
    if not args.keep:
        shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
