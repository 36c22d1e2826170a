"""Extraction benchmark: end-to-end slide → bag against the encoder's forward pass alone.

A full-size PLIP-architecture CLIP (ViT-B/32 + 12-layer text tower, *random weights* — speed
only, its features mean nothing) runs on CPU:

* forward only: ``encode_highres`` on the slide's patches already in memory;
* end to end: ``extract_slide`` on the real CMU slide — open, tissue mask, grid, threaded
  reading, HighRes encoding, HDF5 writing with a flush per batch, checksum, rename.

Target (issue #2): end-to-end throughput ≥ 85% of forward-only (I/O hidden behind compute).

Usage: python benchmarks/bench_extract.py [--batch-size 8] [--repeats 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CMU = ROOT.parent / "shared" / "data" / "slides" / "cmu-1-small-region.svs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2, help="alternating rounds of each measurement")
    args = ap.parse_args()

    import torch

    from pathgls.config import load_config
    from pathgls.encoders import build_encoder, encode_highres
    from pathgls.features.extract import extract_slide
    from pathgls.testing import save_random_hf_clip
    from pathgls.tiling import make_grid, open_slide, stream_patches

    work = Path(tempfile.mkdtemp(prefix="pathgls-bench-extract-"))
    model_dir = save_random_hf_clip(work / "plip-random", size="plip")
    cfg = load_config(
        encoder={"name": f"hf:{model_dir}"},
        stream={"batch_size": args.batch_size, "workers": args.workers},
        tiling={"tissue_threshold": 0.0},  # every patch position of the slide: 30 patches
        bag={"overwrite": True},
    )
    enc = build_encoder(cfg.encoder)
    print(
        f"encoder: PLIP architecture, random weights, {enc.dim}-d, "
        f"{enc.precision} on {enc.device}; "
        f"torch threads {torch.get_num_threads()}"
    )
    reader = open_slide(CMU)
    grid = make_grid(reader, cfg.tiling)
    patches = np.concatenate(
        [b.images for b in stream_patches(reader, grid.coords, grid.plan, batch_size=64, workers=0)]
    )
    n = len(patches)
    print(f"slide: {CMU.name}, {n} patches of 512 px, 9 windows each; batch {args.batch_size}")
    ec = cfg.encoder
    encode_highres(
        enc, patches[: args.batch_size], window_size=ec.window_size, window_stride=ec.window_stride
    )  # warm-up

    fwd_times, e2e_times = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for s in range(0, n, args.batch_size):
            encode_highres(
                enc,
                patches[s : s + args.batch_size],
                window_size=ec.window_size,
                window_stride=ec.window_stride,
            )
        fwd_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        r = extract_slide(slide=CMU, out_dir=work / "bags", encoder=enc, config=cfg)
        e2e_times.append(time.perf_counter() - t0)
        assert r.status == "done" and r.n_patches == n, r.error
    fwd = n / min(fwd_times)
    e2e = n / min(e2e_times)
    print(
        f"forward only : {fwd:.2f} patches/s (best of {args.repeats}: "
        f"{', '.join(f'{t:.1f}' for t in fwd_times)} s)"
    )
    print(
        f"end to end   : {e2e:.2f} patches/s (best of {args.repeats}: "
        f"{', '.join(f'{t:.1f}' for t in e2e_times)} s)"
    )
    ratio = e2e / fwd
    print(
        f"\ntarget: end-to-end / forward-only = {ratio:.1%} (target ≥ 85%) "
        f"{'MET' if ratio >= 0.85 else 'NOT MET'}"
    )


if __name__ == "__main__":
    main()
