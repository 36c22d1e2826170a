"""What a gate reason may say about Logic's pairs: only what a check or the judge found.

A pair of Logic's evidence is a *contradiction* when its ``contradicts`` flag says so, or, on
cards written before that flag existed, when a consistency check fired on it (``rule`` or
``checks``). A probability alone never makes one: the most similar pair of a consistent report
is reported as "no contradiction found (most similar pair p=…)". A sentence is never shown
paired with itself. Cards written with the older wording ("top contradiction … vs …") get the
reason recomputed from their evidence wherever it is shown (:func:`card_reasons`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: Said in a deploy reason when nothing checked the report against the image (no S_g).
IMAGE_UNCHECKED = "deployed with the image unchecked"
#: How an older card's Logic reason starts (rewritten by :func:`card_reasons`).
OLD_LOGIC_REASON = "top contradiction "


def _get(pair: Any, key: str) -> Any:
    if isinstance(pair, Mapping):
        return pair.get(key)
    return getattr(pair, key, None)


def is_contradiction(pair: Any) -> bool:
    """Whether a check or the judge called ``pair`` (a ``ContradictionPair`` or its dict) a
    contradiction: its ``contradicts`` flag; absent, a fired check (``rule`` or ``checks``)."""
    flag = _get(pair, "contradicts")
    if flag is not None:
        return bool(flag)
    return bool(_get(pair, "rule")) or bool(_get(pair, "checks"))


def _norm(text: Any) -> str:
    return " ".join(str(text or "").split()).casefold()


def same_statement(pair: Any) -> bool:
    """Whether both sides of ``pair`` are one sentence (same index, or the same words)."""
    a, b = _get(pair, "premise_sentence"), _get(pair, "hypothesis_sentence")
    if a is not None and b is not None and a == b:
        return True
    return _norm(_get(pair, "premise")) == _norm(_get(pair, "hypothesis"))


def _probability(pair: Any) -> float | None:
    p = _get(pair, "probability")
    try:
        p = float(p)
    except (TypeError, ValueError):
        return None
    return p if math.isfinite(p) else None


def _ranked(pairs: Any) -> list[Any]:
    return sorted(pairs or (), key=lambda p: -(_probability(p) or -math.inf))


def logic_note(pairs: Any) -> str | None:
    """The Logic reason for ``pairs`` (highest probability first or not); None without pairs."""
    ranked = [p for p in _ranked(pairs) if not same_statement(p)]
    if not ranked:
        return None
    found = [p for p in ranked if is_contradiction(p)]
    if found:
        top = found[0]
        p = _probability(top)
        rule = _get(top, "rule")
        why = ", ".join(x for x in (f"p={p:.3f}" if p is not None else "", rule or "") if x)
        return (
            f"contradiction {_get(top, 'premise') or '?'!r} vs {_get(top, 'hypothesis') or '?'!r}"
            + (f" ({why})" if why else "")
        )
    p = _probability(ranked[0])
    return "no contradiction found" + (f" (most similar pair p={p:.3f})" if p is not None else "")


def card_reasons(card: Any) -> list[str]:
    """The gate reasons of ``card`` as they should read: an older card's Logic reason
    (``logic 0.400: top contradiction … vs …``) recomputed from its Logic evidence."""
    decision = getattr(card, "decision", None)
    reasons = list(getattr(decision, "reasons", None) or ())
    if not any(OLD_LOGIC_REASON in r for r in reasons):
        return reasons
    logic = (getattr(card, "modules", None) or {}).get("logic")
    evidence = getattr(logic, "evidence", None) or {}
    note = logic_note(evidence.get("top_pairs") if isinstance(evidence, Mapping) else None)
    out = []
    for r in reasons:
        head, sep, rest = r.partition(": ")
        if sep and rest.startswith(OLD_LOGIC_REASON):
            out.append(f"{head}: {note}" if note else head)
        else:
            out.append(r)
    return out


__all__ = ["IMAGE_UNCHECKED", "card_reasons", "is_contradiction", "logic_note", "same_statement"]
