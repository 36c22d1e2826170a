"""Failure-case inspection for notebooks: the least trusted cards of a run, and why.

Everything here reads ScoreCards (and the files a run directory keeps) and returns data or a
:class:`matplotlib.figure.Figure` built without pyplot, so no global state is touched. A module
that did not run is shown with its ``missing_reason``: missing evidence never raises.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pathgls.errors import EvidenceError, NoScoreCardsError, PathGLSError, UnknownNameError
from pathgls.evidence import (
    ContradictionPair,
    FindingChanges,
    GroundedEntity,
    GroundingEvidence,
    LogicEvidence,
    StabilityEvidence,
)
from pathgls.inspect.paths import item_path, map_path
from pathgls.modules import REFERENCE_FREE, reference_free_modules
from pathgls.reasons import card_reasons
from pathgls.runner.store import ResultsStore, load_grounding_map
from pathgls.types import ReportGraph, ScoreCard

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from pathgls.text.base import EntityExtractor

#: The built-in reference-free modules and the table's columns with them (kept for code that
#: imported them; :func:`table_columns` includes the plugins).
MODULES = REFERENCE_FREE
COLUMNS = ("item_id", "subject", "status", *MODULES, "trust", "route", "reason")


def table_columns() -> tuple[str, ...]:
    """The columns of :attr:`RunView.table`: every module an item can have without a reference
    (plugins included), then the trust."""
    return ("item_id", "subject", "status", *reference_free_modules(), "trust", "route", "reason")


_CHANGES = ("added", "removed", "negation_flipped", "diagnoses_before", "diagnoses_after")


@dataclass(frozen=True)
class RunView:
    """The cards of one run directory and their table (row label ``i`` is ``cards[i]``)."""

    run_dir: Path
    cards: list[ScoreCard]
    table: pd.DataFrame
    unreadable: list[str] = field(default_factory=list)  # "path: error" of each broken card


def _row(card: ScoreCard) -> dict[str, Any]:
    if card.status == "failed" or card.decision is None:
        route, reasons = "failed", [e.splitlines()[0] for e in card.errors if e] or ["no report"]
    else:
        route, reasons = card.decision.route, card_reasons(card)
    names = (*reference_free_modules(), "trust")
    values = [*(card.value(m) for m in names[:-1]), card.trust]
    return {
        "item_id": card.item_id,
        "subject": card.subject,
        "status": card.status,
        **{k: np.nan if v is None else float(v) for k, v in zip(names, values, strict=True)},
        "route": route,
        "reason": reasons[0] if reasons else "",
    }


def load_run(run_dir: str | os.PathLike[str]) -> RunView:
    """Read every ScoreCard of a run directory (layout: :mod:`pathgls.runner.store`).

    Missing module values and trust are NaN in the table; a failed card has route ``failed``
    and its first error as reason.

    Raises:
        NoScoreCardsError: the folder holds no readable ScoreCard.
    """
    import pandas as pd

    from pathgls.errors import SeveralRunsError
    from pathgls.io.rundirs import runs_below

    runs = runs_below(run_dir) if not (Path(run_dir) / "scorecards").is_dir() else []
    if runs:  # a folder of runs (runs/ instead of runs/demo): say which
        raise SeveralRunsError(
            f"{run_dir} holds {len(runs)} runs, not one: "
            + ", ".join(str(r) for r in runs[:5])
            + "; point PATHGLS_RUN_DIR (or load_run) at one of them",
            runs=runs,
        )
    store = ResultsStore(run_dir)
    cards, unreadable = [], []
    for path, card, error in store.iter_cards():
        if card is None:
            unreadable.append(f"{path}: {error}")
        else:
            cards.append(card)
    if not cards:
        broken = f" ({len(unreadable)} unreadable)" if unreadable else ""
        raise NoScoreCardsError(
            f"no ScoreCard under {store.scorecards_dir}{broken}: is {run_dir} a run directory? "
            "Make one with `pathgls demo --out DIR` or `pathgls benchmark`"
        )
    table = pd.DataFrame([_row(c) for c in cards], columns=list(table_columns()))
    return RunView(run_dir=Path(run_dir), cards=cards, table=table, unreadable=unreadable)


def lowest_trust(view: RunView, *, n: int = 5) -> pd.DataFrame:
    """The ``n`` cards of lowest trust, ascending, followed by every card without trust.

    Cards without a trust score (failed items, or no module scored) cannot be ranked: all of
    them are listed after the ranked rows, since each is a failure to look at. Ties keep the
    table's order; row labels still index ``view.cards``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    ranked = view.table.sort_values("trust", kind="stable", na_position="last")
    return ranked[ranked["trust"].isna().to_numpy() | (np.arange(len(ranked)) < n)]


def describe_card(card: ScoreCard) -> str:
    """A few lines: the item, its route and trust, each module's value or missing reason."""
    trust = "—" if card.trust is None else f"{card.trust:.3f}"
    route = card.decision.route if card.decision else "failed"
    lines = [f"{card.item_id} · {card.subject}: {route}, trust {trust}"]
    for name, m in card.modules.items():
        value = f"{m.value:.3f}" if m.value is not None else f"missing ({m.missing_reason})"
        lines.append(f"  {name}: {value}")
    lines += [f"  error: {e.splitlines()[0]}" for e in card.errors if e]
    return "\n".join(lines)


def _title(card: ScoreCard) -> str:
    return f"{card.item_id} · {card.subject}"


def _item_image(
    card: ScoreCard,
    max_side: int,
    *,
    run_dir: str | os.PathLike[str],
    sources: Sequence[str | os.PathLike[str]] = (),
) -> tuple[np.ndarray, tuple[int, int]]:
    """``(thumbnail, level-0 or image size (w, h))`` of the card's slide or ROI.

    Only an item of the run is opened (:func:`~pathgls.inspect.paths.item_path`), and only when
    it is the file the card was scored on (the ``slide_identity`` the card stores: another file
    under the same name, or a changed one, would get the card's heat map drawn over it).

    Raises:
        SlideIdentityError: the file is not the one scored (the message names both).
    """
    from PIL import Image

    from pathgls.grounding.sources import load_roi_image
    from pathgls.tiling.identity import FileIdentity, require_same
    from pathgls.tiling.slides import open_slide

    path = item_path(card.inputs.get("item"), run_dir=run_dir, sources=sources)
    stored = FileIdentity.from_dict(card.inputs.get("slide_identity") or {})
    if stored is not None:
        require_same(path, stored, made=f"ScoreCard {card.item_id}", given="the item")
    if card.inputs.get("kind") == "roi":
        im = Image.fromarray(load_roi_image(path))
        size = im.size
        im.thumbnail((max_side, max_side))
        return np.asarray(im.convert("RGB")), size
    reader = open_slide(path, probe=False)
    try:
        width, height = reader.dimensions
        return reader.thumbnail(max_side), (width, height)
    finally:
        reader.close()


def _num(x: float | None) -> float:
    return np.nan if x is None else float(x)


def _pick_entity(ev: GroundingEvidence, entity: str | None) -> GroundedEntity | None:
    """The named entity (default: the least grounded); None when nothing was grounded."""
    if entity is None or not ev.entities:
        return ev.least_grounded()
    chosen = ev.find(entity)
    if chosen is None:
        known = ", ".join(e.phrase for e in ev.entities)
        raise UnknownNameError(f"no grounded entity {entity!r}; grounded: {known}")
    return chosen


def _message_figure(title: str, message: str, image: np.ndarray | None) -> Figure:
    """The message over the item's picture, or in a framed panel of its own (never blank)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 6 if image is not None else 2.5))
    ax = fig.add_subplot()
    ax.set_axis_off()
    wrapped = "\n".join(textwrap.wrap(message, 90))
    ax.set_title(f"{title}\n{wrapped}", fontsize=9)
    if image is not None:
        ax.imshow(image)
    else:  # no picture: the message is the figure's content
        ax.text(
            0.5,
            0.5,
            wrapped,
            ha="center",
            va="center",
            fontsize=11,
            wrap=True,
            bbox={"boxstyle": "round", "facecolor": "#fff4e5", "edgecolor": "#e69500"},
            transform=ax.transAxes,
        )
    return fig


def _box(ax: Any, box: Any, scale: tuple[float, float], colour: str, label: str) -> None:
    from matplotlib.patches import Rectangle

    x, y, w, h = (float(v) * scale[i % 2] for i, v in enumerate(box))
    ax.add_patch(Rectangle((x, y), w, h, fill=False, edgecolor=colour, lw=1.5, label=label))


def _map_values(run_dir: Path, evidence: GroundingEvidence, phrase: str) -> tuple[Any, str]:
    """``(map, "")`` when the stored map has ``phrase``, else ``(None, why not)``."""
    if not evidence.map:
        return None, "no heat map was kept (keep_grounding_maps=False)"
    try:
        gmap = load_grounding_map(map_path(evidence.map, run_dir=run_dir))
    except (OSError, ValueError, KeyError, PathGLSError) as e:
        return None, f"the heat map cannot be read: {e}"
    ok = phrase in gmap["values"]
    return (gmap, "") if ok else (None, f"no heat map of {phrase!r} in {evidence.map}")


def grounding_figure(
    card: ScoreCard,
    *,
    run_dir: str | os.PathLike[str],
    entity: str | None = None,
    max_side: int = 1024,
    sources: Sequence[str | os.PathLike[str]] = (),
) -> Figure:
    """The item's picture beside one entity's per-patch similarity heat map.

    Args:
        card: A ScoreCard of the run.
        run_dir: Its run directory (the evidence's heat map path is relative to it).
        entity: Phrase or concept of a grounded entity (default: the least grounded one).
        max_side: Longest side of the thumbnail in pixels.
        sources: The run's input folders, when the items lie outside the run (an item is
            opened only inside the run or these: :func:`~pathgls.inspect.paths.item_path`).

    Returns:
        Two panels (thumbnail; heat map with colour bar) with the entity's best window (cyan)
        and best patch (lime) outlined. When grounding is missing, or the picture cannot be
        read, or its evidence is malformed, one panel stating why (over the thumbnail when
        it can be read).

    Raises:
        UnknownNameError: ``entity`` is not among the grounded entities.
    """
    from matplotlib.figure import Figure

    from pathgls.inspect.viz import plot_heatmap

    g = card.modules.get("grounding")
    ev, bad = GroundingEvidence(), ""
    try:
        ev = card.evidence(GroundingEvidence) or ev
    except EvidenceError as e:
        bad = str(e)
    chosen = _pick_entity(ev, entity)
    thumb, size, why = None, (1, 1), ""
    try:
        thumb, size = _item_image(card, max_side, run_dir=run_dir, sources=sources)
    except (PathGLSError, OSError, ValueError) as e:
        why = f"the item's picture cannot be read: {e}"
    if bad:
        return _message_figure(_title(card), f"grounding evidence unreadable: {bad}", thumb)
    if g is None or g.value is None or chosen is None:
        missing = "not run" if g is None else (g.missing_reason or "no grounded entity")
        also = f"; {why}" if why else ""  # never a picture's refusal left unsaid
        return _message_figure(_title(card), f"grounding missing: {missing}{also}", thumb)
    if thumb is None:
        return _message_figure(_title(card), why, None)
    phrase = chosen.phrase
    gmap, note = _map_values(Path(run_dir), ev, phrase)
    fig = Figure(figsize=(13, 6))
    ax_img, ax_map = fig.subplots(1, 2)
    ax_img.imshow(thumb)
    ax_img.set_axis_off()
    ax_img.set_title(_title(card), fontsize=10)
    label = f"{phrase}: similarity {_num(chosen.similarity):.3f}, "
    label += f"calibrated {_num(chosen.calibrated):.3f}"
    if gmap is not None:
        plot_heatmap(
            ax_map,
            thumbnail=thumb,
            values=gmap["values"][phrase],
            coords=gmap["coords"],
            patch_size_level0=gmap["patch_size_level0"],
            slide_size=size,
            title=label,
        )
    else:
        ax_map.imshow(thumb)
        ax_map.set_axis_off()
        ax_map.set_title(f"{label}\n{note}", fontsize=9)
    scale = (thumb.shape[1] / size[0], thumb.shape[0] / size[1])
    best_patch = chosen.top_patches[0].box if chosen.top_patches else None
    for ax in (ax_img, ax_map):
        if chosen.box is not None:
            _box(ax, chosen.box, scale, "cyan", "best window")
        if best_patch is not None:
            _box(ax, best_patch, scale, "lime", "best patch")
    if ax_img.patches:
        ax_img.legend(loc="lower right", fontsize=8)
    fig.text(0.01, 0.01, "\n".join(g.warnings), fontsize=8, color="firebrick")
    return fig


@dataclass(frozen=True)
class LogicView:
    """The report graph and the sentence pairs that contradict each other most."""

    graph: ReportGraph
    pairs: tuple[ContradictionPair, ...]  # the evidence's top pairs, highest probability first
    highlighted: frozenset[int]  # entity indices in the pairs at or above the threshold
    value: float | None
    missing_reason: str | None = None

    def render(self) -> str:
        """The score (or why it is missing) and the pairs, one line each."""
        head = f"logic {self.value:.3f}" if self.value is not None else "logic missing"
        lines = [head + (f": {self.missing_reason}" if self.missing_reason else "")]
        for i, p in enumerate(self.pairs, 1):
            lines.append(
                f"{i}. p={_num(p.probability):.2f} [{p.kind}] {p.premise!r} vs {p.hypothesis!r}"
            )
            if p.explanation:
                lines.append(f"   {p.rule or ''}: {p.explanation}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def logic_view(
    card: ScoreCard, *, extractor: EntityExtractor | None = None, threshold: float = 0.5
) -> LogicView:
    """The original report's graph, rebuilt, and the entities of its contradicting pairs.

    Args:
        card: A ScoreCard.
        extractor: Entity extractor (default: the lexicon, the runner's default).
        threshold: The entities of both sentences of every pair whose contradiction
            probability is at least this are highlighted.

    Raises:
        EvidenceError: the card's logic evidence is malformed.
    """
    from pathgls.text import analyze_report, build_extractor

    m = card.modules.get("logic")
    value, reason = (None, "not run") if m is None else (m.value, m.missing_reason)
    ev = card.evidence(LogicEvidence)
    pairs = ev.ranked() if ev is not None else ()
    report = card.reports.get("original")
    if report is None:
        reason = "; ".join(r for r in (reason, "no original report") if r)
        return LogicView(ReportGraph(), pairs, frozenset(), value, reason)
    analyzed = analyze_report(report.text, extractor=extractor or build_extractor("lexicon"))
    texts = [s.text for s in analyzed.parsed.sentences]
    by_sentence = analyzed.entities_by_sentence()
    marks: set[int] = set()
    for p in pairs:
        if p.probability is None or p.probability < threshold:
            continue
        for i, text in ((p.premise_sentence, p.premise), (p.hypothesis_sentence, p.hypothesis)):
            if not (i is not None and 0 <= i < len(texts) and texts[i] == text):
                i = texts.index(text) if text in texts else i  # another extractor's parse
            marks.update(by_sentence.get(i, []) if i is not None else [])
    return LogicView(analyzed.graph, pairs, frozenset(marks), value, reason)


def logic_figure(
    card: ScoreCard, *, extractor: EntityExtractor | None = None, threshold: float = 0.5
) -> Figure:
    """The report graph with contradicting entities outlined in red, and the pairs listed.

    Arguments as :func:`logic_view`. When logic is missing its reason is shown, under the
    graph when the report has entities.
    """
    from matplotlib.figure import Figure

    from pathgls.text.graph import draw_graph, graph_rows

    view = logic_view(card, extractor=extractor, threshold=threshold)
    graph, highlight, shown = _focus(view.graph, view.highlighted)
    graph_height = max(2.0, 1.1 * graph_rows(graph) + 0.8)  # labels need their row
    fig = Figure(figsize=(12, graph_height + 1.8))
    ax_graph, ax_text = fig.subplots(2, 1, height_ratios=[graph_height, 1.8])
    fig.subplots_adjust(left=0.02, right=0.86, top=1 - 0.5 / (graph_height + 1.8), bottom=0.02)
    if graph.entities:
        draw_graph(graph, ax=ax_graph, highlight=highlight)
    else:
        ax_graph.set_axis_off()
        ax_graph.text(0.5, 0.5, "no entity in the report", ha="center", va="center")
    ax_graph.set_title(_title(card) + (f"\n{shown}" if shown else ""), fontsize=10)
    ax_text.set_axis_off()
    body = [textwrap.shorten(line, 140) for line in view.render().splitlines()[:9]]
    ax_text.text(0.0, 1.0, "\n".join(body), va="top", fontsize=8, family="monospace")
    return fig


#: A report graph with more entities is drawn around its contradicting entities only.
MAX_DRAWN_ENTITIES = 60


def _focus(
    graph: ReportGraph, marks: frozenset[int], limit: int = MAX_DRAWN_ENTITIES
) -> tuple[ReportGraph, list[int], str]:
    """The graph to draw: all of it, or, above ``limit`` entities, the marked ones and their
    neighbours (then a note says how many of how many are shown)."""
    n = len(graph.entities)
    if n <= limit:
        return graph, sorted(marks), ""
    keep = set(marks)
    for r in graph.relations:
        if r.head in marks or r.tail in marks:
            keep |= {r.head, r.tail}
    chosen = sorted(keep)[:limit] if keep else list(range(limit))
    index = {old: new for new, old in enumerate(chosen)}
    sub = ReportGraph(
        entities=[graph.entities[i] for i in chosen],
        relations=[
            dataclasses.replace(r, head=index[r.head], tail=index[r.tail])
            for r in graph.relations
            if r.head in index and r.tail in index
        ],
        scopes=[graph.scopes[i] for i in chosen] if graph.scopes else [],
    )
    what = "the contradicting entities and their neighbours" if keep else "the first entities"
    note = f"{len(chosen)} of {n} entities shown: {what}"
    return sub, sorted(index[m] for m in marks if m in index), note


@dataclass(frozen=True)
class ConditionDiff:
    """How the report changed under one condition (stain or attack), against the original."""

    condition: str
    delta: float | None
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    negation_flipped: tuple[str, ...] = ()
    diagnosis_changed: bool | None = None  # None: stability evidence missing
    diagnoses_before: tuple[str, ...] = ()
    diagnoses_after: tuple[str, ...] = ()
    text_diff: tuple[str, ...] = ()  # changed lines of the report text, "-old" / "+new"

    def render(self) -> str:
        """A readable block of lines."""
        lines = [f"[{self.condition}] Δ = " + ("—" if self.delta is None else f"{self.delta:.3f}")]
        for name in _CHANGES[:3]:
            if getattr(self, name):
                lines.append(f"  {name.replace('_', ' ')}: {', '.join(getattr(self, name))}")
        if self.diagnosis_changed is not None:
            before = ", ".join(self.diagnoses_before) or "none"
            after = ", ".join(self.diagnoses_after) or "none"
            changed = "CHANGED" if self.diagnosis_changed else "unchanged"
            lines.append(f"  diagnosis {changed}: {before} → {after}")
        return "\n".join(lines + ([f"  {d}" for d in self.text_diff] or ["  (same text)"]))


@dataclass(frozen=True)
class AttackDiff:
    """What changed in a card's report under each perturbed condition."""

    item_id: str
    subject: str
    stability: float | None
    missing_reason: str | None
    conditions: dict[str, ConditionDiff]  # stain first, then the attacks

    def render(self) -> str:
        """Every condition's block under a header with S_s (or why it is missing)."""
        s = self.stability
        head = f"{s:.3f}" if s is not None else f"missing ({self.missing_reason})"
        blocks = [f"{self.item_id} · {self.subject}: stability {head}"]
        blocks += [c.render() for c in self.conditions.values()] or ["no perturbed report"]
        return "\n".join(blocks)

    def __str__(self) -> str:
        return self.render()


def attack_diff(card: ScoreCard) -> AttackDiff:
    """Per perturbed condition: Δ and finding changes (stability evidence) and a text diff.

    Raises:
        EvidenceError: the card's stability evidence is malformed.
    """
    m = card.modules.get("stability")
    ev = card.evidence(StabilityEvidence) or StabilityEvidence()
    original = card.reports.get("original")
    before = original.text.splitlines() if original is not None else []
    out = {}
    for name in sorted((c for c in card.reports if c != "original"), key=lambda c: c != "stain"):
        role = ev.role(name)
        changes, delta = ev.changes_of(role) or FindingChanges(), ev.delta_of(role)
        after = card.reports[name].text.splitlines()
        diff = difflib.unified_diff(before, after, lineterm="", n=0)
        out[name] = ConditionDiff(
            condition=name,
            delta=None if delta is None else float(delta),
            diagnosis_changed=changes.diagnosis_changed,
            text_diff=tuple(d for d in islice(diff, 2, None) if not d.startswith("@@")),
            **{k: getattr(changes, k) for k in _CHANGES},
        )
    return AttackDiff(
        item_id=card.item_id,
        subject=card.subject,
        stability=m.value if m is not None else None,
        missing_reason="not run" if m is None else m.missing_reason,
        conditions=out,
    )
