"""Slide-side sections: where patches are cut, how they are read, encoded and stored.

``[tiling]`` :class:`TilingConfig`, ``[stream]`` :class:`StreamConfig`, ``[encoder]``
:class:`EncoderConfig`, ``[bag]`` :class:`BagConfig` — what ``pathgls extract`` uses, and what
a run uses to build its feature bags.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pathgls.config.convert import in_range, require

#: Default of ``TilingConfig.max_level_read_pixels`` (a 100000 × 100000 level).
DEFAULT_LEVEL_READ_PIXELS = 10_000_000_000
#: Default of ``TilingConfig.max_pixels_per_byte``.
DEFAULT_PIXELS_PER_BYTE = 10000.0
#: Largest patch (and window) side in pixels.
MAX_PATCH_SIZE = 8192
#: Microns per pixel at 1× under the usual convention (20× ≙ 0.5 µm/px, 40× ≙ 0.25 µm/px).
MPP_AT_1X = 10.0


@dataclass(frozen=True)
class TilingConfig:
    """Where patches are cut and at which resolution."""

    # Target magnification of the patches (20 → 0.5 µm/px, see MPP_AT_1X).
    magnification: float = 20.0
    # Patch side in pixels at the target magnification.
    patch_size: int = 512
    # Overlap between neighbouring patches, in pixels at the target magnification.
    overlap: int = 0
    # Minimum tissue fraction of a patch (0–1) for it to be kept.
    tissue_threshold: float = 0.25
    # Resolution of the tissue mask in µm/px (coarse: the mask is cheap).
    mask_mpp: float = 8.0
    # Longest side of the tissue mask in px: larger slides get a coarser mask, so memory is flat.
    mask_max_side: int = 1024
    # A level whose mpp is within this relative tolerance of the target is read without resizing.
    mpp_tolerance: float = 0.05
    # A slide coarser than the target by more than this factor is refused (upsampling invents
    # nothing; such metadata is usually wrong, e.g. a 72-dpi TIFF default).
    max_upsample: float = 2.0
    # Minimum saturation (0–1) for a mask pixel to count as tissue, whatever Otsu says.
    min_saturation: float = 0.07
    # Otsu's saturation threshold is clipped to at most this (tissue-only images have no glass).
    max_saturation: float = 0.15
    # Gaps in the mask narrower than this many µm are closed.
    close_um: float = 32.0
    # Enclosed holes up to this many µm across (fat cells, lumina) are filled.
    fill_hole_um: float = 256.0
    # Tissue specks smaller than this many µm across are dropped.
    min_object_um: float = 64.0
    # Pixels brighter than this (0–255, all channels) are background glass.
    white_level: int = 220
    # Exclude red/green/blue pen marks from the mask.
    exclude_pen: bool = True
    # µm/px assumed for plain images (PNG/JPEG/TIFF ROIs) when none is given.
    image_mpp: float = 0.5
    # Filter for a reduction by a whole factor (40× read → 20× patches): "area" averages each
    # factor × factor block (what a scanner's own pyramid does), "lanczos" is Pillow's Lanczos.
    # Other ratios always use Lanczos.
    resample: Literal["area", "lanczos"] = "area"
    # Most pixels a whole-slide pass (the tissue mask, a thumbnail) may read from one level: a
    # slide whose coarsest level holds more (a single-level 200000² TIFF) is refused; build a
    # pyramid for it (e.g. `vips tiffsave in.tif out.tif --tile --pyramid --compression jpeg`).
    max_level_read_pixels: int = DEFAULT_LEVEL_READ_PIXELS
    # A single-file slide declaring more level-0 pixels per byte of file than this is refused
    # before any pixel is read (real slides hold under 1000; blank JPEG tiles about 100).
    max_pixels_per_byte: float = DEFAULT_PIXELS_PER_BYTE
    # Decode JPEG tiles of TIFF/SVS levels in pathgls: at 1/2, 1/4 or 1/8 scale when the
    # reduction is such a factor and resample is "area" (libjpeg's DCT scaling: an area reduction
    # without decoding the discarded pixels; see pathgls.tiling.jpeg_tiles for the difference),
    # and at full scale for patches read without resize (OpenSlide's pixels, faster).
    scaled_decode: bool = True

    def __post_init__(self) -> None:
        require(
            self.resample in ("area", "lanczos"),
            f"resample must be 'area' or 'lanczos', got {self.resample!r}",
        )
        in_range("magnification", self.magnification, 0, 400, open_low=True)
        in_range("patch_size", self.patch_size, 16, MAX_PATCH_SIZE)
        require(
            0 <= self.overlap < self.patch_size,
            f"overlap must be in [0, patch_size), got {self.overlap}",
        )
        require(
            0.0 <= self.tissue_threshold <= 1.0,
            f"tissue_threshold must be in [0, 1], got {self.tissue_threshold}",
        )
        in_range("max_upsample", self.max_upsample, 1, 64)
        in_range("mask_max_side", self.mask_max_side, 64, 16384)
        in_range("mask_mpp", self.mask_mpp, 0, 10000, open_low=True)
        in_range("max_level_read_pixels", self.max_level_read_pixels, 1 << 20, 1 << 40)
        in_range("max_pixels_per_byte", self.max_pixels_per_byte, 1, 1e9)
        require(
            0 <= self.mpp_tolerance < 1,
            f"mpp_tolerance must be in [0, 1), got {self.mpp_tolerance}",
        )
        require(
            0 <= self.min_saturation < 1,
            f"min_saturation must be in [0, 1), got {self.min_saturation}",
        )
        require(
            self.min_saturation <= self.max_saturation < 1,
            f"max_saturation must be in [min_saturation, 1), got {self.max_saturation}",
        )
        for name in ("close_um", "fill_hole_um", "min_object_um"):
            in_range(name, getattr(self, name), 0, 100_000)
        require(
            0 < self.white_level <= 255, f"white_level must be in (0, 255], got {self.white_level}"
        )
        in_range("image_mpp", self.image_mpp, 0, 1000, open_low=True)

    @property
    def target_mpp(self) -> float:
        """Microns per pixel of the patches."""
        return MPP_AT_1X / self.magnification


@dataclass(frozen=True)
class StreamConfig:
    """How patches are read: batching and parallel readers."""

    # Patches per batch handed to the encoder.
    batch_size: int = 32
    # Reader threads (OpenSlide and the resize release the GIL).
    workers: int = 2
    # Batches read ahead per worker; bounds memory to (workers × prefetch + 1) batches.
    prefetch: int = 2
    # Torch threads while a CPU encoder extracts (0: leave torch's setting). Reader threads and
    # torch's threads share the cores: with a cheap encoder (or on a GPU host's CPU side) giving
    # torch fewer threads than cores − workers lets the readers run (bench_extract_io.py).
    torch_threads: int = 0
    # Most MiB the batch ring may take ((workers × prefetch + 1) batches of patches, allocated
    # up front); settings that need more are refused with the number they need.
    max_buffer_mb: int = 4096

    def __post_init__(self) -> None:
        in_range("torch_threads", self.torch_threads, 0, 1024)
        in_range("batch_size", self.batch_size, 1, 4096)
        in_range("workers", self.workers, 0, 256)
        in_range("prefetch", self.prefetch, 1, 64)
        in_range("max_buffer_mb", self.max_buffer_mb, 16, 1 << 20)

    def buffer_bytes(self, patch_size: int) -> int:
        """Bytes of the batch ring streaming allocates up front for ``patch_size`` px patches:
        ``(workers × prefetch + 1)`` batches of ``batch_size`` RGB patches."""
        return (self.workers * self.prefetch + 1) * self.batch_size * patch_size**2 * 3


Precision = Literal["auto", "fp32", "fp16", "bf16"]
#: The encoder of commands that need one when the config names none (extract, ROI grounding).
DEFAULT_ENCODER = "plip"


@dataclass(frozen=True)
class EncoderConfig:
    """Which image-text encoder, where it runs, and the HighRes windows."""

    # Registry name or scheme: plip, quiltnet, conch, hf:<repo-or-dir>, open_clip:<arch>:<weights>.
    # None: no image-text encoder (a run reports grounding missing; `pathgls extract` and ROI
    # grounding use DEFAULT_ENCODER).
    name: str | None = None
    # "auto" (CUDA when present), "cpu", "cuda", "cuda:1", ...
    device: str = "auto"
    # "auto" is fp16 on CUDA (bf16 when the model asks for it) and fp32 on CPU.
    precision: Precision = "auto"
    # Encode each patch as windows of this size (HighRes); the window mean is the patch feature.
    window_size: int = 224
    # Stride between windows; edge windows are shifted inward so they stay inside the patch.
    window_stride: int = 224
    # `pathgls extract` encodes HighRes windows too (Grounding needs them; ~9x the encoder work
    # for 512 px patches) instead of one view per patch, the features CLAM/TRIDENT make. The
    # benchmark runner always asks for windows.
    windows: bool = False
    # Directory with pulled models; None reads PATHGLS_MODELS_DIR or ~/.cache/pathgls/models.
    models_dir: str | None = None

    def __post_init__(self) -> None:
        require(
            self.name is None or bool(self.name.strip()),
            "name must not be empty (leave it out for no encoder)",
        )
        in_range("window_size", self.window_size, 16, MAX_PATCH_SIZE)
        in_range("window_stride", self.window_stride, 1, MAX_PATCH_SIZE)
        require(
            self.precision in ("auto", "fp32", "fp16", "bf16"),
            f"precision must be auto, fp32, fp16 or bf16, got {self.precision!r}",
        )


@dataclass(frozen=True)
class BagConfig:
    """How feature bags are written."""

    # Skip slides whose complete bag exists unless True.
    overwrite: bool = False
    # HDF5 compression of the datasets ("gzip", "lzf" or None).
    compression: str | None = None

    def __post_init__(self) -> None:
        require(
            self.compression in (None, "gzip", "lzf"),
            f"compression must be gzip, lzf or None, got {self.compression!r}",
        )


#: The sections a feature bag depends on (recorded in the bag, with the bag's own identity).
SLIDE_SECTIONS = ("tiling", "stream", "encoder", "bag")
