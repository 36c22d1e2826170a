"""`pathgls extract` as a user runs it, beside the internal path, the bare ViT forward and a
CLAM/TRIDENT-style loop, on the same slide, weights and threads, in alternating rounds.

Contenders (each round runs all of them once, the order rotating; see ``_rounds.py``):

* **CLI**: ``python -m pathgls extract SLIDE --out <fresh dir> --encoder hf:<weights>`` with
  the command's defaults (one view per patch; 2 reader threads, batch 32, torch's threads) —
  the whole process (start-up, slide hashing and tiling, encoder build, bag writing) and the
  in-call patches/s it prints;
* **peer**: ``_peer_loop.py``, a CLAM/TRIDENT-style loop (OpenSlide + Pillow + torchvision
  transforms + DataLoader with 2 workers + ``CLIPModel.get_image_features`` + HDF5) over the
  same tissue coordinates, whole process and in-call (it is given the coordinates: its
  tissue detection is not timed; the CLI's is);
* **internal**: ``pathgls.features.extract.encode_patches`` in this process on the same
  coordinates (warm model, no bag);
* **forward**: the encoder's ViT forward alone on the same patches preprocessed to 224 px.

Weights: a random PLIP-size CLIP ViT-B/32 in Hugging Face format
(``pathgls.testing.save_random_hf_clip(size="plip")``): the real architecture, for timing only;
``--size tiny`` uses the tiny random CLIP instead (the same code paths with a model that costs
little: what is left is reading, resizing, start-up and writing, where the tools differ).
``--open-clip`` gives the CLI contenders a random open_clip ViT-B-32 instead, saved as a
safetensors weights file (``--encoder open_clip:ViT-B-32:<file>``; the peer loop, which reads
Hugging Face weights, is then skipped).

Slides: ``--slide`` (repeatable); default the shared CMU-1 small region (20×, 14 tissue
patches) and a 32768² px 40× pyramid without a 20× level tiled from it
(``pathgls.testing.synthetic.write_mosaic_40x``; 549 tissue patches), built in ``--workdir``.

``--pathgls-src DIR`` runs the CLI from another checkout (e.g. the main branch, for a
before/after) and ``--cli-arg`` adds options to it (``--cli-arg=--windows``). ``--before-src
DIR`` adds a contender **CLI-before**: the same command from another checkout, in the same
rounds (a before/after of the CLI, start-up, process wall and peak RSS included).

Usage: python benchmarks/bench_extract_cli.py [--rounds 3] [--slide S ...] [--workdir DIR]
       [--pathgls-src DIR] [--before-src DIR] [--cli-arg ARG ...]
       [--skip peer,internal,forward]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CMU = ROOT.parent / "shared" / "data" / "slides" / "cmu-1-small-region.svs"
sys.path.insert(0, str(HERE))

from _rounds import load_note, ratios, run_rounds, spread, timed_call, timed_process  # noqa: E402

BIG = 32768


def big_slide(workdir: Path) -> Path:
    """The 40× pyramid without a 20× level, tiled from the CMU region (built once)."""
    import openslide

    from pathgls.testing.synthetic import write_mosaic_40x

    out = workdir / f"cmu-40x-no20x-{BIG}.svs"
    if not out.exists():
        with openslide.OpenSlide(str(CMU)) as s:
            rgb = np.asarray(s.read_region((0, 0), 0, s.dimensions).convert("RGB"))
        write_mosaic_40x(out, rgb=rgb, size=BIG, level_factor=4)
    return out


def open_clip_weights(workdir: Path) -> str:
    """A random open_clip ViT-B-32 as a safetensors file (written once); its encoder spec."""
    out = workdir / "open-clip-vit-b-32.safetensors"
    if not out.exists():
        import open_clip
        import torch
        from safetensors.torch import save_file

        torch.manual_seed(0)
        model = open_clip.create_model("ViT-B-32")
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out))
    return f"open_clip:ViT-B-32:{out}"


def bench_slide(slide: Path, args: argparse.Namespace, weights: Path, encoder) -> None:
    import torch

    from pathgls.config import load_config
    from pathgls.features.extract import encode_patches
    from pathgls.tiling import make_grid, open_slide, stream_patches

    cfg = load_config(encoder={"name": f"hf:{weights}"})  # the CLI's defaults
    reader = open_slide(slide)
    grid = make_grid(reader, cfg.tiling)
    plan, coords = grid.plan, np.asarray(grid.coords, dtype=np.int64)
    n = len(coords)
    run_dir = Path(tempfile.mkdtemp(prefix="bench-cli-", dir=args.workdir))
    np.save(run_dir / "coords.npy", coords)
    print(
        f"\n== {slide.name}: {n} tissue patches (read {plan.read_size} px at level {plan.level} "
        f"→ {plan.patch_size} px); batch {cfg.stream.batch_size}, reader workers "
        f"{cfg.stream.workers}, torch threads {torch.get_num_threads()}; {load_note()}"
    )
    count = iter(range(10**6))

    def cli_from(src: Path, label: str) -> Callable[[], tuple[float, float | None]]:
        env = {**os.environ, "PYTHONPATH": str(src)}

        def cli() -> tuple[float, float | None]:
            out = run_dir / f"cli{next(count)}"
            cmd = [sys.executable, "-m", "pathgls", "extract", str(slide), "--out", str(out)]
            wall, text, rss = timed_process(
                [*cmd, "--encoder", args.cli_encoder or f"hf:{weights}", *args.cli_arg],
                env=env,
                cwd=str(run_dir),  # not a checkout: `-m pathgls` would import it first
            )
            m = re.search(r"encoded \((?:[^()]*, )?([\d.]+) patches/s\)", text)
            procs.setdefault(label, ([], []))[0].append(wall)
            procs[label][1].append(rss)
            shutil.rmtree(out, ignore_errors=True)
            return wall, float(m.group(1)) if m else None

        return cli

    def peer() -> tuple[float, float | None]:
        out = run_dir / f"peer{next(count)}.h5"
        wall, text, rss = timed_process(
            [
                sys.executable,
                str(HERE / "_peer_loop.py"),
                "--slide",
                str(slide),
                "--coords",
                str(run_dir / "coords.npy"),
                "--read",
                str(plan.patch_size_level0),
                "--size",
                str(plan.patch_size),
                "--weights",
                str(weights),
                "--out",
                str(out),
                "--batch-size",
                str(cfg.stream.batch_size),
                "--workers",
                str(cfg.stream.workers),
            ]
        )
        procs.setdefault("peer", ([], []))[0].append(wall)
        procs["peer"][1].append(rss)
        out.unlink(missing_ok=True)
        return wall, json.loads(text.strip().splitlines()[-1])["patches_per_s"]

    def internal() -> None:
        for _ in encode_patches(
            reader=reader, coords=coords, plan=plan, encoder=encoder, config=cfg1
        ):
            pass

    cfg1 = load_config(
        encoder={"name": "bench", "window_size": plan.patch_size, "window_stride": plan.patch_size}
    )
    patches = np.concatenate(
        [b.images for b in stream_patches(reader, coords, plan, batch_size=64, workers=0)]
    )
    pixels = encoder.preprocess(patches, device=torch.device("cpu"), dtype=encoder.dtype)
    del patches

    def forward() -> None:
        with torch.inference_mode():
            for s in range(0, n, cfg.stream.batch_size):
                encoder.image_features(pixels[s : s + cfg.stream.batch_size])

    procs: dict[str, tuple[list[float], list[float]]] = {}  # label -> (wall s, peak RSS MB)
    contenders = {
        "CLI": cli_from(args.pathgls_src, "CLI"),
        **({"CLI-before": cli_from(args.before_src, "CLI-before")} if args.before_src else {}),
        "peer": peer,
        "internal": lambda: timed_call(internal),
        "forward": lambda: timed_call(forward),
    }
    for skip in [*args.skip, *(["peer"] if args.cli_encoder else [])]:
        contenders.pop(skip, None)
    internal()  # warm-up of the in-process paths (first forward)
    s = run_rounds(contenders, rounds=args.rounds, n_items=n)
    reader.close()
    print(f"\n{'':10s} {'patches/s in-call':>26s} {'process s':>22s} {'peak RSS MB':>14s} load")
    for k, v in s.items():
        wall, rss = procs.get(k, ([], []))
        print(
            f"{k:10s} {spread(v.rates, '{:.2f}'):>26s} {spread(wall):>22s} "
            f"{spread(rss, '{:.0f}'):>14s} {spread(v.loads, '{:.1f}')}"
        )
    print("ratios within each round, median [min–max]:")
    pairs = [
        ("CLI", "peer", "CLI / peer loop, in-call"),
        ("CLI", "CLI-before", "CLI / CLI-before, in-call"),
        ("CLI", "internal", "CLI in-call / internal"),
        ("CLI", "forward", "CLI in-call / bare forward"),
        ("internal", "forward", "internal / bare forward"),
        ("internal", "peer", "internal / peer loop, in-call"),
    ]
    for a, b, label in pairs:
        if a in s and b in s:
            print(f"  {label:34s} {spread(ratios(s[a], s[b]), '{:.2f}')}×")
    whole = [
        ("peer", "CLI", "CLI / peer loop, whole process"),
        ("CLI-before", "CLI", "CLI / CLI-before, whole process"),
    ]
    for a, b, label in whole:
        if a in procs and b in procs:
            r = [x / y for x, y in zip(procs[a][0], procs[b][0], strict=True)]
            print(f"  {label:34s} {spread(r, '{:.2f}')}× (wall of {a} / wall of {b})")
    if "CLI-before" in procs:
        d = [b - a for a, b in zip(procs["CLI"][1], procs["CLI-before"][1], strict=True)]
        print(f"  {'peak RSS, CLI-before − CLI':34s} {spread(d, '{:.0f}')} MB")
    shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "pathgls-io")
    ap.add_argument("--slide", type=Path, action="append", default=[])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pathgls-src", type=Path, default=ROOT)
    ap.add_argument("--before-src", type=Path, default=None, help="a CLI-before contender")
    ap.add_argument("--cli-arg", action="append", default=[])
    ap.add_argument("--skip", type=lambda s: s.split(","), default=[])
    ap.add_argument("--size", choices=("plip", "tiny"), default="plip", help="random CLIP size")
    ap.add_argument("--open-clip", action="store_true", help="the CLI runs open_clip ViT-B-32")
    args = ap.parse_args()
    if not CMU.exists() and not args.slide:
        print(f"skipped: no {CMU} (the shared data) and no --slide")
        return
    from pathgls.config import load_config
    from pathgls.encoders import build_encoder
    from pathgls.testing import save_random_hf_clip

    args.workdir.mkdir(parents=True, exist_ok=True)
    weights = save_random_hf_clip(args.workdir / args.size, size=args.size)
    encoder = build_encoder(load_config(encoder={"name": f"hf:{weights}"}).encoder)
    args.cli_encoder = open_clip_weights(args.workdir) if args.open_clip else None
    slides = args.slide or [CMU, big_slide(args.workdir)]
    print(
        f"CLI from {args.pathgls_src} {' '.join(args.cli_arg)}; weights: random "
        f"{'PLIP-size ViT-B/32' if args.size == 'plip' else 'tiny CLIP'} (timing only); "
        f"CLI encoder {args.cli_encoder or 'the same (hf)'}; "
        f"{load_note()}"
    )
    for slide in slides:
        bench_slide(slide, args, weights, encoder)


if __name__ == "__main__":
    main()
