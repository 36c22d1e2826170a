"""Extraction at the decode limit: a 40× JPEG pyramid without a 20× level, read as 20× patches.

The slide: a 20480 × 20480 px Aperio pyramid at 0.25 µm/px (40×) whose level-0 pixels are the
real CMU-1 region (``../shared/data/slides/cmu-1-small-region.svs``, 20×) upsampled 2×
(nearest) and tiled as a mirrored mosaic; JPEG tiles of 256 px, YCbCr 4:2:0 at quality 90;
levels 40×, 10×, 2.5× (factor 4, so there is **no 20× level**: every 512 px 20× patch is a
1024 px read at level 0 reduced 2×, the path most scanners' files take). Built once with
``pathgls.testing.synthetic.write_mosaic_40x(..., level_factor=4)`` into ``--workdir``.

Measured in one run on the same patch coordinates (the tissue grid of the slide, ``--n``
patches spread over it; ``--n-vit`` of them for the ViT-B/32 rows), as patches per second:

* plain loop: ``OpenSlide.read_region(1024)`` at level 0 → RGB → Pillow Lanczos to 512 px,
  one thread (what a user writes in five lines);
* decode ceilings: OpenSlide reading of tile-aligned native 512 px regions at level 0 (no
  resize) and pathgls's scaled JPEG decode alone (1 thread; 2 reader threads; 2 processes);
* pathgls I/O + preprocessing: ``pathgls.features.extract.encode_patches`` (the loop ``pathgls
  extract`` runs: reader threads filling a ring of batch arrays, windows cut and normalised
  into a reused buffer) with a "null" encoder — the tiny CLIP's preprocessing and a model that
  costs nothing (it returns each window's first normalised pixel, as a GPU model costs the
  CPU nothing) — 9 HighRes windows per patch, and with the tiny CLIP itself;
* the same with readers in 2 processes (torch DataLoader) instead of threads;
* full-size ViT-B/32 (PLIP architecture, random weights: speed only) with one 224 px view per
  patch (window = patch, resized by the encoder's batched preprocessing) and with the default
  9 windows, each against the encoder's forward-only speed on the same patches in memory.

* the user's command: ``python -m pathgls extract SLIDE --encoder hf:<tiny> --tissue-threshold 0``
  (every patch of the slide's grid, defaults otherwise), its in-call patches/s and process wall.

Every row runs once per round, in alternating rounds whose order rotates (``_rounds.py``): the
figures are median [min–max] over rounds with the load average, ratios are taken within a
round, no best-of-N. The headline uses the defaults (one view per patch, 2 reader workers,
torch's threads) against the best decode ceiling of any kind, 1 thread included.

Targets (issue #17): null-encoder extraction ≥ 3× the plain loop and ≥ 80% of the decode
ceiling; ViT-B/32 one view ≥ 90% of forward-only.

Usage: python benchmarks/bench_extract_io.py [--workdir DIR] [--n 512] [--n-vit 64] [--rounds 3]
       [--skip-vit]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CMU = ROOT.parent / "shared" / "data" / "slides" / "cmu-1-small-region.svs"
SIZE = 20480
PLAIN = "plain loop (read 1024 → RGB → Lanczos 512), 1 thread"
DEFAULT = "pathgls default: null encoder, one view, 2 reader workers"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rounds import load_note, ratios, run_rounds, spread, timed_call, timed_process  # noqa: E402


def build(workdir: Path, *, size: int = SIZE) -> Path:
    """Write (or reuse) the ``size`` × ``size`` 40× pyramid without a 20× level (0.25 µm/px:
    OpenSlide reads ``mpp-x`` and ``objective-power`` from its Aperio description)."""
    import openslide

    from pathgls.testing.synthetic import write_mosaic_40x

    out = workdir / f"cmu-40x-no20x-{size}.svs"
    if out.exists():
        return out
    with openslide.OpenSlide(str(CMU)) as s:
        w, h = s.dimensions
        rgb = np.asarray(s.read_region((0, 0), 0, (w, h)).convert("RGB"))
    write_mosaic_40x(out, rgb=rgb, size=size, level_factor=4)  # written whole or not at all
    return out


def process_loader(slide: Path, coords: np.ndarray, plan, batch_size: int, workers: int):
    """Batches of patches read in ``workers`` processes (torch DataLoader, each worker opens
    the slide itself), yielded as uint8 tensors in order."""
    import torch.utils.data as tud

    from pathgls.tiling import open_slide
    from pathgls.tiling.stream import read_patch

    class Batches(tud.Dataset):
        def __init__(self) -> None:
            self.reader = None  # opened in each worker process

        def __len__(self) -> int:
            return -(-len(coords) // batch_size)

        def __getitem__(self, i: int):
            import torch

            if self.reader is None:
                self.reader = open_slide(slide)
            chunk = coords[i * batch_size : (i + 1) * batch_size]
            out = np.empty((len(chunk), plan.patch_size, plan.patch_size, 3), dtype=np.uint8)
            for j, (x, y) in enumerate(chunk):
                view = out[j]
                patch = read_patch(self.reader, (int(x), int(y)), plan, out=view)
                if patch is not view:
                    view[...] = patch
            return torch.from_numpy(out)

    return tud.DataLoader(
        Batches(), batch_size=None, num_workers=workers, prefetch_factor=2, persistent_workers=True
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "pathgls-io")
    ap.add_argument("--n", type=int, default=512, help="patches per I/O measurement")
    ap.add_argument("--n-vit", type=int, default=64, help="patches per ViT-B/32 measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (median kept)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--skip-vit", action="store_true", help="no full-size ViT-B/32 rows")
    args = ap.parse_args()

    import openslide
    import torch
    from PIL import Image

    from pathgls.config import load_config
    from pathgls.encoders import build_encoder, encode_highres
    from pathgls.encoders.base import ClipEncoder
    from pathgls.features.extract import encode_patches
    from pathgls.testing import save_random_hf_clip
    from pathgls.tiling import make_grid, open_slide, stream_patches
    from pathgls.tiling.resolution import plan_read

    args.workdir.mkdir(parents=True, exist_ok=True)
    slide = build(args.workdir)
    reader = open_slide(slide)
    cfg = load_config(tiling={"tissue_threshold": 0.0})
    grid = make_grid(reader, cfg.tiling)
    plan = grid.plan
    step = max(1, len(grid.coords) // args.n)
    coords = grid.coords[::step][: args.n]
    n = len(coords)
    print(
        f"slide: {slide.name}, {SIZE}² px at 0.25 µm/px, levels {reader.level_dimensions}; "
        f"plan: level {plan.level}, read {plan.read_size} px → {plan.patch_size} px "
        f"({plan.resample}); {n} patches; torch threads {torch.get_num_threads()}"
    )
    osr = openslide.OpenSlide(str(slide))
    threads = torch.get_num_threads()

    def plain() -> None:
        for x, y in coords:
            region = osr.read_region((int(x), int(y)), 0, (1024, 1024)).convert("RGB")
            np.asarray(region.resize((512, 512), Image.Resampling.LANCZOS, reducing_gap=2.0))

    def native() -> None:
        for x, y in coords:
            np.asarray(osr.read_region((int(x), int(y)), 0, (512, 512)))

    def scaled() -> None:
        for x, y in coords:
            reader.read_region_scaled((int(x), int(y)), 0, (1024, 1024), 2)

    def stream(workers: int) -> None:
        for _ in stream_patches(
            reader, coords, plan, batch_size=args.batch_size, workers=workers, reuse_buffers=True
        ):
            pass

    # readers in worker processes (torch DataLoader, started once and warmed: a slide's
    # extraction pays the start-up once), batches sent through shared memory
    loader = process_loader(slide, coords, plan, args.batch_size, 2)
    for _ in loader:
        pass

    def in_processes(workers: int, encoder=None) -> None:
        assert workers == loader.num_workers
        for images in loader:
            if encoder is not None:
                encode_highres(encoder, images, window_size=224, window_stride=224)

    tiny_dir = save_random_hf_clip(args.workdir / "tiny-clip")
    tiny = build_encoder(load_config(encoder={"name": f"hf:{tiny_dir}"}).encoder)

    def pathgls(encoder, window: int, workers: int, how=plan, at=None) -> None:
        # the extraction hot path itself (what `pathgls extract` runs for each slide)
        cfg = load_config(
            encoder={"name": "bench", "window_size": window, "window_stride": window},
            stream={"batch_size": args.batch_size, "workers": workers},
        )
        for _ in encode_patches(
            reader=reader,
            coords=coords if at is None else at,
            plan=how,
            encoder=encoder,
            config=cfg,
        ):
            pass

    # I/O + preprocessing only: the tiny encoder's own preprocessing, and a "model" that costs
    # nothing (a pixel mean would add ~0.3 ms per patch of model compute on this CPU; the
    # 2-layer 32-wide tiny ViT ~32 MACs per input value)
    null = ClipEncoder(
        name="null",
        dim=3,
        image_size=tiny.image_size,
        precision=tiny.precision,
        device="cpu",
        model_id="null",
        revision=None,
        random_weights=True,
        image_features=lambda px: px[:, :, 0, 0].float(),
        text_features=lambda texts: torch.zeros((len(texts), 3)),
        preprocess=tiny.preprocess,
    )

    def one_thread(fn):
        def run() -> None:
            torch.set_num_threads(1)
            try:
                fn()
            finally:
                torch.set_num_threads(threads)

        return run

    lanczos = plan_read(reader, load_config(tiling={"resample": "lanczos"}).tiling)
    whole = plan.patch_size  # one view per patch: `pathgls extract`'s default
    contenders = {
        PLAIN: plain,
        "ceiling: native aligned 512 px reads, 1 thread": native,
        "ceiling: scaled JPEG decode, 1 thread": scaled,
        "ceiling: stream_patches (scaled decode), 2 reader threads": lambda: stream(2),
        "ceiling: scaled decode in 2 reader processes": lambda: in_processes(2),
        DEFAULT: lambda: pathgls(null, whole, 2),
        "pathgls, null encoder, one view, 1 reader worker": lambda: pathgls(null, whole, 1),
        "pathgls, null encoder, 9 windows, 2 reader workers": lambda: pathgls(null, 224, 2),
        "pathgls, null encoder, 9 windows, 2 reader workers, torch 1 thread": one_thread(
            lambda: pathgls(null, 224, 2)
        ),
        "null encoder, 9 windows, 2 reader processes, torch 1 thread": one_thread(
            lambda: in_processes(2, null)
        ),
        "pathgls before (OpenSlide + Lanczos), tiny encoder, one view": lambda: pathgls(
            tiny, whole, 2, lanczos
        ),
        "pathgls, tiny encoder, one view, 2 reader workers (default)": lambda: pathgls(
            tiny, whole, 2
        ),
        "pathgls, tiny encoder, 9 windows, 2 reader workers": lambda: pathgls(tiny, 224, 2),
    }
    print(f"rows in {args.rounds} alternating rounds; {load_note()}")
    rows = run_rounds(
        {k: (lambda fn=fn: timed_call(fn)) for k, fn in contenders.items()},
        rounds=args.rounds,
        n_items=n,
    )
    # the user's command on the same slide: every patch of its grid at tissue threshold 0
    cli_cmd = [
        sys.executable,
        "-m",
        "pathgls",
        "extract",
        str(slide),
        "--encoder",
        f"hf:{tiny_dir}",
        "--tissue-threshold",
        "0",
    ]
    cli: list[tuple[float, float]] = []
    for r in range(args.rounds):
        out = args.workdir / f"cli-{r}"
        shutil.rmtree(out, ignore_errors=True)
        wall, text, _rss = timed_process([*cli_cmd, "--out", str(out)])
        m = re.search(r"encoded \((?:[^()]*, )?([\d.]+) patches/s\)", text)
        cli.append((wall, float(m.group(1)) if m else float("nan")))
        shutil.rmtree(out, ignore_errors=True)
        print(f"  round {r + 1}: CLI: {wall:.1f} s, {cli[-1][1]:.1f} patches/s in-call")

    vit: dict[str, tuple[list[float], list[float]]] = {}
    if not args.skip_vit:
        plip = build_encoder(
            load_config(
                encoder={"name": f"hf:{save_random_hf_clip(args.workdir / 'plip', size='plip')}"}
            ).encoder
        )
        # fewer patches: a ViT-B forward costs ~70 ms per patch, ~10× that with 9 windows
        at = coords[:: max(1, n // args.n_vit)][: args.n_vit]
        nv = len(at)
        patches = np.concatenate(
            [b.images.copy() for b in stream_patches(reader, at, plan, batch_size=64, workers=0)]
        )
        for label, window in (("one 224 px view per patch", whole), ("9 HighRes windows", 224)):

            def forward(window: int = window) -> None:
                for s in range(0, nv, args.batch_size):
                    encode_highres(
                        plip,
                        patches[s : s + args.batch_size],
                        window_size=window,
                        window_stride=window,
                    )

            forward()  # warm-up
            v = run_rounds(
                {
                    "forward": lambda f=forward: timed_call(f),
                    "extraction": lambda w=window: timed_call(lambda: pathgls(plip, w, 2, at=at)),
                },
                rounds=args.rounds,
                n_items=nv,
            )
            vit[label] = (v["forward"].rates, ratios(v["extraction"], v["forward"]))

    base = rows[PLAIN]
    print(f"\n{'measurement (median [min–max] of rounds)':66s} {'patches/s':>20s} {'× plain':>19s}")
    for k, v in rows.items():
        print(f"{k:66s} {spread(v.rates):>20s} {spread(ratios(v, base), '{:.2f}'):>19s}")
    walls = [w for w, _ in cli]
    print(
        f"{'CLI pathgls extract (tiny encoder, default one view), in-call':66s} "
        f"{spread([r for _, r in cli]):>20s}; process {spread(walls)} s for {len(grid)} patches"
    )
    for label, (fwd, share) in vit.items():
        print(
            f"ViT-B/32 (random weights), {label}: forward only {spread(fwd)}/s, extraction "
            f"{spread(share, '{:.0%}')} of it"
        )

    # the headline: defaults (one view, 2 reader workers, torch's threads), and the ceiling is
    # the best decode row of any kind (1 thread included)
    ceiling_rows = {k: v for k, v in rows.items() if k.startswith("ceiling: s")}
    best = max(ceiling_rows, key=lambda k: statistics.median(ceiling_rows[k].rates))
    default = rows[DEFAULT]
    print(f"\nheadline (defaults); {load_note()}:")
    print(f"  {DEFAULT} vs plain loop: {spread(ratios(default, base), '{:.2f}')}× (≥ 3×)")
    print(
        f"  {DEFAULT} vs the best decode ceiling ({best}): "
        f"{spread(ratios(default, rows[best]), '{:.0%}')} (≥ 80%)"
    )
    for label, (_fwd, share) in vit.items():
        print(f"  ViT-B/32 {label}: extraction {spread(share, '{:.0%}')} of forward-only (≥ 90%)")
    print("  CLI vs peers: benchmarks/bench_extract_cli.py")
    osr.close()
    reader.close()


if __name__ == "__main__":
    main()
