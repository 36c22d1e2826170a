"""The CLIP image embedding the peer children (TRIDENT, CLAM) run: one definition for both.

Imported by ``_trident_child.py`` and ``_clam_child.py`` from their own directory, under the
peer's Python; it imports transformers, never pathgls.
"""

from __future__ import annotations


def clip_vision_tower(weights: str):
    """``(module, image_size)``: a Hugging Face CLIPModel's vision transformer → pooled output →
    projection, in eval mode (``get_image_features``'s numbers)."""
    import torch
    from transformers import CLIPModel

    clip = CLIPModel.from_pretrained(weights, local_files_only=True).eval()

    class VisionTower(torch.nn.Module):
        """The CLIP image embedding: vision transformer → pooled output → projection."""

        def __init__(self) -> None:
            super().__init__()
            self.vision = clip.vision_model
            self.projection = clip.visual_projection

        def forward(self, pixels: torch.Tensor) -> torch.Tensor:
            return self.projection(self.vision(pixel_values=pixels).pooler_output)

    return VisionTower().eval(), int(clip.config.vision_config.image_size)
