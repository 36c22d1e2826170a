"""pathgls vs TRIDENT's ``extract_patch_features`` and CLAM's feature script: ViT-B/32, one view.

Issue #17's target: pathgls ≥ 1.2× TRIDENT on the same coordinates and weights, on the same
machine, in one run, at the same batch size, reader workers and torch thread count.

What is compared:

* the slide: the 20480² px 40× JPEG pyramid **without a 20× level** that
  ``bench_extract_io.py`` builds from the shared CMU slide (reused from ``--workdir``; 0.25
  µm/px in its Aperio description, 219 tissue patches; ``--pyramid-size 32768`` builds a larger
  one with 549), or ``--slide``, and the same patch coordinates for every tool (the tissue grid
  of ``pathgls extract``'s defaults, or ``--n`` patches spread over the slide; on the pyramid
  20× patches of 512 px, i.e. 1024 px at level 0);
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
* CLAM (``benchmarks/_clam_child.py``, run with ``--clam-src`` and ``--clam-python``): CLAM's
  own ``extract_features_fp.py`` — its main block, ``Whole_Slide_Bag_FP``, its DataLoader
  (batch 256 and no worker processes on a CPU, as CLAM sets them; ``--clam-batch-size``) and
  ``compute_w_loader`` — with ``models.get_encoder`` replaced by the same checkpoint's vision
  tower and the TRIDENT rows' preprocessing (``--clam-transforms clam``: CLAM's own bilinear
  ``get_eval_transforms``); coordinates in CLAM's coords format (``patch_level`` = pathgls's
  read level, ``patch_size`` = its read size, so 1024 px at level 0 on the pyramid, resized by
  the transforms); one cold process per round, as a user runs it: its in-call time is the one
  CLAM prints, and its wall and peak RSS are measured like the CLI's;
* forward-only speeds: the ViT on ready ``(B, 3, 224, 224)`` tensors in each environment
  (transformers differs: TRIDENT pins ``transformers<5``), and pathgls's
  ``encode_highres`` on the same patches already in memory (preprocessing + forward);
* data only: each tool's read + resize + normalise path without the model, in one thread
  (pathgls: ``stream_patches(workers=0)`` + the encoder's preprocessing; TRIDENT: its
  ``WSIPatcherDataset`` with the same transforms), i.e. the CPU each patch costs besides the ViT;
* features: both must cover the same patches in the same order; their cosine per patch is
  printed, with the same ViT run on TRIDENT-style pixels in this process (isolates the
  resampling from everything else) and the mean grey-level difference of the two 224 px inputs.

Making the CLAM checkout (outside the repository; GPL-3.0, called, never copied): a snapshot
of github.com/mahmoodlab/CLAM (``git clone`` or ``git archive``) in e.g. ``/work/peers/clam-src``;
it needs torch, torchvision, h5py, pandas, tqdm, openslide and timm (only imported: the model is
injected), so the main environment runs it, or a venv with its pin::

    python -m venv --system-site-packages /work/peers/clam-env
    /work/peers/clam-env/bin/pip install timm==0.9.8

Making the TRIDENT environment (outside the repository; TRIDENT's licence is CC BY-NC-ND, so it
is installed and called, never copied; it pins ``timm==0.9.16`` and ``transformers<5``, which
go into the venv only — the main environment is left as it is)::

    git clone https://github.com/mahmoodlab/TRIDENT /work/trident-src   # or export a snapshot
    python -m venv --system-site-packages /work/trident-env
    /work/trident-env/bin/pip install -e /work/trident-src

or, keeping the main environment's numpy as well (what the 2026-12-02 runs used: TRIDENT
0.3.0, transformers 4.57.6, timm 0.9.16, tokenizers 0.22.2, huggingface_hub 0.36.2,
opencv-python-headless 4.11.0.86, geopandas 1.2.0 in the venv; torch, numpy shared)::

    /work/trident-env/bin/pip install transformers==4.57.6 timm==0.9.16 geopandas \
        "opencv-python-headless<4.12" numpy==<the main environment's>
    /work/trident-env/bin/pip uninstall numpy   # the shared one is then used
    /work/trident-env/bin/pip install -e /work/trident-src --no-deps

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
       [--slide SLIDE | --pyramid-size 20480] (default: the 40× pyramid without a 20× level)
       [--trident-python /work/trident-env/bin/python] [--workers 1] [--batch-size 16]
       [--clam-src DIR [--clam-python PY] [--clam-batch-size 0] [--clam-transforms trident]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CHILD = HERE / "_trident_child.py"
CLAM_CHILD = HERE / "_clam_child.py"


OURS = "pathgls: encode_patches (the extract loop), one 224 px view"
CLI = "pathgls extract, the user's command (in-call rate it prints)"
MEM = "pathgls forward only: encode_highres on patches in memory"
FWD = "ViT forward only on 224 px tensors (main env)"
DATA = "pathgls data only: read in this thread + preprocess to 224"
TRI = "TRIDENT extract_patch_features (its env; one run per round)"
CLAM = "CLAM extract_features_fp.py, its own loop (a cold process)"


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


def write_clam_coords(path: Path, *, coords: np.ndarray, plan, reader, slide: Path) -> None:
    """The coordinates as a CLAM coords file (``create_patches_fp.py``'s layout).

    CLAM's ``Whole_Slide_Bag_FP`` reads ``patch_size`` px at ``patch_level`` at each level-0
    ``(x, y)``: the level and read size of pathgls's plan, so both read the same field of view
    (on the 40× pyramid without a 20× level: 1024 px at level 0 for a 20× 512 px patch; CLAM's
    transforms then resize it to the model input).
    """
    import h5py

    level = int(plan.level)
    down = float(reader.level_downsamples[level])
    with h5py.File(path, "w") as f:
        d = f.create_dataset("coords", data=np.asarray(coords, dtype=np.int64))
        d.attrs["patch_size"] = int(plan.read_size)
        d.attrs["patch_level"] = level
        d.attrs["downsample"] = np.array([down, down])
        d.attrs["downsampled_level_dim"] = np.array(reader.level_dimensions[level])
        d.attrs["level_dim"] = np.array(reader.level_dimensions[level])
        d.attrs["name"] = slide.stem
        d.attrs["save_path"] = str(path.parent)


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


def _child_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONPATH", None)  # a peer's child must not see this checkout
    return env


def run_trident(args, *, slide: Path, coords_h5: Path, weights: Path, out: Path) -> dict:
    """Run the TRIDENT child; returns its JSON (with ``wall_s`` and ``rss_mb`` of its whole
    process), or ``{"skipped": reason}``."""
    from _rounds import timed_process

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
        *(("--cold",) if args.trident_cold else ()),
    ]
    try:
        wall, text, rss = timed_process(cmd, env=_child_env(), timeout=args.timeout)
    except RuntimeError as e:
        return {"skipped": f"TRIDENT child failed: {str(e)[-600:]}"}
    return {**json.loads(text.strip().splitlines()[-1]), "wall_s": wall, "rss_mb": rss}


def run_clam(args, *, slide: Path, coords_h5: Path, weights: Path, out: Path) -> dict:
    """Run CLAM's feature script through ``_clam_child.py`` (its whole process: start-up, the
    model's load, CLAM's loop, its files); returns the child's JSON with ``wall_s`` and
    ``rss_mb``, or ``{"skipped": reason}``."""
    from _rounds import timed_process

    cmd = [
        *(args.clam_python, str(CLAM_CHILD), "--clam-src", str(args.clam_src)),
        *("--slide", str(slide), "--coords", str(coords_h5), "--weights", str(weights)),
        *("--out", str(out), "--threads", str(args.threads)),
        *("--batch-size", str(args.clam_batch_size), "--transforms", args.clam_transforms),
    ]
    try:
        wall, text, rss = timed_process(cmd, env=_child_env(), timeout=args.timeout)
    except RuntimeError as e:
        return {"skipped": f"CLAM child failed: {str(e)[-600:]}"}
    return {**json.loads(text.strip().splitlines()[-1]), "wall_s": wall, "rss_mb": rss}


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
    ap.add_argument(
        "--pyramid-size",
        type=int,
        default=20480,
        help="side of the 40x pyramid built when no --slide (32768: 549 tissue patches)",
    )
    ap.add_argument("--trident-python", default="/work/trident-env/bin/python")
    ap.add_argument(
        "--trident-cold",
        action="store_true",
        help="TRIDENT as a user runs it: one extraction per process, no warm-up or extra passes "
        "(its wall and in-call rate are then a user's run, like the CLI's and CLAM's)",
    )
    ap.add_argument("--clam-src", type=Path, default=None, help="a CLAM checkout (runs CLAM)")
    ap.add_argument("--clam-python", default=sys.executable, help="the Python CLAM runs under")
    ap.add_argument(
        "--clam-batch-size", type=int, default=0, help="CLAM's --batch_size (0: its own, 256)"
    )
    ap.add_argument(
        "--clam-transforms",
        choices=("trident", "clam"),
        default="trident",
        help="the TRIDENT rows' preprocessing, or CLAM's get_eval_transforms (bilinear)",
    )
    ap.add_argument("--timeout", type=int, default=900, help="seconds for a peer's child")
    ap.add_argument(
        "--skip",
        type=lambda v: v.split(","),
        default=[],
        help="rows left out, comma-separated: memory, forward, data (the diagnostic rows)",
    )
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
    slide = args.slide or build(args.workdir, size=args.pyramid_size)
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
    clam_h5 = run_dir / f"{slide.stem}_clam.h5"
    write_clam_coords(clam_h5, coords=coords, plan=plan, reader=reader, slide=slide)
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
    clam_runs: list[dict] = []
    procs: dict[str, tuple[list[float], list[float]]] = {}  # label -> (wall s, peak RSS MB)

    def peer(runs: list[dict], label: str, fn) -> tuple[float, float | None]:
        t = fn(args, slide=slide, coords_h5=label_h5[label], weights=weights, out=peer_out(label))
        runs.append(t)
        if "skipped" in t:
            print(f"  {label}: {t['skipped']}", flush=True)
            return float("nan"), float("nan")
        procs.setdefault(label, ([], []))[0].append(t["wall_s"])
        procs[label][1].append(t["rss_mb"])
        return t["seconds"], t["patches_per_s"]

    label_h5 = {TRI: coords_h5, CLAM: clam_h5}

    def peer_out(label: str) -> Path:
        if label == TRI:
            return run_dir  # TRIDENT writes <out>/features_<encoder>/<slide>.h5 (overwritten)
        return run_dir / f"clam-{len(clam_runs)}"

    def cli() -> tuple[float, float | None]:
        out = run_dir / f"cli-{len(procs.get(CLI, ([], []))[0])}"
        wall, text, rss = timed_process(
            [
                *(sys.executable, "-m", "pathgls", "extract", str(slide), "--out", str(out)),
                *("--encoder", f"hf:{weights}", "--batch-size", str(args.batch_size)),
                *("--workers", str(args.workers), "--torch-threads", str(args.threads)),
            ]
        )
        procs.setdefault(CLI, ([], []))[0].append(wall)
        procs[CLI][1].append(rss)
        m = re.search(r"encoded \((?:[^()]*, )?([\d.]+) patches/s\)", text)
        # the patch stage alone (reading, encoding, writing): what the peers, handed ready
        # coordinates, time in-call; the overall rate also carries tiling and hashing
        st = re.search(r"(\d+) encoded .* ([\d.]+) s of it reading, encoding and writing", text)
        cli_stage.append(int(st.group(1)) / float(st.group(2)) if st else float("nan"))
        return wall, float(m.group(1)) if m else None

    cli_stage: list[float] = []
    contenders = {
        OURS: lambda: timed_call(pathgls),
        MEM: lambda: timed_call(in_memory),
        FWD: lambda: timed_call(bare),
        DATA: lambda: timed_call(data_only),
    }
    for key, row in (("memory", MEM), ("forward", FWD), ("data", DATA)):
        if key in args.skip:
            contenders.pop(row)
    if not args.n:
        contenders[CLI] = cli
    if Path(args.trident_python).exists():
        contenders[TRI] = lambda: peer(tri_runs, TRI, run_trident)
    else:
        print(f"TRIDENT: not run — no TRIDENT Python at {args.trident_python} (see the docstring)")
    if args.clam_src is not None:
        contenders[CLAM] = lambda: peer(clam_runs, CLAM, run_clam)
    else:
        print("CLAM: not run — no --clam-src (a CLAM checkout; see the docstring)")
    pathgls()  # warm-up of the in-process paths
    series = run_rounds(contenders, rounds=args.rounds, n_items=n)
    ours = np.concatenate(feats)
    print(f"\n{'measurement (median [min–max] of rounds)':62s} {'patches/s':>22s} load")
    for k, v in series.items():
        print(f"{k:62s} {spread(v.rates):>22s} {spread(v.loads, '{:.1f}')}")
    print(f"whole processes, median [min–max] of rounds: {'wall s':>18s} {'peak RSS MB':>18s}")
    for k, (wall, rss) in procs.items():
        print(f"  {k[:44]:44s} {spread(wall):>18s} {spread(rss, '{:.0f}'):>18s}")
    print(
        "  (the CLI and CLAM processes are a user's run; TRIDENT's too with --trident-cold, else "
        "its child also warms up and times its data-only and forward-only rows)"
    )
    if cli_stage:
        print(f"{'CLI patch stage only (after tiling), patches/s':62s} {spread(cli_stage):>22s}")
    print("ratios within each round:")
    pairs = ((OURS, FWD), (CLI, OURS), (CLI, FWD), (OURS, TRI), (CLI, TRI), (OURS, CLAM))
    for a, b in (*pairs, (CLI, CLAM)):
        if a in series and b in series:
            print(f"  {a[:40]} / {b[:40]}: {spread(ratios(series[a], series[b]), '{:.2f}')}×")
    for peer_label in (TRI, CLAM):
        if cli_stage and peer_label in series:
            rates = series[peer_label].rates
            stage = [x / y for x, y in zip(cli_stage, rates, strict=True) if y > 0]
            print(f"  CLI patch stage / {peer_label[:40]}: {spread(stage, '{:.2f}')}×")
    for peer_label, name in ((TRI, "TRIDENT"), (CLAM, "CLAM")):
        if CLI in procs and peer_label in procs and len(procs[CLI][0]) == len(procs[peer_label][0]):
            r = [x / y for x, y in zip(procs[peer_label][0], procs[CLI][0], strict=True)]
            shown = spread(r, "{:.2f}")
            print(f"  whole process, wall of {name} / wall of pathgls extract: {shown}×")

    import h5py
    import transformers

    def same_patches(path: str, who: str) -> np.ndarray:
        with h5py.File(path, "r") as f:
            theirs = np.asarray(f["features"][:], dtype=np.float32)
            their_coords = np.asarray(f["coords"][:], dtype=np.int64)
        same = theirs.shape[0] == ours.shape[0] == n and np.array_equal(their_coords, coords)
        print(
            f"\nfeatures: pathgls {ours.shape}, {who} {theirs.shape}; same patches in the same "
            f"order: {'yes' if same else 'NO'}"
        )
        if not same:
            reader.close()
            raise SystemExit(f"{who} and pathgls did not produce features for the same patches")
        return theirs

    # patches that run past the slide's edge are padded differently by each reader
    inside = np.all(coords + plan.patch_size_level0 <= np.asarray(reader.dimensions), axis=1)

    def versus(theirs: np.ndarray, who: str) -> None:
        c = cosine_rows(ours, theirs)
        print(f"cosine pathgls vs {who} per patch: {summary(c)}")
        if 0 < inside.sum() < n:
            print(
                f"  the {inside.sum()} patches inside the slide: {summary(c[inside])}; the "
                f"{n - inside.sum()} past its edge: {summary(c[~inside])}"
            )

    others = cosine_rows(ours, np.roll(ours, 1, axis=0))
    clam = clam_runs[-1] if clam_runs else {"skipped": "no --clam-src"}
    if "skipped" in clam:
        print(f"CLAM comparison: not run — {clam['skipped']}")
    else:
        loader = clam["loader_kwargs"] or "no worker processes"
        print(
            f"\nCLAM's own loop (torch {clam['torch']}, transformers {clam['transformers']}, "
            f"device {clam['device']}; batch {clam['batch_size']}, DataLoader {loader}; "
            f"transforms {args.clam_transforms}) under {args.clam_python}"
        )
        versus(same_patches(clam["features_path"], "CLAM"), "CLAM")
    tri = tri_runs[-1] if tri_runs else {"skipped": "not installed"}
    if "skipped" in tri:
        print(f"TRIDENT comparison: not run — {tri['skipped']}")
        print(f"cosine pathgls between neighbouring patches (scale): {summary(others)}")
        reader.close()
        return
    print(
        f"\nTRIDENT {tri['trident']} (torch {tri['torch']}, transformers {tri['transformers']}; "
        f"here: torch {torch.__version__}, transformers {transformers.__version__})"
        + (
            "; a user's run (--trident-cold): its forward alone not timed"
            if tri.get("forward_per_s") is None
            else f"; its ViT forward in its env {tri['forward_per_s']:.1f}/s vs here "
            + (f"{statistics.median(series[FWD].rates):.1f}/s" if FWD in series else "(skipped)")
            + " (the version difference, measured)"
        )
    )
    theirs = same_patches(tri["features_path"], "TRIDENT")
    tstyle = trident_style_pixels(slide, coords, plan, plip.preprocess)
    tpix = plip.preprocess(tstyle, device=device, dtype=plip.dtype)
    std = torch.tensor(plip.preprocess.std).view(1, 3, 1, 1)
    grey = ((tpix.float() - pixels.float()).abs() * std * 255).mean().item()
    with torch.inference_mode():
        mine_on_theirs = plip.image_features(tpix).float().numpy()
    versus(theirs, "TRIDENT")
    print(
        "cosine same ViT here on TRIDENT-style pixels vs TRIDENT (model/version numerics only): "
        f"{summary(cosine_rows(mine_on_theirs, theirs))}"
    )
    print(f"cosine pathgls between neighbouring patches (scale of the above): {summary(others)}")
    print(f"mean |difference| of the 224 px inputs: {grey:.2f} grey levels (of 255)")
    reader.close()


if __name__ == "__main__":
    main()
