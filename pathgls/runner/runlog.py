"""Where a run's time went: per item and per stage, written to the run log and the manifest.

Every ScoreCard carries its item's timings (``slide.*`` shared by the item's subjects, then the
subject's own stages); :class:`RunTimings` adds them up as cards arrive, logs one line per item
on the ``pathgls.runner`` logger (the CLI writes it to ``RUN/logs/<command>-<time>.log``) and,
at the end, a table of every stage — model loading, planning, tiling, encoding, views,
generation, each score, writing cards, the summary — with its total, its mean per item and its
share of the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pathgls.types import ScoreCard

log = logging.getLogger("pathgls.runner")

#: Stages of an item shared by its subjects (counted once per item), in pipeline order.
ITEM_STAGES = ("slide.identity", "slide.open", "slide.tiling", "slide.encoding", "slide.view")
#: Stages of one subject on one item.
SUBJECT_STAGES = ("generation", "stability", "logic", "grounding", "hare", "report")
#: Phases of the run around the items.
PHASES = ("planning", "models", "items", "writing cards", "summary")


@dataclass
class RunTimings:
    """Seconds by stage and phase, added up over the run."""

    stages: dict[str, float] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    models: dict[str, float] = field(default_factory=dict)  # load time per model
    items: int = 0
    cards: int = 0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time a phase of the run (added to what it already had)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t0

    def add_models(self, load_seconds: Mapping[str, float]) -> None:
        """Record how long each model took to load, and log it."""
        self.models.update({k: float(v) for k, v in load_seconds.items()})
        if load_seconds:
            parts = ", ".join(f"{k} {v:.2f} s" for k, v in load_seconds.items())
            log.info("models loaded in %.2f s: %s", sum(load_seconds.values()), parts)

    def add_item(self, item_id: str, cards: Iterable[ScoreCard]) -> str:
        """Add one item's card timings; log and return its line."""
        cards = list(cards)
        if not cards:
            return ""
        self.items += 1
        self.cards += len(cards)
        shared = cards[0].timings
        for key in ITEM_STAGES:
            if key in shared:
                self.stages[key] = self.stages.get(key, 0.0) + float(shared[key])
        parts = [f"{_label(k)} {float(shared[k]):.2f} s" for k in ITEM_STAGES if k in shared]
        for card in cards:
            t = card.timings
            for key in SUBJECT_STAGES:
                if key in t:
                    self.stages[key] = self.stages.get(key, 0.0) + float(t[key])
            own = ", ".join(f"{k} {float(t[k]):.2f} s" for k in SUBJECT_STAGES if k in t)
            total = f"; total {float(t['total']):.2f} s" if "total" in t else ""
            parts.append(f"[{card.subject}: {card.status}; {own or 'no stage'}{total}]")
        line = f"{item_id}: " + ", ".join(parts)
        log.info("%s", line)
        return line

    def table(self) -> list[tuple[str, float, float]]:
        """``(stage, total seconds, share of the run)`` rows, phases' other time included."""
        run = sum(self.phases.values()) or sum(self.stages.values()) or 1.0
        rows = [("model loading", sum(self.models.values()))]
        rows += [(_label(k), self.stages[k]) for k in (*ITEM_STAGES, *SUBJECT_STAGES) if k in self]
        named = sum(self.stages.values()) + sum(self.models.values())
        if "items" in self.phases:  # the executor's phase: model loading, then the items
            rows.append(("items: other", max(0.0, self.phases["items"] - named)))
        rows += [(p, self.phases[p]) for p in ("planning", "writing cards", "summary") if p in self]
        return [(name, s, s / run) for name, s in rows]

    def __contains__(self, key: str) -> bool:
        return key in self.stages or key in self.phases

    def log_summary(self) -> None:
        """Log the stage table (the end of the run log)."""
        run = sum(self.phases.values())
        log.info(
            "where the time went: %d items, %d cards, %.2f s in all (%.2f s per item)",
            self.items,
            self.cards,
            run,
            run / self.items if self.items else 0.0,
        )
        for name, seconds, share in self.table():
            per = seconds / self.items if self.items else 0.0
            log.info("  %-16s %9.2f s %6.1f%%  %8.3f s/item", name, seconds, 100 * share, per)

    def headline(self, top: int = 4) -> str:
        """One line for the console: the run's time and its largest stages."""
        run = sum(self.phases.values())
        rows = sorted((r for r in self.table() if r[1] >= 0.005), key=lambda r: -r[1])[:top]
        parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds, _ in rows)
        return f"{run:.1f} s: {parts}" if parts else f"{run:.1f} s"

    def to_dict(self) -> dict[str, Any]:
        """For the manifest: phases, stages, model loading, counts."""
        return {
            "phases": dict(self.phases),
            "stages": dict(self.stages),
            "models": dict(self.models),
            "items": self.items,
            "cards": self.cards,
        }


def _label(key: str) -> str:
    return key.removeprefix("slide.")
