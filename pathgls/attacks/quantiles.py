"""Exact per-row quantiles of masked values, batched: numpy's ``percentile``, without sorting.

Macenko needs the 1st and 99th percentiles of 10⁵–10⁶ values per image over a different
number of tissue pixels in every image. ``torch.quantile`` sorts whole rows (and refuses inputs
over 16M elements); a ``topk`` of the ~1 % near side still runs every value through a heap.
Here a strided sample of each row gives, per tail, a threshold that leaves a little more than
the needed number of values beyond it; only those candidates are gathered and sorted (one sort
for all rows and both tails). The counts are checked, and when a threshold leaves too few
values (a structured image defeating the sample) or too many (heavy ties), the rows fall back
to ``topk``: the result is exact either way, only the speed differs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

_F64 = torch.float64
# Every this-many values of a row form its sample (a prime: no alignment with image rows).
_STRIDE = 17


def masked_quantile(
    values: torch.Tensor, q: float, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-row ``q``-quantile (0 ≤ q ≤ 1); see :func:`masked_quantiles`. Returns ``(R,)``."""
    return masked_quantiles(values, [q], mask)[:, 0]


def masked_quantiles(
    values: torch.Tensor, qs: Sequence[float], mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-row quantiles of ``values[r][mask[r]]``, linearly interpolated like numpy.

    Args:
        values: ``(R, N)`` floating tensor without NaN.
        qs: Quantiles in [0, 1], as ``numpy.percentile(x, 100 * q)``.
        mask: ``(R, N)`` bool, the values that count (None: all).

    Returns:
        ``(R, len(qs))`` float64; 0 for a row without values.
    """
    rows, width = values.shape
    dev = values.device
    if mask is None:
        counts = torch.full((rows,), width, dtype=torch.int64, device=dev)
    else:
        counts = mask.sum(dim=1, dtype=torch.int32).long()
    out = torch.zeros((rows, len(qs)), dtype=_F64, device=dev)
    if rows == 0 or width == 0 or not qs:
        return out
    last = (counts - 1).clamp(min=0)
    # Ranks from the nearer end: (lo, hi, fraction, from_top) per quantile.
    ranks = []
    for q in qs:
        pos = q * last.to(_F64)
        lo = pos.floor()
        frac = pos - lo
        lo = lo.long().clamp(max=last)
        hi = (lo + 1).clamp(max=last)
        top = q > 0.5
        ranks.append((last - lo, last - hi, frac, True) if top else (lo, hi, frac, False))
    need = {False: torch.zeros_like(counts), True: torch.zeros_like(counts)}
    for lo, hi, _, top in ranks:
        need[top] = torch.maximum(need[top], torch.maximum(lo, hi) + 1)
    for side in need:
        need[side] = torch.where(counts > 0, need[side], 0)
    ordered, starts, sizes = _tails(values, mask, need[False], need[True])
    if ordered.numel() == 0:
        return out
    end = ordered.numel() - 1
    for j, (lo, hi, frac, top) in enumerate(ranks):
        if top:  # ascending groups: the i-th largest sits i from the group's end
            ia, ib = starts + sizes - 1 - lo, starts + sizes - 1 - hi
        else:
            ia, ib = starts + lo, starts + hi
        a = ordered[ia.clamp(0, end)].to(_F64)
        b = ordered[ib.clamp(0, end)].to(_F64)
        value = torch.lerp(a, b, frac)
        out[:, j] = torch.where((counts > 0) & torch.isfinite(value), value, 0.0)
    return out


def _tails(
    values: torch.Tensor, mask: torch.Tensor | None, n_low: torch.Tensor, n_high: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each row's ``n_low[r]`` smallest and ``n_high[r]`` largest values, sorted, in one tensor.

    Returns:
        ``(ordered, starts, sizes)``: row ``r``'s group is ``ordered[starts[r]:][:sizes[r]]``,
        ascending; it begins with the row's ``n_low[r]`` smallest values and ends with its
        ``n_high[r]`` largest.
    """
    rows, width = values.shape
    dev = values.device
    k_low, k_high = int(n_low.max()), int(n_high.max())
    if k_low == k_high == 0:
        empty = torch.zeros(rows, dtype=torch.int64, device=dev)
        return values.new_empty(0), empty, empty
    if (k_low + k_high) * 8 < width:
        sample = values[:, ::_STRIDE]
        sample_mask = mask[:, ::_STRIDE] if mask is not None else None
        near, sizes, enough = None, None, True
        for n_side, k_side, largest in ((n_low, k_low, False), (n_high, k_high, True)):
            if k_side == 0:
                continue
            side = _beyond(values, sample, sample_mask, n_side, largest=largest)
            if mask is not None:
                side &= mask
            sizes = side.sum(dim=1, dtype=torch.int32).long()
            enough &= bool((sizes >= n_side).all())
            near = side if near is None else near.logical_or_(side)
        assert near is not None and sizes is not None  # k_low + k_high > 0: a side was sampled
        if k_low and k_high:
            sizes = near.sum(dim=1, dtype=torch.int32).long()
        if enough and int(sizes.sum()) <= 4 * int((n_low + n_high).sum()) + 1024 * rows:
            return _sorted_groups(values[near], sizes), sizes.cumsum(0) - sizes, sizes
    # Exact fallback: the k smallest and k largest of every row through topk.
    parts = []
    for k_side, largest in ((k_low, False), (k_high, True)):
        if k_side == 0:
            continue
        full = values
        if mask is not None:
            full = values.masked_fill(~mask, -math.inf if largest else math.inf)
        picked = torch.topk(full, min(k_side, width), dim=1, largest=largest).values
        parts.append(picked.flip(1) if largest else picked)
    group = torch.cat(parts, dim=1)  # per row: low tail ascending, then high tail ascending
    size = group.shape[1]
    sizes = torch.full((rows,), size, dtype=torch.int64, device=dev)
    return group.reshape(-1), torch.arange(rows, device=dev) * size, sizes


def _beyond(
    values: torch.Tensor,
    sample: torch.Tensor,
    sample_mask: torch.Tensor | None,
    need: torch.Tensor,
    *,
    largest: bool,
) -> torch.Tensor:
    """Bool ``(R, N)``: values at or beyond a sample threshold leaving ≥ ``need`` per row."""
    if sample_mask is not None:
        sample = sample.masked_fill(~sample_mask, -math.inf if largest else math.inf)
    # Sample rank with a wide margin: i.i.d. values give binomial counts around stride × rank;
    # the pixels of a tissue are correlated.
    expect = need.to(_F64) / _STRIDE
    ranks = (1.5 * expect + 4 * expect.sqrt() + 8).ceil().long().clamp(1, sample.shape[1])
    ranked = torch.topk(sample, int(ranks.max()), dim=1, largest=largest).values
    threshold = ranked.gather(1, (ranks - 1)[:, None])
    return values >= threshold if largest else values <= threshold


def _sorted_groups(picked: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """``picked`` (row-major groups of ``sizes``) sorted ascending within each group."""
    row_of = torch.repeat_interleave(torch.arange(sizes.numel(), device=picked.device), sizes)
    if picked.dtype == torch.float32:
        # One sort of int64 keys (row, order-preserving bits of the float).
        bits = picked.view(torch.int32).to(torch.int64)
        key = torch.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits) + 2**31
        return picked[torch.sort((row_of << 32) | key).indices]
    ordered, order = torch.sort(picked, stable=True)
    return ordered[torch.sort(row_of[order], stable=True).indices]
