"""The captioner: a deterministic, *non-learned* baseline subject that reports what it measures.

It is not a VLM and never claims to be one (``learned = False``; its reports say so). It makes
the whole pipeline runnable offline and gives tests a subject whose reactions are known:

- it measures the image: tissue fraction (pathgls's tissue mask), whitespace, stain type
  (DAB present or not), hematoxylin/eosin balance from Ruifrok–Johnston colour deconvolution
  (:func:`pathgls.tiling.colour.rgb_to_hed`), and a nuclear density proxy (the fraction of
  tissue covered by hematoxylin-dense blobs of nuclear size), and writes them into the
  six-field format; so a stain shift that moves the H/E balance moves its words; on an IHC
  image (DAB, no eosin) it reports the DAB share against the hematoxylin counterstain and
  does not assess cytoplasm;
- ``captioner`` ignores the prompt's clinical history;
- ``captioner-obedient`` adopts it: a diagnosis named in the prompt (found by the lexicon
  extractor) becomes its morphologic diagnosis, with the nuclear features that diagnosis
  implies, and it obeys a "one word only" instruction. So a prompt attack moves its report,
  and its Stability must come out lower than the plain captioner's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from pathgls.subjects.base import SubjectConfig, check_images, register_subject
from pathgls.tiling.colour import rgb_to_hed
from pathgls.tiling.tissue import pen_mask

BASELINE_NOTE = "non-learned measurement baseline, not a VLM"
_ONE_WORD = re.compile(r"\b(single|one)\s+word\b", re.IGNORECASE)


@dataclass(frozen=True)
class ImageMeasures:
    """What the captioner measures (averaged over its images, weighted by pixels)."""

    tissue_fraction: float  # tissue pixels / all pixels
    whitespace: float  # near-white pixels / all pixels (glass, lumina, fat)
    hematoxylin: float  # mean hematoxylin optical density over tissue
    eosin: float  # mean eosin optical density over tissue
    dab: float  # mean DAB optical density over tissue
    nuclear_density: float  # fraction of tissue covered by hematoxylin-dense nuclear-size blobs

    @property
    def h_fraction(self) -> float:
        """Hematoxylin share of the H + E density (0.5 = balanced)."""
        total = self.hematoxylin + self.eosin
        return self.hematoxylin / total if total > 0 else 0.5


def measure(images: Sequence[np.ndarray], *, mpp: float = 0.5) -> ImageMeasures:
    """Measure uint8 RGB images (see :class:`ImageMeasures`)."""
    n_pix = n_tis = 0
    sums = np.zeros(5)
    for im in images:
        rgb = np.asarray(im)[..., :3]
        n = rgb.shape[0] * rgb.shape[1]
        white_px = rgb.min(axis=-1) > 215
        tissue = pixel_tissue(rgb) & ~white_px
        white = white_px.mean()
        hed = rgb_to_hed(rgb)  # ≥ 0
        t = int(tissue.sum())
        if t:
            h = hed[..., 0][tissue]
            blobs = _nuclear_blobs(hed[..., 0], tissue, mpp=mpp)
            sums += [h.sum(), hed[..., 1][tissue].sum(), hed[..., 2][tissue].sum(), blobs, 0]
        sums[4] += white * n
        n_pix += n
        n_tis += t
    if n_tis == 0:
        return ImageMeasures(0.0, float(sums[4] / max(n_pix, 1)), 0.0, 0.0, 0.0, 0.0)
    return ImageMeasures(
        tissue_fraction=n_tis / n_pix,
        whitespace=float(sums[4] / n_pix),
        hematoxylin=float(sums[0] / n_tis),
        eosin=float(sums[1] / n_tis),
        dab=float(sums[2] / n_tis),
        nuclear_density=float(sums[3] / n_tis),
    )


def pixel_tissue(rgb: np.ndarray) -> np.ndarray:
    """Pixel-level tissue: stained (HSV saturation above 0.07), not glass, not pen ink."""
    a = rgb.astype(np.float32)
    mx, mn = a.max(axis=-1), a.min(axis=-1)
    sat = np.divide(mx - mn, mx, out=np.zeros_like(mx), where=mx > 0)
    return (sat > 0.07) & ~pen_mask(rgb)


def _nuclear_blobs(h: np.ndarray, tissue: np.ndarray, *, mpp: float) -> int:
    """Tissue pixels in hematoxylin-dense connected blobs of nuclear size (4–15 µm across)."""
    vals = h[tissue]
    thr = max(float(np.quantile(vals, 0.75)), 0.05) if vals.size else np.inf
    dense = (h > thr) & tissue
    labels, n = ndimage.label(dense)
    if n == 0:
        return 0
    areas = np.bincount(labels.ravel())[1:]
    lo, hi = (4.0 / mpp) ** 2 * np.pi / 4, (15.0 / mpp) ** 2 * np.pi / 4
    return int(areas[(areas >= lo) & (areas <= hi)].sum())


def _word(value: float, cuts: tuple[float, float], words: tuple[str, str, str]) -> str:
    return words[0] if value < cuts[0] else words[1] if value < cuts[1] else words[2]


def describe(m: ImageMeasures) -> dict[str, str]:
    """The six fields for a set of measures (no diagnosis is made)."""
    if m.tissue_fraction < 0.05:
        empty = "not assessable (little or no tissue in the image)"
        return {
            "Stain type": "not assessable",
            "Tissue architecture": f"{empty}; whitespace {m.whitespace:.0%}",
            "Cell types": empty,
            "Nuclear features": empty,
            "Cytoplasmic features": empty,
            "Morphologic diagnosis": f"no diagnosis ({BASELINE_NOTE}); no tissue to measure",
        }
    ihc = m.dab > 0.015 and m.eosin < 0.2 * m.dab  # IHC has no eosin counterstain
    stain = "immunohistochemistry (DAB chromogen present)" if ihc else "H&E"
    cellular = _word(m.nuclear_density, (0.04, 0.12), ("sparsely", "moderately", "densely"))
    if ihc:
        # no eosin on IHC: the balance that means something is DAB against the counterstain
        dab_share = m.dab / (m.dab + m.hematoxylin) if m.dab + m.hematoxylin > 0 else 0.0
        balance = f"DAB with hematoxylin counterstain (DAB share {dab_share:.2f})"
        cytoplasm = "not assessed: immunohistochemistry has no eosin counterstain"
    else:
        balance = _word(
            m.h_fraction, (0.42, 0.58), ("eosin-dominant", "balanced H&E", "hematoxylin-dominant")
        )
        cytoplasm = (
            "abundant eosinophilic cytoplasm"
            if m.h_fraction < 0.5
            else "scant, pale cytoplasm relative to nuclei"
        ) + f" (hematoxylin share of H&E {m.h_fraction:.2f})"
    solid = _word(m.whitespace, (0.15, 0.4), ("solid", "partly open", "loose, open"))
    return {
        "Stain type": stain,
        "Tissue architecture": (
            f"{solid} tissue covering {m.tissue_fraction:.0%} of the image, whitespace "
            f"{m.whitespace:.0%}"
        ),
        "Cell types": f"{cellular} cellular tissue (nuclear density proxy {m.nuclear_density:.2f})",
        "Nuclear features": (
            "hyperchromatic nuclei"
            if m.hematoxylin > 0.045
            else "nuclei of ordinary staining intensity"
        )
        + f" (mean hematoxylin density {m.hematoxylin:.3f})",
        "Cytoplasmic features": cytoplasm,
        "Morphologic diagnosis": (
            f"no diagnosis ({BASELINE_NOTE}); {cellular} cellular, {balance} staining"
        ),
    }


def format_report(fields: dict[str, str]) -> str:
    """Six ``Field: text`` lines."""
    return "\n".join(f"{k}: {v}" for k, v in fields.items())


class Captioner:
    """The measuring baseline subject (see the module docstring)."""

    learned = False
    revision: str | None = "measure-v2"  # v2: IHC images described by DAB share, not H/E balance

    def __init__(self, *, obedient: bool = False, mpp: float = 0.5) -> None:
        self.obedient = obedient
        self.mpp = mpp
        self.name = "captioner-obedient" if obedient else "captioner"
        self.model_id = f"pathgls/{self.name}"

    def generate(
        self,
        images: Sequence[np.ndarray],
        prompt: str,
        *,
        seed: int = 0,
        system: str | None = None,
        item_id: str = "",
        condition: str = "original",
    ) -> str:
        """A six-field report of the measures (``seed``, ``item_id``, ``condition``: unused)."""
        fields = describe(measure(check_images(images), mpp=self.mpp))
        if not self.obedient:
            return format_report(fields)
        adopted = adopted_diagnosis(f"{system or ''}\n{prompt}")
        if _ONE_WORD.search(prompt):
            # it obeys the format, but a measuring baseline has no diagnosis to give
            return adopted[1] if adopted and adopted[1] else "indeterminate"
        if adopted:
            name, behavior = adopted
            fields["Morphologic diagnosis"] = f"{name}, in keeping with the clinical history"
            if behavior == "malignant":
                fields["Nuclear features"] = (
                    "marked nuclear pleomorphism with prominent nucleoli and frequent mitoses"
                )
            elif behavior == "benign":
                fields["Nuclear features"] = "bland nuclei without atypia or mitotic activity"
        return format_report(fields)


def adopted_diagnosis(prompt: str) -> tuple[str, str] | None:
    """The first affirmed diagnosis a prompt asserts, with its behaviour, or None.

    Found by the lexicon extractor (so "biopsy-proven high-grade invasive carcinoma" gives
    ``("high-grade invasive carcinoma", "malignant")``: grade words before it are kept).
    """
    from pathgls.text import analyze_report, build_extractor

    report = analyze_report(prompt, extractor=build_extractor("lexicon"))
    ents = report.entities
    for i, e in enumerate(ents):
        if e.type == "pathological_diagnosis" and not e.negated:
            start = e.start
            # keep directly preceding grade/descriptor words ("poorly differentiated")
            for prev in reversed(ents[:i]):
                gap = report.text[prev.end : start]
                if prev.type in ("grade", "diagnosis_descriptor") and len(gap.strip(" -,")) == 0:
                    start = prev.start
                else:
                    break
            name = report.text[start : e.end]
            behavior = e.attributes.get("behavior", "")
            if "malignant" in behavior:
                return name, "malignant"
            return name, "benign" if "benign" in behavior else ""
    return None


@register_subject("captioner", description="non-learned measuring baseline (ignores history)")
def _captioner(argument: str, config: SubjectConfig) -> Captioner:
    return Captioner(obedient=False)


@register_subject(
    "captioner-obedient", description="non-learned measuring baseline that adopts a history"
)
def _captioner_obedient(argument: str, config: SubjectConfig) -> Captioner:
    return Captioner(obedient=True)
