"""Tiling benchmark: coordinate generation, patch streaming vs a plain loop, peak memory.

Builds 20k×20k and 60k×60k px Aperio pyramids at 0.25 µm/px (40×) from the real pixels of
``../shared/data/slides/cmu-1-small-region.svs`` and measures, each in a fresh subprocess so
peak RSS is the job's own:

* coordinate generation (tissue mask + grid) for the whole slide;
* patch streaming throughput (``stream_patches``, 2 reader threads) against a plain loop of
  ``OpenSlide.read_region`` at level 0 + resize to 512 px on the *same* coordinates;
* peak RSS of a full streaming pass over every patch of the slide.

Targets (issue #2): streaming ≥ 1.7× the plain loop; coordinates for 60k² < 3 s;
peak RSS(60k²) ≤ 1.2 × peak RSS(20k²).

Usage: python benchmarks/bench_tiling.py [--workdir DIR] [--sample N] [--sizes 20000 60000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CMU = ROOT.parent / "shared" / "data" / "slides" / "cmu-1-small-region.svs"


def build(size: int, workdir: Path) -> Path:
    """Write (or reuse) a size×size pyramid at 0.25 µm/px tiled from CMU pixels upsampled 2×."""
    import numpy as np
    import openslide

    from pathgls.testing.synthetic import tiled_source, write_aperio_pyramid

    out = workdir / f"cmu-tiled-{size}.svs"
    if out.exists():
        return out
    with openslide.OpenSlide(str(CMU)) as s:
        w, h = s.dimensions
        rgb = np.asarray(s.read_region((0, 0), 0, (w, h)).convert("RGB"))
    # 2× nearest upsampling keeps the real texture at the 40× scale
    up = rgb.repeat(2, axis=0).repeat(2, axis=1)
    t0 = time.perf_counter()
    write_aperio_pyramid(
        out, source=tiled_source(up, tile=256), width=size, height=size, mpp=0.25, magnification=40
    )
    print(
        f"  built {out.name} in {time.perf_counter() - t0:.1f} s "
        f"({out.stat().st_size / 2**20:.0f} MiB)"
    )
    return out


def _child(args: argparse.Namespace) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    import resource

    import numpy as np
    import openslide
    from PIL import Image

    from pathgls.config import TilingConfig
    from pathgls.io.memory import limit_heap_fragmentation
    from pathgls.tiling import make_grid, open_slide, stream_patches

    limit_heap_fragmentation()  # as the `pathgls` command does at start
    cfg = TilingConfig()
    res: dict[str, float] = {}
    if args.mode == "full":
        t0 = time.perf_counter()
        reader = open_slide(args.slide)
        grid = make_grid(reader, cfg)
        res["coords_s"] = time.perf_counter() - t0
        res["n_patches"] = len(grid)
        t0 = time.perf_counter()
        n = 0
        for batch in stream_patches(reader, grid.coords, grid.plan, batch_size=32, workers=2):
            n += len(batch.coords)
        res["full_stream_s"] = time.perf_counter() - t0
        res["full_stream_pps"] = n / res["full_stream_s"]
        res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    else:
        reader = open_slide(args.slide)
        grid = make_grid(reader, cfg)
        idx = np.linspace(0, len(grid) - 1, min(args.sample, len(grid))).astype(int)
        coords = grid.coords[idx]
        ps0 = grid.plan.patch_size_level0
        if args.mode == "plain":
            slide = openslide.OpenSlide(args.slide)
            t0 = time.perf_counter()
            for x, y in coords:
                im = slide.read_region((int(x), int(y)), 0, (ps0, ps0)).convert("RGB")
                np.asarray(im.resize((512, 512), Image.Resampling.LANCZOS))
            res["plain_s"] = time.perf_counter() - t0
        else:
            t0 = time.perf_counter()
            for _ in stream_patches(reader, coords, grid.plan, batch_size=32, workers=2):
                pass
            res["stream_s"] = time.perf_counter() - t0
        res["n"] = len(coords)
    print(json.dumps(res))


def run_child(mode: str, slide: Path, sample: int) -> dict[str, float]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        mode,
        "--slide",
        str(slide),
        "--sample",
        str(sample),
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=None, help="where pyramids are kept (reused)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20000, 60000])
    ap.add_argument(
        "--sample", type=int, default=300, help="patches in the stream-vs-plain comparison"
    )
    ap.add_argument("--child", choices=["full", "plain", "stream"], help=argparse.SUPPRESS)
    ap.add_argument("--slide", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.mode = args.child
        _child(args)
        return
    workdir = args.workdir or Path(tempfile.gettempdir()) / "pathgls-bench-tiling"
    workdir.mkdir(parents=True, exist_ok=True)
    rows = {}
    for size in args.sizes:
        slide = build(size, workdir)
        full = run_child("full", slide, args.sample)
        plain = run_child("plain", slide, args.sample)
        stream = run_child("stream", slide, args.sample)
        rows[size] = {**full, **plain, **stream}
        r = rows[size]
        print(
            f"{size}²: {int(r['n_patches'])} patches; coords {r['coords_s']:.2f} s; "
            f"full stream {r['full_stream_pps']:.0f} patches/s; "
            f"peak RSS {r['peak_rss_mib']:.0f} MiB; "
            f"same {int(r['n'])} coords: plain loop {r['n'] / r['plain_s']:.0f} patches/s, "
            f"stream {r['n'] / r['stream_s']:.0f} patches/s → {r['plain_s'] / r['stream_s']:.2f}×"
        )
    big, small = max(rows), min(rows)
    speedup = rows[big]["plain_s"] / rows[big]["stream_s"]
    rss_ratio = rows[big]["peak_rss_mib"] / rows[small]["peak_rss_mib"]
    print("\ntargets:")
    print(
        f"  streaming / plain loop ({big}²): {speedup:.2f}× (target ≥ 1.7) "
        f"{'MET' if speedup >= 1.7 else 'NOT MET'}"
    )
    print(
        f"  coordinates for {big}²: {rows[big]['coords_s']:.2f} s (target < 3 s) "
        f"{'MET' if rows[big]['coords_s'] < 3 else 'NOT MET'}"
    )
    print(
        f"  peak RSS {big}² / {small}²: {rss_ratio:.2f} (target ≤ 1.2) "
        f"{'MET' if rss_ratio <= 1.2 else 'NOT MET'}"
    )


if __name__ == "__main__":
    main()
