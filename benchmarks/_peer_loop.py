"""A CLAM/TRIDENT-style feature loop, run as its own process by ``bench_extract_cli.py``.

What those tools do per patch, written the way they do it (no pathgls import): a torch
``Dataset`` that reads each patch with ``OpenSlide.read_region`` at level 0, converts to RGB,
resizes to the target patch size with Pillow (bicubic), then the model transforms (torchvision:
bicubic resize to the model input, center crop, ``ToTensor``, the checkpoint's mean/std); a
``DataLoader`` with ``--workers`` processes; the Hugging Face ``CLIPModel``'s image features in
``inference_mode``; one HDF5 file with ``features`` and ``coords``. It is **not** TRIDENT or
CLAM (neither is installable here: they install from GitHub and TRIDENT pins
``transformers<5``), only their loop; figures from it are labelled so.

Prints one JSON line: the in-call seconds (DataLoader + model + writing, after loading the
model) and patches/s. Not imported by the tests.

Usage: python benchmarks/_peer_loop.py --slide S --coords C.npy --read 1024 --size 512
       --weights DIR --out F.h5 [--batch-size 32] [--workers 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slide", required=True)
    ap.add_argument("--coords", required=True, help=".npy of level-0 (x, y)")
    ap.add_argument("--read", type=int, required=True, help="level-0 side read per patch")
    ap.add_argument("--size", type=int, required=True, help="patch side after the resize")
    ap.add_argument("--weights", required=True, help="Hugging Face CLIPModel directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    args = ap.parse_args()

    import h5py
    import numpy as np
    import openslide
    import torch
    from PIL import Image
    from torchvision import transforms
    from transformers import CLIPModel

    if args.threads:
        torch.set_num_threads(args.threads)
    model = CLIPModel.from_pretrained(args.weights, local_files_only=True).eval()
    proc = json.loads((Path(args.weights) / "preprocessor_config.json").read_text())
    side = int(model.config.vision_config.image_size)
    tf = transforms.Compose(
        [
            transforms.Resize(side, interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.CenterCrop(side),
            transforms.ToTensor(),
            transforms.Normalize(proc["image_mean"], proc["image_std"]),
        ]
    )
    coords = np.load(args.coords)

    class Patches(torch.utils.data.Dataset):
        def __init__(self) -> None:
            self.wsi = None  # opened in each worker

        def __len__(self) -> int:
            return len(coords)

        def __getitem__(self, i: int):
            if self.wsi is None:
                self.wsi = openslide.OpenSlide(args.slide)
            x, y = (int(v) for v in coords[i])
            img = self.wsi.read_region((x, y), 0, (args.read, args.read)).convert("RGB")
            if args.read != args.size:
                img = img.resize((args.size, args.size), Image.Resampling.BICUBIC)
            return tf(img)

    t0 = time.perf_counter()
    loader = torch.utils.data.DataLoader(
        Patches(), batch_size=args.batch_size, num_workers=args.workers
    )
    feats = []
    with torch.inference_mode():
        for batch in loader:
            out = model.get_image_features(pixel_values=batch)
            feats.append((out if torch.is_tensor(out) else out.pooler_output).numpy())
    with h5py.File(args.out, "w") as f:
        f["features"] = np.concatenate(feats)
        f["coords"] = coords
    seconds = time.perf_counter() - t0
    print(
        json.dumps({"seconds": seconds, "patches_per_s": len(coords) / seconds, "n": len(coords)})
    )


if __name__ == "__main__":
    main()
