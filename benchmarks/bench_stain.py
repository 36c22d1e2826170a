"""Stain benchmark: batched torch Macenko perturbation against a per-image torchstain loop.

Tiles: the most tissue-rich 512 px regions at level 0 of the shared H&E slides
``cmu-1-small-region.svs`` and ``tcga-cr-7395-01a-01-ts1.svs``, on grids of stride 256 px
(neighbours may overlap by half a tile: the slides hold fewer than 64 tissue-rich disjoint
tiles), read through :mod:`pathgls.tiling`; tissue = every channel's OD ≥ β.

Contenders, each on the same tiles and the same perturbation factors:

* pathgls: :func:`pathgls.attacks.perturb_stain` on the whole batch (fitting included) — what
  ``pathgls attack stain`` and the Stability module run;
* torchstain numpy / torch: per image, torchstain's Macenko matrix computation (OD, tissue
  pixels, covariance eigenvectors, angle percentiles, least-squares concentrations, max
  concentrations — the private ``__compute_matrices`` that ``fit`` and ``normalize`` both
  call, called once) of its ``numpy`` and its ``torch`` backend, then the same perturbation:
  concentrations scaled by the same factors, ``Io·exp(−HE·C)``, clipped, rounded;
* torchstain augmentor: its public ``MacenkoAugmentor`` (torch and numpy backends), per image
  ``fit`` then ``augment`` (its own random factors: what a torchstain user runs to augment).

Every contender runs at 1 and at 2 threads (torch via ``torch.set_num_threads``, numpy's BLAS
via threadpoolctl when installed), in alternating rounds whose order rotates (no best-of-N);
figures are median [min–max] over rounds with the load average at each run, and ratios are
taken within a round. Stain matrices must equal torchstain numpy's (max abs difference
≤ 1e-3).

Usage: python benchmarks/bench_stain.py [--tiles 64] [--rounds 3] [--threads 1,2]
    [--precision float32] [--max-batch N]
"""

from __future__ import annotations

import argparse
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SLIDES = [
    ROOT.parent / "shared" / "data" / "slides" / "cmu-1-small-region.svs",
    ROOT.parent / "shared" / "data" / "slides" / "tcga-cr-7395-01a-01-ts1.svs",
]
TILE = 512


def tissue_level(*, io: float = 240.0, beta: float = 0.15) -> int:
    """Largest uint8 value whose OD = −log((I + 1) / Io) is ≥ β."""
    levels = np.arange(256)
    return int(levels[-np.log((levels + 1) / io) >= beta].max())


def read_tiles(n: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The ``n`` most tissue-rich tiles on the slides' level-0 grids of stride ``TILE / 2``.

    Tissue fraction = share of a tile's pixels with every channel's OD ≥ β (Macenko's tissue),
    from a summed-area table over the whole level 0; the chosen tiles are then read one by one.
    """
    from pathgls.tiling import open_slide

    level = tissue_level()
    candidates: list[tuple[float, Path, int, int]] = []
    for path in SLIDES:
        reader = open_slide(path)
        try:
            width, height = reader.dimensions
            tissue = (reader.read_region((0, 0), 0, (width, height)) <= level).all(axis=-1)
        finally:
            reader.close()
        sat = np.zeros((height + 1, width + 1), dtype=np.int64)
        sat[1:, 1:] = tissue.cumsum(axis=0).cumsum(axis=1)
        for y in range(0, height - TILE + 1, TILE // 2):
            for x in range(0, width - TILE + 1, TILE // 2):
                area = sat[y + TILE, x + TILE] - sat[y, x + TILE] - sat[y + TILE, x] + sat[y, x]
                candidates.append((area / TILE**2, path, x, y))
    if len(candidates) < n:
        raise SystemExit(f"only {len(candidates)} tiles in the shared slides, {n} asked")
    chosen = sorted(candidates, key=lambda c: (-c[0], c[1].name, c[3], c[2]))[:n]
    tiles, ids = [], []
    for _, path, x, y in chosen:
        reader = open_slide(path)
        try:
            tiles.append(reader.read_region((x, y), 0, (TILE, TILE)))
        finally:
            reader.close()
        ids.append(f"{path.stem}@{x},{y}")
    return np.stack(tiles), ids, np.array([c[0] for c in chosen])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (median kept)")
    ap.add_argument("--threads", default="1,2", help="thread counts to run every contender at")
    ap.add_argument("--precision", choices=["float32", "float64"], default="float32")
    ap.add_argument("--max-batch", type=int, default=None, help="images per pass (None: auto)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not all(p.exists() for p in SLIDES):
        print(f"skipped: the shared slides are absent ({SLIDES[0].parent})")
        return

    import sys

    import torch
    import torchstain

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _rounds import load_note, ratios, run_rounds, spread, timed_call

    from pathgls.attacks import StainConfig, perturb_stain, stain_factors

    t0 = time.perf_counter()
    tiles, ids, fractions = read_tiles(args.tiles)
    print(
        f"tiles: {len(tiles)} × {TILE} px level 0 from "
        f"{', '.join(sorted({i.split('@')[0] for i in ids}))}; Macenko tissue fraction "
        f"mean {fractions.mean():.2f}, min {fractions.min():.2f}; read in "
        f"{time.perf_counter() - t0:.1f} s"
    )
    cfg = StainConfig(precision=args.precision, max_batch=args.max_batch)
    print(
        f"torch {torch.__version__}, numpy {np.__version__}, torchstain "
        f"{version('torchstain')}; precision {cfg.precision}, max_batch "
        f"{cfg.max_batch or 'auto'}; {load_note()}"
    )
    factors = stain_factors(image_ids=ids, seed=args.seed, config=cfg).numpy()
    np_compute = torchstain.normalizers.MacenkoNormalizer(
        backend="numpy"
    )._NumpyMacenkoNormalizer__compute_matrices
    t_compute = torchstain.normalizers.MacenkoNormalizer(
        backend="torch"
    )._TorchMacenkoNormalizer__compute_matrices
    chw = [torch.from_numpy(t).permute(2, 0, 1).contiguous() for t in tiles]
    ref: dict[str, np.ndarray] = {}

    def numpy_backend() -> None:
        out = np.empty_like(tiles)
        stains = np.empty((len(tiles), 3, 2))
        for i, tile in enumerate(tiles):
            he, conc, _max_c = np_compute(tile, cfg.io, cfg.alpha, cfg.beta)
            conc *= factors[i][:, None]
            rebuilt = np.clip(cfg.io * np.exp(-he @ conc), 0, 255)
            out[i] = np.rint(rebuilt.T).reshape(tile.shape).astype(np.uint8)
            stains[i] = he
        ref["images"], ref["stains"] = out, stains

    def torch_backend() -> None:
        f = torch.from_numpy(factors).float()
        for i, tile in enumerate(chw):
            he, conc, _max_c = t_compute(tile, cfg.io, cfg.alpha, cfg.beta)
            rebuilt = torch.clamp(cfg.io * torch.exp(-he @ (conc * f[i][:, None])), 0, 255)
            torch.round(rebuilt.T).reshape(TILE, TILE, 3).to(torch.uint8)

    def augmentor(backend: str):
        aug = torchstain.augmentors.MacenkoAugmentor(backend=backend, sigma1=0.2, sigma2=0.2)
        images = chw if backend == "torch" else list(tiles)

        def run() -> None:
            for img in images:
                aug.fit(img)
                aug.augment()

        return run

    result: dict[str, object] = {}

    def batched() -> None:
        result["r"] = perturb_stain(images=tiles, image_ids=ids, seed=args.seed, config=cfg)

    contenders = {
        "pathgls perturb_stain (batched)": batched,
        "torchstain numpy, per image": numpy_backend,
        "torchstain torch, per image": torch_backend,
        "torchstain MacenkoAugmentor torch": augmentor("torch"),
        "torchstain MacenkoAugmentor numpy": augmentor("numpy"),
    }
    ours = "pathgls perturb_stain (batched)"
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        limits = _blas_limits(threads)
        batched()  # warm-up at this thread count
        print(f"\n== {threads} thread(s); {load_note()}")
        series = run_rounds(
            {k: (lambda fn=fn: timed_call(fn)) for k, fn in contenders.items()},
            rounds=args.rounds,
            n_items=len(tiles),
        )
        if limits is not None:
            limits.unregister()
        for k, v in series.items():
            print(f"  {k:34s} {spread(v.rates):>22s} tiles/s  load {spread(v.loads, '{:.1f}')}")
        for k in contenders:
            if k != ours:
                r = ratios(series[ours], series[k])
                print(f"  pathgls / {k:34s} {spread(r, '{:.2f}')}×")
    r = result["r"]
    stain_diff = float(np.abs(r.stain_matrices.numpy() - ref["stains"]).max())
    pixel_diff = np.abs(r.images.astype(np.int16) - ref["images"].astype(np.int16))
    print(f"\nmax |stain matrix - torchstain numpy's|: {stain_diff:.2e} (target <= 1e-3)")
    print(
        f"images: max |pixel - torchstain numpy path's| {int(pixel_diff.max())}, pixels "
        f"differing {(pixel_diff > 0).mean():.2e}; {int((~r.transformed).sum())} tiles flagged"
    )


def _blas_limits(threads: int):
    """threadpoolctl's limit on numpy's BLAS threads (None when it is not installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(threads)


if __name__ == "__main__":
    main()
