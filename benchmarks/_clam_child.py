"""CLAM side of ``bench_trident.py``: CLAM's own feature script, run on the benchmark's weights.

CLAM (github.com/mahmoodlab/CLAM; GPL-3.0) is not a package: its feature script
``extract_features_fp.py`` parses its arguments at import and builds its encoder with
``models.get_encoder`` (ResNet-50, UNI or CONCH). This child puts a CLAM checkout
(``--clam-src``) first on ``sys.path``, replaces ``models.get_encoder`` with one that returns the
benchmark's model — the Hugging Face ``CLIPModel``'s vision tower and projection, as in
``_trident_child.py`` — and its transforms, then runs the script itself as ``__main__``
(``runpy``) with CLAM's own arguments on a one-row CSV. So what runs is CLAM's code:
its main block (encoder → ``eval`` → ``to(device)``, ``loader_kwargs`` for the device,
``openslide.open_slide``), its ``Whole_Slide_Bag_FP`` (``read_region(coord, patch_level,
(patch_size, patch_size))`` → RGB → transforms, opening the coords file per item), its
``DataLoader(batch_size=--batch_size, **loader_kwargs)`` — on a CPU no worker processes and
batch 256 unless ``--batch-size`` is given — and its ``compute_w_loader`` (``inference_mode``,
``save_hdf5`` per batch), then its ``torch.save`` of the ``.pt`` file. Nothing of CLAM is
copied here.

What was adapted (nothing inside CLAM's loop):

* the encoder: ``models.get_encoder`` is replaced before the script runs (the script's
  ``from models import get_encoder`` then binds the replacement); ``--model_name`` must be one of
  CLAM's choices, so ``resnet50_trunc`` is passed and ignored;
* the transforms (``--transforms``): ``trident`` (default) is the preprocessing the TRIDENT
  comparison uses — bicubic resize of the short side to the model input, center crop,
  ``ToTensor``, the checkpoint's mean/std; ``clam`` is CLAM's own ``get_eval_transforms`` with the
  checkpoint's mean/std (``Resize`` with torchvision's default, bilinear, and no crop);
* torch's threads are set to ``--threads`` (CLAM sets none);
* the coordinates come from the parent in CLAM's coords format (``coords`` with ``patch_level``
  and ``patch_size`` read at that level, plus the attributes ``create_patches_fp.py`` writes),
  and the slide from ``--slide`` (CLAM's ``--data_slide_dir`` + ``--slide_ext``).

The in-call time is the one CLAM prints itself ("computing features for … took … s": from
opening the slide to the last batch written). CLAM's console output goes to stderr; the last
line on stdout is one JSON object: in-call seconds and patches/s per run, the feature file and
the versions used. ``--runs N`` lists the slide N times in the CSV (CLAM's loop over slides,
the model built once): the first run is cold as a user's, later ones warm.

Not a pathgls module and not imported by the tests; ``bench_trident.py`` starts it as
``<python> benchmarks/_clam_child.py --clam-src DIR --slide S --coords C.h5 --weights DIR ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import runpy
import shutil
import statistics
import sys
from pathlib import Path


class _Tee(io.TextIOBase):
    """Writes to stderr and keeps a copy (CLAM's prints, to read its own timing)."""

    def __init__(self) -> None:
        self.copy = io.StringIO()

    def write(self, s: str) -> int:
        self.copy.write(s)
        return sys.stderr.write(s)

    def flush(self) -> None:
        sys.stderr.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description="CLAM extract_features_fp.py on given weights")
    ap.add_argument("--clam-src", required=True, type=Path, help="a CLAM checkout")
    ap.add_argument("--slide", required=True, type=Path)
    ap.add_argument("--coords", required=True, type=Path, help="CLAM coords .h5")
    ap.add_argument("--weights", required=True, help="Hugging Face CLIPModel directory")
    ap.add_argument("--out", required=True, type=Path, help="CLAM's --feat_dir")
    ap.add_argument("--threads", type=int, required=True, help="torch threads")
    ap.add_argument("--batch-size", type=int, default=0, help="CLAM's --batch_size (0: its 256)")
    ap.add_argument("--transforms", choices=("trident", "clam"), default="trident")
    ap.add_argument("--runs", type=int, default=1, help="times the slide is listed (1: cold)")
    args = ap.parse_args()

    script = args.clam_src / "extract_features_fp.py"
    if not script.is_file():
        raise SystemExit(f"no {script}: --clam-src must be a CLAM checkout")
    sys.path.insert(0, str(args.clam_src))

    import torch
    import transformers
    from _peer_tower import clip_vision_tower
    from torchvision import transforms as T

    torch.set_num_threads(args.threads)
    import models  # CLAM's package (from --clam-src)
    from utils.transform_utils import get_eval_transforms  # CLAM's

    proc = json.loads((Path(args.weights) / "preprocessor_config.json").read_text())
    built: dict[str, object] = {}

    def get_encoder(model_name: str, target_img_size: int = 224):
        """Stands in for CLAM's ``models.get_encoder``: the benchmark's model and transforms."""
        tower, size = clip_vision_tower(args.weights)
        if target_img_size != size:
            raise SystemExit(f"CLAM asks for {target_img_size} px, the model takes {size}")

        mean, std = proc["image_mean"], proc["image_std"]
        if args.transforms == "clam":
            tf = get_eval_transforms(mean=mean, std=std, target_img_size=size)
        else:
            bicubic = T.InterpolationMode.BICUBIC
            tf = T.Compose(
                [
                    T.Resize(size, interpolation=bicubic),
                    T.CenterCrop(size),
                    T.ToTensor(),
                    T.Normalize(mean, std),
                ]
            )
        built["transforms"] = repr(tf)
        return tower, tf

    models.get_encoder = get_encoder

    slide_id, ext = args.slide.stem, args.slide.suffix
    h5_dir = args.out / "coords"
    (h5_dir / "patches").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.coords, h5_dir / "patches" / f"{slide_id}.h5")
    csv = args.out / "slides.csv"
    csv.write_text("slide_id\n" + f"{slide_id}{ext}\n" * args.runs)
    argv = [
        *("--data_h5_dir", str(h5_dir), "--data_slide_dir", str(args.slide.parent)),
        *("--slide_ext", ext, "--csv_path", str(csv), "--feat_dir", str(args.out / "features")),
        *("--model_name", "resnet50_trunc", "--target_patch_size", "224", "--no_auto_skip"),
        *(("--batch_size", str(args.batch_size)) if args.batch_size else ()),
    ]
    sys.argv = [str(script), *argv]
    tee = _Tee()
    with contextlib.redirect_stdout(tee):
        ns = runpy.run_path(str(script), run_name="__main__")
    printed = re.findall(r"computing features for .* took ([\d.eE+-]+) s", tee.copy.getvalue())
    took = [float(s) for s in printed]
    if len(took) != args.runs:
        raise SystemExit(f"CLAM printed {len(took)} timings for {args.runs} runs")
    path = args.out / "features" / "h5_files" / f"{slide_id}.h5"
    import h5py

    with h5py.File(path, "r") as f:
        n = int(f["features"].shape[0])
    print(
        json.dumps(
            {
                "patches_per_s": n / took[0],  # the first run: cold, as a user's
                "seconds": took[0],
                "run_seconds": took,
                "warm_patches_per_s": n / statistics.median(took[1:]) if len(took) > 1 else None,
                "n_features": n,
                "features_path": str(path),
                "batch_size": ns["args"].batch_size,
                "loader_kwargs": dict(ns["loader_kwargs"]),
                "device": str(ns["device"]),
                "transforms": built.get("transforms"),
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "torch_threads": torch.get_num_threads(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
