"""Where grounding looks: HighRes window embeddings of a feature bag or of an ROI image.

A :class:`WindowSource` is the one shape :func:`pathgls.grounding.score.ground` reads: a feature
bag opened lazily from disk (:func:`open_bag_source`), or an ROI image cut into windows and
embedded on the spot (:func:`roi_source`, :func:`load_roi_image`, :func:`read_slide_region`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image

from pathgls.config import TilingConfig
from pathgls.encoders.base import Encoder
from pathgls.encoders.highres import encode_highres, window_coords
from pathgls.errors import EncoderMismatchError, GroundingError
from pathgls.features.bags import BagMeta, open_bag, require_windows


@dataclass
class WindowSource:
    """HighRes window embeddings to ground in, and where each window lies.

    Attributes:
        windows: ``(N, W, D)`` array-like (numpy, torch or a lazily read h5py dataset).
        coords: ``(N, 2)`` top-left of each patch, in ``space`` pixels.
        patch_size: Patch side in encoder-input pixels.
        patch_size_level0: Patch side in ``space`` pixels.
        window_size: Window side in encoder-input pixels.
        window_offsets: ``(W, 2)`` window top-left ``(x, y)`` inside a patch, in patch pixels.
        kind: ``bag`` or ``roi``.
        name: Slide name or image path.
        space: ``level0`` (slide level-0 pixels) or ``image`` (pixels of the ROI image).
        encoder: Encoder name the embeddings come from.
        encoder_model_id: Its model id (repo, arch:weights or path).
        encoder_revision: Weights revision when known, else "".
        dim: Embedding size D.
        random_weights: The embeddings come from a random-weight test model.
        path: File the source was read from, when any.
    """

    windows: Any
    coords: np.ndarray
    patch_size: int
    patch_size_level0: int
    window_size: int
    window_offsets: np.ndarray
    kind: Literal["bag", "roi"]
    name: str
    space: Literal["level0", "image"]
    encoder: str
    encoder_model_id: str
    encoder_revision: str
    dim: int
    random_weights: bool = False
    path: str = ""

    def __len__(self) -> int:
        return int(self.coords.shape[0])

    @property
    def scale(self) -> float:
        """``space`` pixels per encoder-input pixel."""
        return self.patch_size_level0 / self.patch_size

    def patch_boxes(self, index: np.ndarray | Sequence[int]) -> np.ndarray:
        """``(K, 4)`` boxes ``(x, y, w, h)`` of patches, in ``space`` pixels."""
        xy = np.asarray(self.coords, dtype=np.int64)[np.asarray(index, dtype=np.int64)]
        return np.concatenate([xy, np.full_like(xy, self.patch_size_level0)], axis=1)

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary for evidence."""
        return {
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "space": self.space,
            "n_patches": len(self),
            "n_windows": int(self.window_offsets.shape[0]),
            "patch_size_level0": self.patch_size_level0,
            "encoder": self.encoder,
        }


@contextlib.contextmanager
def open_bag_source(
    path: str | os.PathLike[str], *, slide_size: tuple[int, int] | None = None
) -> Iterator[WindowSource]:
    """A validated bag as a :class:`WindowSource`; windows are read from disk chunk by chunk.

    Args:
        path: The bag.
        slide_size: Level-0 ``(width, height)`` of its slide, when known: coordinates outside
            it are refused.

    Raises:
        BagError: the bag is invalid or incomplete (:func:`~pathgls.features.bags.validate_bag`),
            or has no HighRes windows (extracted without `--windows`).
    """
    with open_bag(path, slide_size=slide_size) as f:
        meta = BagMeta.from_attrs(f.attrs)
        require_windows(meta, path)  # a one-view bag: name the flag that makes windows
        windows = f["window_features"]
        yield WindowSource(
            windows=windows,
            coords=np.asarray(f["coords"][:], dtype=np.int64),
            patch_size=int(meta.patch_size),
            patch_size_level0=int(meta.patch_size_level0),
            window_size=int(meta.window_size),
            window_offsets=window_coords(
                int(meta.patch_size), meta.window_size, meta.window_stride
            ),
            kind="bag",
            name=meta.slide_name,
            space="level0",
            encoder=meta.encoder,
            encoder_model_id=meta.encoder_model_id,
            encoder_revision=meta.encoder_revision,
            dim=int(windows.shape[2]),
            random_weights=bool(meta.random_weights),
            path=str(path),
        )


def roi_source(
    *,
    encoder: Encoder,
    image: np.ndarray,
    name: str,
    window_size: int = 224,
    window_stride: int = 224,
    origin: tuple[float, float] = (0.0, 0.0),
    scale: float = 1.0,
    space: Literal["level0", "image"] = "image",
    max_side: int = 16384,
) -> WindowSource:
    """Cut an ROI image into HighRes windows and embed them: each window becomes a "patch".

    Args:
        encoder: The encoder whose image tower embeds the windows.
        image: ``(H, W, 3)`` uint8 RGB at the resolution the encoder should see (20×).
        name: What to call the ROI in evidence.
        window_size: Window side in pixels; windows overlapping the edge are shifted inward.
        window_stride: Step between windows.
        origin: ``space`` coordinates of the image's top-left (a slide region's level-0 x, y).
        scale: ``space`` pixels per image pixel (level-0 px per ROI px for a slide region).
        space: ``image`` for a plain image, ``level0`` for a region read from a slide.
        max_side: Larger images are refused (extract a bag for them).

    Raises:
        GroundingError: not an RGB uint8 image, too small or too large.
    """
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise GroundingError(f"an ROI must be (H, W, 3) uint8 RGB, got {img.shape} {img.dtype}")
    h, w = int(img.shape[0]), int(img.shape[1])
    if min(h, w) < 16:
        raise GroundingError(f"ROI {name} is {w}×{h} px; at least 16 px per side are needed")
    if max(h, w) > max_side:
        raise GroundingError(
            f"ROI {name} is {w}×{h} px, over roi_max_side={max_side}; extract a feature bag "
            "of the slide instead (pathgls extract)"
        )
    offsets = window_coords((h, w), window_size, window_stride)
    win, _ = encode_highres(
        encoder, img[None], window_size=window_size, window_stride=window_stride
    )
    side = min(window_size, h, w)
    coords = np.rint(np.asarray(origin, dtype=np.float64) + offsets * scale).astype(np.int64)
    return WindowSource(
        windows=win.reshape(-1, 1, win.shape[-1]),
        coords=coords,
        patch_size=side,
        patch_size_level0=max(1, round(side * scale)),
        window_size=side,
        window_offsets=np.zeros((1, 2), dtype=np.int64),
        kind="roi",
        name=name,
        space=space,
        encoder=encoder.name,
        encoder_model_id=encoder.model_id,
        encoder_revision=encoder.revision or "",
        dim=encoder.dim,
        random_weights=encoder.random_weights,
    )


def load_roi_image(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a PNG/JPEG/TIFF ROI as ``(H, W, 3)`` uint8 RGB (alpha composited on white).

    Raises:
        GroundingError: the file cannot be read as an image.
    """
    try:
        with Image.open(path) as im:
            im.load()
            if im.mode in ("RGBA", "LA", "P"):
                rgba = im.convert("RGBA")
                bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
                return np.array(Image.alpha_composite(bg, rgba).convert("RGB"), dtype=np.uint8)
            return np.array(im.convert("RGB"), dtype=np.uint8)
    except (OSError, ValueError, Image.DecompressionBombError) as e:
        raise GroundingError(f"cannot read the ROI image {path}: {e}") from e


def check_encoder(source: WindowSource, encoder: Encoder) -> None:
    """Refuse to compare a bag's image embeddings with another encoder's text tower.

    The two match when their names or model ids agree, their dimensions agree and (when both
    are known) their weight revisions agree.

    Raises:
        EncoderMismatchError: they do not match.
    """
    same_model = source.encoder == encoder.name or (
        bool(source.encoder_model_id) and source.encoder_model_id == encoder.model_id
    )
    rev_a, rev_b = source.encoder_revision, encoder.revision or ""
    problems = []
    if not same_model:
        problems.append(
            f"bag encoder {source.encoder!r} ({source.encoder_model_id or '?'}) != "
            f"text encoder {encoder.name!r} ({encoder.model_id})"
        )
    if source.dim != encoder.dim:
        problems.append(f"bag dimension {source.dim} != encoder dimension {encoder.dim}")
    if rev_a and rev_b and rev_a != rev_b:
        problems.append(f"weights revision {rev_a} != {rev_b}")
    if problems:
        raise EncoderMismatchError(
            f"{source.name}: the image embeddings and the text tower must come from the same "
            f"model ({'; '.join(problems)}); pass --encoder {source.encoder} or re-extract the "
            "bag with this encoder"
        )


def read_slide_region(
    path: str | os.PathLike[str],
    *,
    x: int,
    y: int,
    width: int,
    height: int,
    target_mpp: float = 0.5,
    mpp: float | None = None,
    tiling: TilingConfig | None = None,
) -> tuple[np.ndarray, float]:
    """A level-0 region of a slide at ``target_mpp`` µm/px, for ROI mode.

    Read by the same path as a feature bag's patches (:meth:`pathgls.features.session.
    SlideSession.read_region`): the pyramid level the tiling plan picks, reduced by its filter.

    Args:
        path: The slide.
        x, y, width, height: The region in level-0 pixels.
        target_mpp: µm/px of the image (``tiling``'s magnification wins when given).
        mpp: Level-0 µm/px given by the user.
        tiling: The ``[tiling]`` section (level choice, filter); default: its defaults at
            ``target_mpp``.

    Returns:
        ``(image, scale)``: the RGB region and the level-0 pixels per image pixel.

    Raises:
        SlideError: the slide cannot be opened or read, or has no resolution (pass ``mpp``).
        GroundingError: the region is empty or outside the slide.
    """
    from pathgls.config import MPP_AT_1X
    from pathgls.features.session import session_for

    cfg = tiling or TilingConfig(magnification=MPP_AT_1X / target_mpp)
    with session_for(Path(path), tiling=cfg, mpp=mpp) as session:
        return session.read_region(x=x, y=y, width=width, height=height)
