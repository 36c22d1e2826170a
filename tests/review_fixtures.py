"""A small run with review cards (one with hostile text), for the review page tests."""

from __future__ import annotations

from pathlib import Path

from pathgls.runner.store import ResultsStore
from pathgls.types import ModuleScore, Report, ScoreCard

MODS = ("grounding", "logic", "stability")
#: Report text that must stay inert on the page: markup, script, an event handler, a huge string.
HOSTILE = (
    '</pre><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    "<style>body{display:none}</style>{{ 7*7 }} ' \" & " + "A" * 200_000
)


def card(item: str, values: tuple[float | None, ...], *, text: str = "", subject: str = "replay:a"):
    """A ScoreCard with the three module values and the original report ``text``."""
    modules = {
        m: ModuleScore(m, v, None if v is not None else "did not run")
        for m, v in zip(MODS, values, strict=True)
    }
    reports = {
        "original": Report(text=text or f"Breast, left ({item}): invasive ductal carcinoma.")
    }
    return ScoreCard(item_id=item, subject=subject, status="ok", modules=modules, reports=reports)


def write_review_run(root: Path, *, review: int = 4, hostile: bool = True) -> Path:
    """A run with ``review`` review cards (trust 0.55, 0.6, …), one deploy and one reject card."""
    store = ResultsStore(root)
    for i in range(review):
        v = 0.55 + 0.05 * i
        store.write_card(card(f"rev{i}", (v, v, v), text=HOSTILE if hostile and i == 1 else ""))
    store.write_card(card("good", (0.95, 0.95, 0.95)))
    store.write_card(card("bad", (0.1, 0.1, 0.1)))
    return root
