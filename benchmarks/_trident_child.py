"""TRIDENT side of ``bench_trident.py``: run inside the separate TRIDENT environment.

It imports TRIDENT (installed there, never vendored: its licence is CC BY-NC-ND) and never
pathgls, so it needs nothing of this repository. Given a slide, a TRIDENT coords file and a
Hugging Face ``CLIPModel`` directory, it wraps the model's vision tower and projection as a
TRIDENT ``CustomInferenceEncoder`` (TRIDENT's own ``get_eval_transforms``: bicubic resize of the
short side to the model input, center crop, ``ToTensor``, the checkpoint's mean/std), runs
``OpenSlideWSI.extract_patch_features`` once to warm up and ``--repeats`` more times, times
its patch dataset alone (read, resize, transforms; one thread) and the wrapped model's
forward alone on ready tensors, and prints one JSON line: the median patches/s of each over
its runs (and every run), the feature file of the last run and the versions used.

Not a pathgls module and not imported by the tests; ``bench_trident.py`` starts it as
``<trident-python> benchmarks/_trident_child.py --slide ... --coords ... --weights ...``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description="TRIDENT extract_patch_features timing")
    ap.add_argument("--slide", required=True)
    ap.add_argument("--coords", required=True, help="TRIDENT coords .h5")
    ap.add_argument("--weights", required=True, help="Hugging Face CLIPModel directory")
    ap.add_argument("--out", required=True, help="directory for TRIDENT's feature file")
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--workers", type=int, required=True, help="DataLoader workers (0: none)")
    ap.add_argument("--threads", type=int, required=True, help="torch threads")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--cold",
        action="store_true",
        help="a user's run: one extraction, no warm-up, no data-only or forward-only passes",
    )
    args = ap.parse_args()

    import h5py
    import torch
    import transformers
    import trident
    from _peer_tower import clip_vision_tower
    from torchvision.transforms import InterpolationMode
    from trident import OpenSlideWSI, WSIPatcherDataset
    from trident.patch_encoder_models import CustomInferenceEncoder
    from trident.patch_encoder_models.utils.transform_utils import get_eval_transforms

    torch.set_num_threads(args.threads)
    tower, size = clip_vision_tower(args.weights)
    proc = json.loads((Path(args.weights) / "preprocessor_config.json").read_text())

    encoder = CustomInferenceEncoder(
        enc_name="clip-vit-b32-random",
        model=tower,
        transforms=get_eval_transforms(
            proc["image_mean"],
            proc["image_std"],
            target_img_size=size,
            center_crop=True,
            interpolation=InterpolationMode.BICUBIC,
        ),
        precision=torch.float32,
    )
    wsi = OpenSlideWSI(slide_path=args.slide, lazy_init=False, max_workers=args.workers)

    def run() -> str:
        return wsi.extract_patch_features(
            patch_encoder=encoder,
            coords_path=args.coords,
            save_features=args.out,
            device="cpu",
            batch_limit=args.batch_size,
        )

    if not args.cold:
        run()  # warm-up (first forward, first worker start)
    runs = []
    for _ in range(1 if args.cold else args.repeats):
        t0 = time.perf_counter()
        path = run()
        runs.append(time.perf_counter() - t0)
    best = statistics.median(runs)
    with h5py.File(path, "r") as f:
        n = int(f["features"].shape[0])
    common = {
        "n_features": n,
        "features_path": str(path),
        "trident": trident.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "torch_threads": torch.get_num_threads(),
        "workers": args.workers,
    }
    rates = {"patches_per_s": n / best, "seconds": best, "run_seconds": runs}
    if args.cold:  # a user's run: nothing else is timed
        print(json.dumps({**rates, "forward_per_s": None, "data_per_s": None, **common}))
        return
    # data only: TRIDENT's dataset (read, resize to 512, its transforms) in this thread, no model
    with h5py.File(args.coords, "r") as f:
        attrs, coords = dict(f["coords"].attrs), f["coords"][:]
    dataset = WSIPatcherDataset(
        wsi.create_patcher(
            patch_size=int(attrs["patch_size"]),
            src_mag=attrs["level0_magnification"],
            dst_mag=attrs["target_magnification"],
            custom_coords=coords,
            pil=True,
        ),
        encoder.eval_transforms,
    )
    data_runs = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for i in range(len(dataset)):
            dataset[i]
        data_runs.append(time.perf_counter() - t0)
    data = statistics.median(data_runs)
    # forward only: the same module on ready (n, 3, size, size) tensors, same batches
    pixels = torch.randn((n, 3, size, size), generator=torch.Generator().manual_seed(0))

    def forward() -> None:
        with torch.inference_mode():
            for s in range(0, n, args.batch_size):
                encoder(pixels[s : s + args.batch_size])

    forward()
    fwd_runs = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        forward()
        fwd_runs.append(time.perf_counter() - t0)
    fwd = statistics.median(fwd_runs)
    print(
        json.dumps({**rates, "forward_per_s": n / fwd, "data_per_s": len(dataset) / data, **common})
    )


if __name__ == "__main__":
    main()
