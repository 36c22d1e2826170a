"""pathgls vs TRIDENT's ``extract_patch_features``: full-size ViT-B/32, one crop per patch.

Issue #17's target: pathgls ≥ 1.2× TRIDENT on the same coordinates and weights, on the same
machine, in one run, at the same batch size, reader workers and torch thread count.

What is compared:

* the slide: the 20480² px 40× JPEG pyramid **without a 20× level** that
  ``bench_extract_io.py`` builds from the shared CMU slide (reused from ``--workdir``), and the
  same ``--n`` patch coordinates (20× patches of 512 px, i.e. 1024 px at level 0);
* the coordinates are written in TRIDENT's coords format (dataset ``coords`` with the attributes
  of ``trident.IO.coords_to_h5``: ``patch_size``, ``patch_size_level0``,
  ``level0_magnification``, ``target_magnification``, ``overlap``, ``name``, ``savetodir``,
  ``level0_width``, ``level0_height``), so TRIDENT reads them as its own;
* the weights: one random PLIP-size CLIP ViT-B/32 (``pathgls.testing.save_random_hf_clip``,
  Hugging Face ``CLIPModel`` format; speed only, never results);
* pathgls: ``pathgls.features.extract.encode_patches``, the loop ``pathgls extract`` runs,
  without the bag writer — reader threads (scaled JPEG decode, 2 × 2 area reduction to 512 px)
  filling a ring of batch arrays → ``encode_highres(window_size=512)``, i.e. one window per
  patch that the encoder's batched torch preprocessing resizes (bicubic, antialiased) to
  224 px (``extract_slide`` itself only takes a whole tissue grid);
* TRIDENT (``benchmarks/_trident_child.py``, run with ``--trident-python``):
  ``OpenSlideWSI.extract_patch_features`` with a ``CustomInferenceEncoder`` wrapping the same
  checkpoint's vision tower and projection (``get_image_features``), TRIDENT's own transforms
  (``get_eval_transforms``: bicubic resize to 224, center crop, the checkpoint's mean/std);
  TRIDENT reads 1024 px at level 0 with OpenSlide and resizes to 512 px with Pillow (bicubic)
  before that, in its DataLoader workers (``max_workers`` = ``--workers``); its time includes
  writing its feature file, pathgls's does not write one;
* forward-only speeds: the ViT on ready ``(B, 3, 224, 224)`` tensors in each environment
  (transformers differs: TRIDENT pins ``transformers<5``), and pathgls's
  ``encode_highres`` on the same patches already in memory (preprocessing + forward);
* data only: each tool's read + resize + normalise path without the model, in one thread
  (pathgls: ``stream_patches(workers=0)`` + the encoder's preprocessing; TRIDENT: its
  ``WSIPatcherDataset`` with the same transforms), i.e. the CPU each patch costs besides the ViT;
* features: both must cover the same patches in the same order; their cosine per patch is
  printed, with the same ViT run on TRIDENT-style pixels in this process (isolates the
  resampling from everything else) and the mean grey-level difference of the two 224 px inputs.

Making the TRIDENT environment (outside the repository; TRIDENT's licence is CC BY-NC-ND, so it
is installed and called, never copied; it pins ``timm==0.9.16`` and ``transformers<5``, which
go into the venv only — the main environment is left as it is)::

    git clone https://github.com/mahmoodlab/TRIDENT /work/trident-src   # or export a snapshot
    python -m venv --system-site-packages /work/trident-env
    /work/trident-env/bin/pip install -e /work/trident-src

(``--system-site-packages`` reuses the main environment's torch/torchvision/openslide.) The
child imports TRIDENT and not pathgls. Without that Python the TRIDENT comparison is skipped
with the reason and the pathgls figures are still printed.

Timing: every contender — the internal loop, the user's ``pathgls extract`` command (whole
tissue grid, so only without ``--n``; its in-call rate and process wall), the in-memory and
forward-only rows, and the TRIDENT child (one warm-up and one timed run per round) — runs once
per round in alternating rounds whose order rotates (``_rounds.py``); figures are median
[min–max] over rounds with the load average, ratios are taken within a round, no best-of-N.
TRIDENT's environment pins ``transformers<5``: the ViT forward is timed in both environments
and both versions are printed, so the version difference is measured, not hidden in a ratio.

TRIDENT is not on the package index (``trident`` there is another project) and installs from
GitHub; a machine that reaches only the package index cannot make its environment, and this
script then prints the pathgls rows with the reason (``bench_extract_cli.py`` compares with a
CLAM/TRIDENT-style loop instead).

Use ``--n`` ≥ 32 (or the default, the tissue grid): each patch is 16 JPEG tiles and both
readers cache ~128 decoded tiles, so repeated passes over fewer patches would read from cache.

Usage: python benchmarks/bench_trident.py [--n 0] [--rounds 3] [--workdir /tmp/pathgls-io]
       [--slide SLIDE] (default: the 40× pyramid without a 20× level)
       [--trident-python /work/trident-env/bin/python] [--workers 1] [--batch-size 16]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CHILD = HERE / "_trident_child.py"


OURS = "pathgls: encode_patches (the extract loop), one 224 px view"
CLI = "pathgls extract, the user's command (in-call rate it prints)"
MEM = "pathgls forward only: encode_highres on patches in memory"
FWD = "ViT forward only on 224 px tensors (main env)"
DATA = "pathgls data only: read in this thread + preprocess to 224"
TRI = "TRIDENT extract_patch_features (its env; one run per round)"


def write_trident_coords(path: Path, *, coords: np.ndarray, plan, dims, slide: Path) -> None:
    """The coordinates as a TRIDENT coords file (``trident.IO.coords_to_h5``'s layout)."""
    import h5py

    def whole(v: float) -> int | float:
        return round(v) if abs(v - round(v)) < 1e-6 else float(v)

    with h5py.File(path, "w") as f:
        d = f.create_dataset("coords", data=np.asarray(coords, dtype=np.int64))
        d.attrs["patch_size"] = int(plan.patch_size)
        d.attrs["patch_size_level0"] = int(plan.patch_size_level0)
        d.attrs["level0_magnification"] = whole(plan.level0_magnification)
        d.attrs["target_magnification"] = whole(plan.target_magnification)
        d.attrs["overlap"] = 0
        d.attrs["name"] = slide.stem
        d.attrs["savetodir"] = str(path.parent)
        d.attrs["level0_width"] = int(dims[0])
        d.attrs["level0_height"] = int(dims[1])


def trident_style_pixels(slide: Path, coords: np.ndarray, plan, preprocess) -> np.ndarray:
    """TRIDENT's read path reproduced with Pillow: level-0 read → bicubic 512 → bicubic 224.

    Only to tell the resampling apart from the rest when the features are compared.
    """
    import openslide
    from PIL import Image

    size = preprocess.size
    out = []
    with openslide.OpenSlide(str(slide)) as s:
        for x, y in coords:
            r = plan.patch_size_level0
            tile = s.read_region((int(x), int(y)), 0, (r, r)).convert("RGB")
            tile = tile.resize((plan.patch_size, plan.patch_size))  # Pillow's default: bicubic
            tile = tile.resize((size, size), Image.Resampling.BICUBIC)
            out.append(np.asarray(tile))
    return np.stack(out)


def run_trident(args, *, slide: Path, coords_h5: Path, weights: Path, out: Path) -> dict:
    """Run the TRIDENT child; returns its JSON, or ``{"skipped": reason}``."""
    py = Path(args.trident_python)
    if not py.exists():
        return {"skipped": f"no TRIDENT Python at {py} (see this file's docstring to make one)"}
    cmd = [
        str(py),
        str(CHILD),
        "--slide",
        str(slide),
        "--coords",
        str(coords_h5),
        "--weights",
        str(weights),
        "--out",
        str(out),
        "--batch-size",
        str(args.batch_size),
        "--workers",
        str(args.workers),
        "--threads",
        str(args.threads),
        "--repeats",
        "1",
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONPATH", None)  # the child must not see this checkout
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"skipped": f"TRIDENT child failed (rc {proc.returncode}): " + " | ".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def summary(c: np.ndarray) -> str:
    """Cosines as ``1 − cos`` (they sit close to 1): mean, median and worst patch."""
    d = 1.0 - c.astype(np.float64)
    return f"1 − cos mean {d.mean():.2e}, median {np.median(d):.2e}, max {d.max():.2e}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "pathgls-io")
    ap.add_argument("--slide", type=Path, default=None, help="a slide (default: the 40x pyramid)")
    ap.add_argument(
        "--n", type=int, default=0, help="patches (0: the slide's whole tissue grid, as the CLI)"
    )
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (median kept)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--workers", type=int, default=1, help="reader workers, both tools")
    ap.add_argument("--threads", type=int, default=0, help="torch threads, both (0: torch's)")
    ap.add_argument("--trident-python", default="/work/trident-env/bin/python")
    ap.add_argument("--timeout", type=int, default=900, help="seconds for the TRIDENT child")
    args = ap.parse_args()

    import torch

    from pathgls.config import load_config
    from pathgls.encoders import build_encoder, encode_highres
    from pathgls.features.extract import encode_patches
    from pathgls.testing import save_random_hf_clip
    from pathgls.tiling import make_grid, open_slide, stream_patches

    sys.path.insert(0, str(HERE))
    from _rounds import ratios, run_rounds, spread, timed_call, timed_process
    from bench_extract_io import build

    args.threads = args.threads or torch.get_num_threads()
    torch.set_num_threads(args.threads)
    args.workdir.mkdir(parents=True, exist_ok=True)
    slide = args.slide or build(args.workdir)
    reader = open_slide(slide)
    if args.n:
        grid = make_grid(reader, load_config(tiling={"tissue_threshold": 0.0}).tiling)
        step = max(1, len(grid.coords) // args.n)
        coords = np.asarray(grid.coords[::step][: args.n], dtype=np.int64)
    else:  # the tissue grid `pathgls extract` makes with its defaults: the CLI row can run
        grid = make_grid(reader, load_config().tiling)
        coords = np.asarray(grid.coords, dtype=np.int64)
    plan = grid.plan
    n = len(coords)
    if n * (plan.read_size // 256) ** 2 <= 256:  # the slide's JPEG tiles are 256 px
        print(
            f"note: {n} patches touch so few tiles that repeated passes read them from the tile "
            "caches (pathgls's decoder and OpenSlide keep ~128 tiles): use --n 32 or more"
        )
    run_dir = Path(tempfile.mkdtemp(prefix="bench-trident-", dir=args.workdir))
    coords_h5 = run_dir / f"{slide.stem}_patches.h5"
    write_trident_coords(coords_h5, coords=coords, plan=plan, dims=reader.dimensions, slide=slide)
    weights = save_random_hf_clip(args.workdir / "plip", size="plip")
    plip = build_encoder(load_config(encoder={"name": f"hf:{weights}"}).encoder)
    print(
        f"slide: {slide.name}, {reader.dimensions} px, levels {reader.level_dimensions}; {n} "
        "patches "
        f"(read {plan.read_size} px at level {plan.level} → {plan.patch_size} px); batch "
        f"{args.batch_size}; reader workers {args.workers}; torch threads {args.threads}; "
        f"os.cpu_count {os.cpu_count()}; load {os.getloadavg()[0]:.2f}"
    )

    feats: list[np.ndarray] = []

    cfg = load_config(
        encoder={"name": "bench", "window_size": plan.patch_size, "window_stride": plan.patch_size},
        stream={"batch_size": args.batch_size, "workers": args.workers},
    )

    def pathgls() -> None:
        feats.clear()
        for _, _, f in encode_patches(
            reader=reader, coords=coords, plan=plan, encoder=plip, config=cfg
        ):
            feats.append(f)

    patches = np.concatenate(
        [b.images for b in stream_patches(reader, coords, plan, batch_size=64, workers=0)]
    )

    def in_memory() -> None:
        for s in range(0, n, args.batch_size):
            encode_highres(
                plip,
                patches[s : s + args.batch_size],
                window_size=plan.patch_size,
                window_stride=plan.patch_size,
            )

    device = torch.device(plip.device)
    pixels = plip.preprocess(patches, device=device, dtype=plip.dtype)

    def bare() -> None:
        with torch.inference_mode():
            for s in range(0, n, args.batch_size):
                plip.image_features(pixels[s : s + args.batch_size])

    def data_only() -> None:
        for b in stream_patches(reader, coords, plan, batch_size=args.batch_size, workers=0):
            plip.preprocess(b.images, device=device, dtype=plip.dtype)

    tri_runs: list[dict] = []

    def trident() -> tuple[float, float | None]:
        t = run_trident(args, slide=slide, coords_h5=coords_h5, weights=weights, out=run_dir)
        tri_runs.append(t)
        if "skipped" in t:
            return float("nan"), float("nan")
        return t["seconds"], t["patches_per_s"]

    cli_walls: list[float] = []

    def cli() -> tuple[float, float | None]:
        out = run_dir / f"cli-{len(cli_walls)}"
        wall, text, _rss = timed_process(
            [
                *(sys.executable, "-m", "pathgls", "extract", str(slide), "--out", str(out)),
                *("--encoder", f"hf:{weights}", "--batch-size", str(args.batch_size)),
                *("--workers", str(args.workers), "--torch-threads", str(args.threads)),
            ]
        )
        cli_walls.append(wall)
        m = re.search(r"encoded \((?:[^()]*, )?([\d.]+) patches/s\)", text)
        return wall, float(m.group(1)) if m else None

    contenders = {
        OURS: lambda: timed_call(pathgls),
        MEM: lambda: timed_call(in_memory),
        FWD: lambda: timed_call(bare),
        DATA: lambda: timed_call(data_only),
    }
    if not args.n:
        contenders[CLI] = cli
    if Path(args.trident_python).exists():
        contenders[TRI] = trident
    else:
        print(f"TRIDENT: not run — no TRIDENT Python at {args.trident_python} (see the docstring)")
    pathgls()  # warm-up of the in-process paths
    series = run_rounds(contenders, rounds=args.rounds, n_items=n)
    ours = np.concatenate(feats)
    print(f"\n{'measurement (median [min–max] of rounds)':62s} {'patches/s':>22s} load")
    for k, v in series.items():
        print(f"{k:62s} {spread(v.rates):>22s} {spread(v.loads, '{:.1f}')}")
    if cli_walls:
        print(f"{'CLI whole process, seconds':62s} {spread(cli_walls):>22s}")
    print("ratios within each round:")
    for a, b in ((OURS, FWD), (CLI, OURS), (CLI, FWD), (OURS, TRI), (CLI, TRI)):
        if a in series and b in series:
            print(f"  {a[:40]} / {b[:40]}: {spread(ratios(series[a], series[b]), '{:.2f}')}×")
    tri = tri_runs[-1] if tri_runs else {"skipped": "not installed"}
    if "skipped" in tri:
        print(f"TRIDENT comparison: not run — {tri['skipped']}")
        reader.close()
        return
    import transformers

    print(
        f"TRIDENT {tri['trident']} (torch {tri['torch']}, transformers {tri['transformers']}; "
        f"here: torch {torch.__version__}, transformers {transformers.__version__}); its ViT "
        f"forward in its env {tri['forward_per_s']:.1f}/s vs here "
        f"{statistics.median(series[FWD].rates):.1f}/s (the version difference, measured)"
    )

    import h5py

    with h5py.File(tri["features_path"], "r") as f:
        theirs = np.asarray(f["features"][:], dtype=np.float32)
        their_coords = np.asarray(f["coords"][:], dtype=np.int64)
    same = theirs.shape[0] == ours.shape[0] == n and np.array_equal(their_coords, coords)
    print(
        f"\nfeatures: pathgls {ours.shape}, TRIDENT {theirs.shape}; same patches in the same "
        f"order: {'yes' if same else 'NO'}"
    )
    if not same:
        reader.close()
        raise SystemExit("TRIDENT and pathgls did not produce features for the same patches")
    tstyle = trident_style_pixels(slide, coords, plan, plip.preprocess)
    tpix = plip.preprocess(tstyle, device=device, dtype=plip.dtype)
    std = torch.tensor(plip.preprocess.std).view(1, 3, 1, 1)
    grey = ((tpix.float() - pixels.float()).abs() * std * 255).mean().item()
    with torch.inference_mode():
        mine_on_theirs = plip.image_features(tpix).float().numpy()
    others = cosine_rows(ours, np.roll(ours, 1, axis=0))
    print(f"cosine pathgls vs TRIDENT per patch: {summary(cosine_rows(ours, theirs))}")
    print(
        "cosine same ViT here on TRIDENT-style pixels vs TRIDENT (model/version numerics only): "
        f"{summary(cosine_rows(mine_on_theirs, theirs))}"
    )
    print(f"cosine pathgls between neighbouring patches (scale of the above): {summary(others)}")
    print(f"mean |difference| of the 224 px inputs: {grey:.2f} grey levels (of 255)")
    reader.close()


if __name__ == "__main__":
    main()
