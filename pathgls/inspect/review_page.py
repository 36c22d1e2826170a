"""The review page's cards: the *review* route of a run, worst first, with their evidence.

:func:`review_cards` gates every card of a run with the run's fusion config (and the gate
config given, else the run's) and keeps those routed to review, lowest trust first. Each card
carries what a pathologist needs to decide: the slide region or ROI with the grounding heat map
(where grounding ran), the report, each module's score, the contradicting pairs and the attack
diff — the same panels as the run report's failure gallery. :func:`render_review_page` renders
the page (Jinja2, autoescaped: every field from model output is escaped; no script, style or
picture is loaded from anywhere).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pathgls.errors import ConfigError, ReviewError, RunReportError
from pathgls.modules import MODULE_NAMES, module_names

TEMPLATE = "review.html.j2"
#: The built-in modules (kept for code that imported it; the page shows every module,
#: plugins included: :func:`~pathgls.modules.module_names`).
MODULES = MODULE_NAMES


def card_id(card: Any) -> str:
    """The id a card has in ``labels.tsv``: ``subject/item_id`` (``item_id`` without subject)."""
    return f"{card.subject}/{card.item_id}" if card.subject else str(card.item_id)


def review_cards(
    *,
    run_dir: str | os.PathLike[str],
    config: str | os.PathLike[str] | None = None,
    thumbnail_side: int = 640,
) -> list[dict[str, Any]]:
    """The run's review-route cards as plain data, lowest trust first.

    Raises:
        ReviewError: no readable card, a bad config, or no card in the review route.
    """
    from pathgls.config import load_config
    from pathgls.fusion import gate_scorecard
    from pathgls.inspect.run_report import (
        _attack_panel,
        _fmt,
        _grounding_panel,
        _logic_panel,
        random_models,
    )
    from pathgls.runner.store import ResultsStore

    run = Path(run_dir)
    try:
        cfg = load_config(config if config is not None else _run_config(run))
    except ConfigError as e:
        raise ReviewError(f"cannot read the gate config: {e}") from e
    cards = ResultsStore(run).load_cards() if (run / "scorecards").is_dir() else []
    if not cards:
        raise ReviewError(f"{run}: no readable ScoreCard under {run / 'scorecards'}")
    routes: dict[str, int] = {}
    chosen = []
    for card in cards:
        if card.status == "failed":
            routes["failed"] = routes.get("failed", 0) + 1
            continue
        card = gate_scorecard(card, fusion=cfg.fusion, gate=cfg.gate)
        route = card.decision.route if card.decision else "none"
        routes[route] = routes.get(route, 0) + 1
        if route == "review":
            chosen.append(card)
    if not chosen:
        counts = ", ".join(f"{n} {r}" for r, n in sorted(routes.items()))
        raise ReviewError(f"{run}: no card is in the review route ({counts}); nothing to review")
    chosen.sort(key=lambda c: (c.trust if c.trust is not None else -1.0, card_id(c)))
    out = []
    for card in chosen:
        out.append(
            {
                "id": card_id(card),
                "item": card.item_id,
                "subject": card.subject,
                "trust": _fmt(card.trust),
                "reasons": list(card.decision.reasons) if card.decision else [],
                "modules": {m: _fmt(card.value(m)) for m in module_names() if m in card.modules},
                "report": card.reports["original"].text if "original" in card.reports else "",
                "grounding": _grounding_panel(card, run, thumbnail_side),
                "logic": _logic_panel(card),
                "attack": _attack_panel(card),
                "random": random_models(card),
            }
        )
    return out


def _run_config(run: Path) -> Path | None:
    path = run / "config.toml"
    return path if path.is_file() else None


def render_review_page(
    *,
    cards: list[dict[str, Any]],
    labels: dict[str, str],
    title: str,
    nonce: str,
    reviewer: str = "",
) -> str:
    """The page's HTML (``nonce``: the one inline script's CSP nonce; ``reviewer``: the name
    filled in until the reviewer types their own, which the browser then remembers).

    Raises:
        RunReportError: the template cannot be loaded or rendered.
    """
    import jinja2

    from pathgls.inspect.run_report import template_env

    try:
        return (
            template_env()
            .get_template(TEMPLATE)
            .render(cards=cards, labels=labels, title=title, nonce=nonce, reviewer=reviewer)
        )
    except jinja2.TemplateError as e:
        raise RunReportError(f"cannot render the review template {TEMPLATE}: {e}") from e
