"""Tiling benchmark: coordinate generation, patch streaming vs a plain loop, peak memory.

Builds 20k×20k and 60k×60k px Aperio pyramids at 0.25 µm/px (40×) from the real pixels of
``../shared/data/slides/cmu-1-small-region.svs`` (2× nearest upsampling, tiled as a mirrored
mosaic; JPEG tiles of 256 px), of two kinds:

* ``native20x``: level factor 2 (40×, 20×, 10×, ...): 20× patches are read as they are stored;
* ``no20x``: level factor 4 (40×, 10×, 2.5×, as Aperio writes them): every 512 px 20× patch is
  a 1024 px read at level 0 reduced 2× (pathgls: scaled JPEG decode), the path most scanners'
  files take.

Built once with ``pathgls.testing.synthetic.write_aperio_pyramid`` into ``--workdir`` and
reused. For each pyramid it measures, each in a fresh subprocess so peak RSS is the job's own:

* coordinate generation (tissue mask + grid) for the whole slide;
* patch streaming throughput (``stream_patches``, 2 reader threads) against a plain loop of
  ``OpenSlide.read_region`` at level 0 + Lanczos resize to 512 px on the *same* coordinates;
* peak RSS of a full streaming pass over every patch of the slide (``--repeats`` fresh
  processes, median; the peak depends on how many batches the reader threads hold at once,
  so it varies by ~10 MiB between runs), and the resident memory just before streaming.

What the peak is made of (issue #17, measured stage by stage with VmHWM): the interpreter and
libraries (~52 MiB), the batches in flight (up to ``workers × prefetch`` + 1 of 24 MiB, bounded
whatever the slide), OpenSlide's tile cache (≤ 32 MiB, filled by reads through OpenSlide) and
little else; the tissue mask is capped at ``mask_max_side`` and its thumbnail is read through a
second, uncached OpenSlide handle, so its tiles do not stay cached on large slides only.

Targets (issues #2, #17), per kind: streaming ≥ 1.7× the plain loop; coordinates for 60k² < 3 s;
peak RSS(60k²) ≤ 1.2 × peak RSS(20k²).

Usage: python benchmarks/bench_tiling.py [--workdir DIR] [--sample N] [--sizes 20000 60000]
    [--kinds native20x no20x] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CMU = ROOT.parent / "shared" / "data" / "slides" / "cmu-1-small-region.svs"


#: Pyramid kinds: level factor 2 has a native 20× level (read as is); factor 4 (40×, 10×,
#: 2.5×, as Aperio writes them) has none, so every 20× patch is read at 40× and reduced 2×.
KINDS = {"native20x": 2, "no20x": 4}


def build(size: int, workdir: Path, kind: str = "native20x") -> Path:
    """Write (or reuse) a size×size pyramid at 0.25 µm/px tiled from CMU pixels upsampled 2×."""
    suffix = "" if kind == "native20x" else f"-{kind}"
    out = workdir / f"cmu-tiled-{size}{suffix}.svs"
    if out.exists():
        return out
    import numpy as np
    import openslide

    from pathgls.testing.synthetic import write_mosaic_40x

    with openslide.OpenSlide(str(CMU)) as s:
        w, h = s.dimensions
        rgb = np.asarray(s.read_region((0, 0), 0, (w, h)).convert("RGB"))
    t0 = time.perf_counter()
    write_mosaic_40x(out, rgb=rgb, size=size, level_factor=KINDS[kind])
    print(
        f"  built {out.name} in {time.perf_counter() - t0:.1f} s "
        f"({out.stat().st_size / 2**20:.0f} MiB)"
    )
    return out


def _rss_mib(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` of this process in MiB (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _child(args: argparse.Namespace) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
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
        res["rss_before_stream_mib"] = _rss_mib("VmRSS")
        t0 = time.perf_counter()
        n = 0
        for batch in stream_patches(reader, grid.coords, grid.plan, batch_size=32, workers=2):
            n += len(batch.coords)
        res["full_stream_s"] = time.perf_counter() - t0
        res["full_stream_pps"] = n / res["full_stream_s"]
        # VmHWM, not getrusage's ru_maxrss: a child's ru_maxrss starts at its parent's peak
        # (the parent's memory map is accounted when the child execs), and this script's parent
        # may have imported torch (pathgls.testing) to build a pyramid: 540 MiB for every row.
        res["peak_rss_mib"] = _rss_mib("VmHWM")
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


def measure(slide: Path, *, sample: int, repeats: int) -> dict[str, float]:
    """All figures of one pyramid; the full pass runs ``repeats`` times (median peak RSS)."""
    fulls = [run_child("full", slide, sample) for _ in range(repeats)]
    peaks = [f["peak_rss_mib"] for f in fulls]
    row = {**fulls[0], "peak_rss_mib": statistics.median(peaks)}
    row["peak_rss_min"], row["peak_rss_max"] = min(peaks), max(peaks)
    row["rss_before_stream_mib"] = statistics.median(f["rss_before_stream_mib"] for f in fulls)
    row["coords_s"] = statistics.median(f["coords_s"] for f in fulls)
    row["full_stream_pps"] = statistics.median(f["full_stream_pps"] for f in fulls)
    return {**row, **run_child("plain", slide, sample), **run_child("stream", slide, sample)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=None, help="where pyramids are kept (reused)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20000, 60000])
    ap.add_argument("--kinds", nargs="+", choices=sorted(KINDS), default=list(KINDS))
    ap.add_argument(
        "--sample", type=int, default=300, help="patches in the stream-vs-plain comparison"
    )
    ap.add_argument("--repeats", type=int, default=3, help="full passes per pyramid (peak RSS)")
    ap.add_argument("--child", choices=["full", "plain", "stream"], help=argparse.SUPPRESS)
    ap.add_argument("--slide", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.mode = args.child
        _child(args)
        return
    workdir = args.workdir or Path(tempfile.gettempdir()) / "pathgls-bench-tiling"
    workdir.mkdir(parents=True, exist_ok=True)
    targets = []
    for kind in args.kinds:
        print(f"{kind} (level factor {KINDS[kind]}):")
        rows = {}
        for size in args.sizes:
            rows[size] = r = measure(
                build(size, workdir, kind), sample=args.sample, repeats=args.repeats
            )
            print(
                f"  {size}²: {int(r['n_patches'])} patches; coords {r['coords_s']:.2f} s; "
                f"full stream {r['full_stream_pps']:.0f} patches/s; "
                f"peak RSS {r['peak_rss_mib']:.0f} MiB (median of {args.repeats}, "
                f"{r['peak_rss_min']:.0f}–{r['peak_rss_max']:.0f}), "
                f"{r['rss_before_stream_mib']:.0f} MiB before streaming; "
                f"same {int(r['n'])} coords: plain loop {r['n'] / r['plain_s']:.0f} patches/s, "
                f"stream {r['n'] / r['stream_s']:.0f} patches/s → "
                f"{r['plain_s'] / r['stream_s']:.2f}×"
            )
        big, small = max(rows), min(rows)
        speedup = rows[big]["plain_s"] / rows[big]["stream_s"]
        rss_ratio = rows[big]["peak_rss_mib"] / rows[small]["peak_rss_mib"]
        worst = rows[big]["peak_rss_max"] / rows[small]["peak_rss_min"]
        targets += [
            f"  [{kind}] streaming / plain loop ({big}²): {speedup:.2f}× (target ≥ 1.7) "
            f"{'MET' if speedup >= 1.7 else 'NOT MET'}",
            f"  [{kind}] coordinates for {big}²: {rows[big]['coords_s']:.2f} s (target < 3 s) "
            f"{'MET' if rows[big]['coords_s'] < 3 else 'NOT MET'}",
            f"  [{kind}] peak RSS {big}² / {small}² (medians): {rss_ratio:.2f} (target ≤ 1.2) "
            f"{'MET' if rss_ratio <= 1.2 else 'NOT MET'}; worst pair (max / min): {worst:.2f}",
        ]
    print("\ntargets:")
    print("\n".join(targets))


if __name__ == "__main__":
    main()
