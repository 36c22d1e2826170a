"""The HTML run report: one self-contained page of a run for a pathologist, reviewer or manager.

:func:`write_run_report` reads a run directory (ScoreCards, manifest, config, grounding maps)
and writes one static HTML file rendered from a Jinja2 template (autoescaped): the run's
config and model versions, the subject table with bootstrap CIs and ranks, the paired
comparison of the subjects, the module distributions, the gate table with its reasons, and a
failure gallery of the lowest-trust items — the grounding heat map over the item's thumbnail
(when grounding ran), the contradicting sentence pairs with the rule that fired, and the attack
diff. Every picture is a PNG inlined as a ``data:`` URI and the page loads nothing from
anywhere: it opens offline, from a mail attachment as well. Scores made with random-weight
(test) models are marked wherever they appear.

The page is built from plain data (:func:`report_context`), so what it shows can be tested
without parsing HTML.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import math
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pathgls.config import FusionConfig
from pathgls.errors import (
    ComparisonError,
    ConfigError,
    EvidenceError,
    PathGLSError,
    RunReportError,
)
from pathgls.evidence import GroundingEvidence, LogicEvidence
from pathgls.inspect.failures import RunView, attack_diff, load_run, lowest_trust
from pathgls.modules import BY_NAME, MODULE_NAMES, module_names, score_modules
from pathgls.reasons import card_reasons, same_statement
from pathgls.types import ScoreCard

TEMPLATE_DIR = Path(__file__).with_name("templates")
TEMPLATE = "run_report.html.j2"
#: Metrics of the subject table, in order, built-in modules alone (kept for code that imported
#: it; :func:`table_metrics` includes the plugins).
TABLE_METRICS = ("trust", *MODULE_NAMES)


def table_metrics() -> tuple[str, ...]:
    """Metrics of the subject table, in order: the trust, then every module (plugins too)."""
    return ("trust", *module_names())


@dataclass(frozen=True)
class RunReportConfig:
    """What the run report shows."""

    # Lowest-trust items in the failure gallery.
    failures: int = 6
    # Longest side of the thumbnails in the gallery, in pixels.
    thumbnail_side: int = 480
    # Items listed per subject pair where the two disagree most.
    disagreements: int = 5
    # Gate reasons shown per card before "more".
    reasons: int = 3
    # Input folders whose items may be shown (a run's own manifest is not trusted for that).
    sources: tuple[Path, ...] = ()
    # A gate config written by ``pathgls calibrate --risk``: its certificate is shown by the gate.
    certificate: Path | None = None

    def __post_init__(self) -> None:
        if self.failures < 0 or self.thumbnail_side < 32 or self.disagreements < 0:
            raise RunReportError(
                "failures and disagreements must be ≥ 0 and thumbnail_side ≥ 32; got "
                f"{self.failures}, {self.disagreements}, {self.thumbnail_side}"
            )


def png_data_uri(image: np.ndarray) -> str:
    """An RGB ``uint8`` array as a ``data:image/png;base64,...`` URI."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure_uri(fig: Any) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _walk_models(obj: Any, path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(obj, Mapping):
        if "random_weights" in obj:
            yield path, obj
        for k, v in obj.items():
            yield from _walk_models(v, f"{path}.{k}" if path else str(k))


#: Built-in modules whose value depends on each model role of a card's inputs (random weights
#: mark them); a plugin's ``models`` add it to its roles (:func:`role_modules`).
ROLE_MODULES: Mapping[str, tuple[str, ...]] = {
    "encoder": ("grounding",),
    "extractor": ("grounding", "logic", "stability", "report", "hare"),
    "nli": ("logic", "stability"),
    "embedder": ("stability", "report"),
    "hare": ("hare",),
    "report": ("report",),
}


def role_modules() -> dict[str, tuple[str, ...]]:
    """:data:`ROLE_MODULES` with each plugin module under the roles it depends on."""
    out = {role: list(names) for role, names in ROLE_MODULES.items()}
    for m in score_modules():
        if m.name not in BY_NAME:
            for role in m.models:
                out.setdefault(role, []).append(m.name)
    return {role: tuple(names) for role, names in out.items()}


def random_models(card: ScoreCard) -> list[str]:
    """Models with random (test) weights behind a score the card has, as ``role: model``.

    A random model whose modules all went missing made no score and is not listed.
    """
    found = []
    roles = [("encoder", card.inputs.get("encoder"))]
    models = card.inputs.get("models")
    if isinstance(models, Mapping):
        roles += list(models.items())
    by_role = role_modules()
    for role, described in roles:
        scored = any(card.value(m) is not None for m in by_role.get(role, ()))
        for path, m in _walk_models(described, role):
            if scored and m.get("random_weights"):
                found.append(f"{path}: {m.get('model_id') or m.get('name')}")
    return found


def short_subject(subject: str, width: int = 28) -> str:
    """A subject spec short enough for an axis label (``replay:…/tail.jsonl``)."""
    if len(subject) <= width:
        return subject
    from pathgls.registry import parse_spec

    try:
        spec = parse_spec(subject, what="subject")
    except ConfigError:
        return subject[: width - 1] + "…"
    tail = spec.arg.replace("\\", "/").rsplit("/", 1)[-1]
    short = f"{spec.kind}:…/{tail}" if spec.arg else subject
    return short if len(short) <= width else short[: width - 1] + "…"


def _has(card: ScoreCard, metric: str) -> bool:
    if metric == "trust":
        return card.trust is not None
    return card.value(metric) is not None


def _pct(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{float(x):.0%}"


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{float(x):.{digits}f}"


def _subject_rows(view: RunView, fusion: FusionConfig) -> list[dict[str, Any]]:
    """The summary table's rows in rank order, with the matched trust the rank rests on."""
    from pathgls.runner.summary import COVERAGE, MATCHED, summarise

    table = summarise(view.cards, fusion=fusion)
    random_subjects = {c.subject for c in view.cards if random_models(c)}
    rows = []
    for row in table.to_dict(orient="records"):
        cells = {}
        for m in (*table_metrics(), COVERAGE, MATCHED):
            n = int(row[f"{m}_n"])
            lo, hi = row[f"{m}_ci_low"], row[f"{m}_ci_high"]
            digits = 2
            ci = f"[{_fmt(lo, digits)}, {_fmt(hi, digits)}]" if math.isfinite(lo) else ""
            cells[m] = {"mean": _fmt(row[f"{m}_mean"]) if n else "missing", "ci": ci, "n": n}
        rank = row["rank"]
        tier = row.get("tier", math.nan)
        rows.append(
            {
                "subject": row["subject"],
                "rank": "–" if not math.isfinite(rank) else str(int(rank)),
                "n_items": int(row["n_items"]),
                "statuses": f"{row['n_ok']}/{row['n_partial']}/{row['n_failed']}",
                "routes": f"{row['deploy']}/{row['review']}/{row['reject']}",
                "metrics": cells,
                "coverage": cells[COVERAGE],
                "matched": cells[MATCHED],
                "matched_on": row["matched_on"] or "",
                # the rank's first key: the coverage tier (the matched trust orders within it)
                "tier": f"tier {int(tier)}"
                if isinstance(tier, float | int) and math.isfinite(tier)
                else "–",
                "random": row["subject"] in random_subjects,
            }
        )
    return rows


def _comparisons(
    view: RunView, config: RunReportConfig, fusion: FusionConfig
) -> list[dict[str, Any]]:
    """Each pair of subjects on matched trust, or the reason it was not compared."""
    from pathgls.meta.compare import CompareConfig, compare_subjects

    subjects = sorted({c.subject for c in view.cards})
    cfg = CompareConfig(top=config.disagreements)
    out: list[dict[str, Any]] = []
    pairs = list(itertools.combinations(subjects, 2))
    compared = []
    for a, b in pairs:
        try:
            compare_subjects(cards=view.cards, subjects=[a, b], config=cfg, fusion=fusion)
            compared.append((a, b))
        except ComparisonError as e:
            out.append({"a": a, "b": b, "refused": str(e)})
    if compared:  # Holm across the pairs that could be compared
        names = sorted({s for pair in compared for s in pair})
        res = compare_subjects(cards=view.cards, subjects=names, config=cfg, fusion=fusion)
        keep = set(compared)
        for p in res.pairs:
            if (p.a, p.b) not in keep:
                continue
            out.append(
                {
                    "a": p.a,
                    "b": p.b,
                    "refused": None,
                    "n": p.n,
                    "on": p.matched_on,
                    "means": f"{p.mean_a:.3f} / {p.mean_b:.3f}",
                    "diff": f"{p.mean_difference:+.3f}",
                    "ci": f"[{p.ci_low:+.3f}, {p.ci_high:+.3f}]",
                    "p": f"{p.p_permutation:.3g}",
                    "p_holm": f"{p.p_holm:.3g}",
                    "p_wilcoxon": "—" if p.p_wilcoxon is None else f"{p.p_wilcoxon:.3g}",
                    "wtl": f"{p.wins}/{p.ties}/{p.losses}",
                    "full": f"{_fmt(p.trust_a)} / {_fmt(p.trust_b)}",
                    "coverage": f"{_pct(p.coverage_a)} / {_pct(p.coverage_b)}",
                    "note": p.note,
                    "disagreements": [
                        f"{d.item_id}: {d.a:.3f} vs {d.b:.3f} ({d.difference:+.3f})"
                        for d in p.disagreements
                    ],
                }
            )
    return sorted(out, key=lambda r: (r["a"], r["b"]))


def _distributions(view: RunView, metrics: list[str]) -> str | None:
    """Box and points of each scored metric per subject, as a PNG data URI (None: nothing)."""
    from matplotlib.figure import Figure

    if not metrics:
        return None
    subjects = sorted({c.subject for c in view.cards})
    fig = Figure(figsize=(min(3.0 * len(metrics), 15.0), 3.8), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    rng = np.random.default_rng(0)  # jitter of the points only
    for ax, metric in zip(axes, metrics, strict=True):
        data = [
            [
                float(v)
                for c in view.cards
                if c.subject == s and c.status != "failed"
                for v in [c.trust if metric == "trust" else c.value(metric)]
                if v is not None
            ]
            for s in subjects
        ]
        ax.boxplot([d if d else [np.nan] for d in data], widths=0.5, showfliers=False)
        for i, d in enumerate(data, 1):
            ax.scatter(i + rng.uniform(-0.12, 0.12, len(d)), d, s=12, alpha=0.7, zorder=3)
        ax.set_title(metric)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xticks(range(1, len(subjects) + 1))
        ax.set_xticklabels([short_subject(s) for s in subjects], rotation=20, ha="right")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("score")
    return _figure_uri(fig)


def _gate_rows(view: RunView, config: RunReportConfig) -> list[dict[str, Any]]:
    rows = []
    for card in sorted(view.cards, key=lambda c: (c.subject, c.item_id)):
        if card.decision is None:
            route = "failed" if card.status == "failed" else "none"
            reasons = [e.splitlines()[0] for e in card.errors if e] or ["no gate decision"]
        else:
            route, reasons = card.decision.route, card_reasons(card)
        rows.append(
            {
                "item": card.item_id,
                "subject": card.subject,
                "status": card.status,
                "route": route,
                "trust": _fmt(card.trust),
                "modules": {m: _fmt(card.value(m)) for m in table_metrics()},
                "reasons": reasons[: config.reasons],
                "more": reasons[config.reasons :],
                "random": random_models(card),
            }
        )
    return rows


def _grounding_panel(
    card: ScoreCard, run_dir: Path, side: int, sources: tuple[Path, ...] = ()
) -> dict[str, Any]:
    """The heat map of the least grounded entity over the thumbnail, or why there is none."""
    from pathgls.inspect.failures import _item_image, _map_values
    from pathgls.inspect.viz import heatmap_overlay

    try:
        thumb, size = _item_image(card, side, run_dir=run_dir, sources=sources)
    except (PathGLSError, OSError, ValueError) as e:
        return {"image": None, "note": f"the item's picture cannot be read: {e}"}
    g = card.modules.get("grounding")
    try:
        ev = card.evidence(GroundingEvidence)
    except EvidenceError as e:
        return {"image": png_data_uri(thumb), "note": f"grounding evidence unreadable: {e}"}
    chosen = ev.least_grounded() if ev is not None else None
    if g is None or g.value is None or ev is None or chosen is None:
        why = "not run" if g is None else (g.missing_reason or "no grounded entity")
        return {"image": png_data_uri(thumb), "note": f"grounding missing: {why}"}
    gmap, note = _map_values(run_dir, ev, chosen.phrase)
    caption = (
        f"least grounded: {chosen.phrase!r} (similarity {_fmt(chosen.similarity)}, "
        f"calibrated {_fmt(chosen.calibrated)})"
    )
    if gmap is None:
        return {"image": png_data_uri(thumb), "note": f"{caption}; {note}"}
    over = heatmap_overlay(
        thumbnail=thumb,
        values=gmap["values"][chosen.phrase],
        coords=gmap["coords"],
        patch_size_level0=gmap["patch_size_level0"],
        slide_size=size,
    )
    return {"image": png_data_uri(over), "note": caption + " — brighter: more similar"}


def _logic_panel(card: ScoreCard) -> dict[str, Any]:
    m = card.modules.get("logic")
    try:
        ev = card.evidence(LogicEvidence)
    except EvidenceError as e:
        return {"note": f"logic evidence unreadable: {e}", "checks": [], "pairs": [], "case": []}
    if m is None or m.value is None:
        why = "not run" if m is None else m.missing_reason
        return {"note": f"logic missing: {why}", "checks": [], "pairs": [], "case": []}
    ev = ev or LogicEvidence()
    checks = [
        {
            "rule": c.rule,
            "p": _fmt(c.probability, 2),
            "explanation": c.explanation,
            "first": c.first.sentence,
            "first_scope": c.first.scope,
            "second": c.second.sentence,
            "second_scope": c.second.scope,
        }
        for c in ev.checks
    ]
    pairs = [
        {"p": _fmt(p.probability, 2), "premise": p.premise, "hypothesis": p.hypothesis}
        for p in [p for p in ev.ranked() if not p.checks and not same_statement(p)][:3]
    ]
    note = f"logic {_fmt(m.value)}" + ("" if checks else ": no consistency check fired")
    report = card.reports["original"].text if "original" in card.reports else ""
    return {"note": note, "checks": checks, "pairs": pairs, "case": case_rows(report)}


#: At most this many rows of the case model per failure case (the facts of fired checks first).
CASE_ROWS = 24


def case_rows(report: str) -> list[dict[str, Any]]:
    """The case model Logic read from ``report`` — part, target, slot, value, the words — with the
    facts of every fired check first and marked."""
    if not report.strip():
        return []
    from pathgls.logic.checks import run_checks
    from pathgls.text.case import build_case

    case = build_case(report)
    fired = {(f.statement, f.start) for c in run_checks(case) if c.conflict for f in (c.a, c.b)}
    facts = sorted(
        (f for f in case.facts if f.certain and f.slot != "mention"),
        key=lambda f: ((f.statement, f.start) not in fired, f.statement, f.start),
    )
    return [
        {
            "part": f.target.part or "case",
            "target": f.target.kind + (f" {f.target.name}" if f.target.name else ""),
            "slot": f.slot + (f" {f.key}" if f.key else ""),
            "value": str(f.value),
            "words": " ".join(case.evidence(f).split())[:80],
            "fired": (f.statement, f.start) in fired,
        }
        for f in facts[:CASE_ROWS]
    ]


def _attack_panel(card: ScoreCard) -> list[dict[str, Any]]:
    try:
        diff = attack_diff(card)
    except EvidenceError as e:
        return [{"condition": "stability", "delta": "—", "lines": [f"evidence unreadable: {e}"]}]
    out = []
    for c in diff.conditions.values():
        lines = list(c.text_diff) or ["(same text)"]
        if c.diagnosis_changed is not None:
            before = ", ".join(c.diagnoses_before) or "none"
            after = ", ".join(c.diagnoses_after) or "none"
            state = "changed" if c.diagnosis_changed else "unchanged"
            lines.insert(0, f"diagnosis {state}: {before} → {after}")
        out.append({"condition": c.condition, "delta": _fmt(c.delta), "lines": lines})
    return out


def _gallery(view: RunView, config: RunReportConfig) -> list[dict[str, Any]]:
    if config.failures == 0:
        return []
    chosen = lowest_trust(view, n=config.failures).index[: config.failures]
    out = []
    for i in chosen:
        card = view.cards[int(i)]
        out.append(
            {
                "item": card.item_id,
                "subject": card.subject,
                "trust": _fmt(card.trust),
                "route": card.decision.route if card.decision else card.status,
                "reason": card_reasons(card)[0]
                if card.decision and card.decision.reasons
                else "; ".join(e.splitlines()[0] for e in card.errors),
                "report": card.reports["original"].text if "original" in card.reports else "",
                "grounding": _grounding_panel(
                    card, view.run_dir, config.thumbnail_side, config.sources
                ),
                "logic": _logic_panel(card),
                "attack": _attack_panel(card),
                "random": random_models(card),
            }
        )
    return out


def _certificates(config: Path | None, cards: list[ScoreCard]) -> dict[str, Any]:
    """The gate config's certificates in lines, and how the run differs from their rows."""
    if config is None:
        return {"certificates": [], "certificate_warnings": []}
    from pathgls.inspect.review_cert import certificate_panel

    return certificate_panel(config, cards)


def _run_info(run_dir: Path) -> dict[str, Any]:
    from pathgls.runner.manifest import read_manifest
    from pathgls.version import __version__

    manifest = read_manifest(run_dir)
    config = run_dir / "config.toml"
    models = manifest.to_dict()["models"] if manifest is not None else None
    return {
        "pathgls": __version__,
        "status": manifest.status if manifest else "no manifest.json",
        "started": manifest.started if manifest else None,
        "finished": manifest.finished if manifest else None,
        "source": manifest.source if manifest else None,
        "python": manifest.python if manifest else None,
        "platform": manifest.platform if manifest else None,
        "packages": dict(manifest.packages) if manifest else {},
        "models": json.dumps(models, indent=2) if models else "",
        "config": config.read_text(encoding="utf-8") if config.is_file() else "",
    }


def report_context(
    *, run_dir: str | os.PathLike[str], config: RunReportConfig | None = None
) -> dict[str, Any]:
    """Everything the page shows, as plain data (the template's context).

    Raises:
        NoScoreCardsError: the folder holds no readable ScoreCard.
    """
    from pathgls.meta.ranking import RULE
    from pathgls.runner.store import ResultsStore

    cfg = config or RunReportConfig()
    view = load_run(run_dir)
    try:
        fusion = ResultsStore(run_dir).fusion_config()
    except ConfigError as e:
        raise RunReportError(f"{run_dir}: the run's config.toml cannot be read: {e}") from e
    random_any = sorted({m for c in view.cards for m in random_models(c)})
    metrics = table_metrics()
    scored = [m for m in metrics if any(_has(c, m) for c in view.cards)]
    return {
        "title": f"pathgls run report — {Path(run_dir).resolve().name}",
        "run_dir": str(Path(run_dir).resolve()),
        "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "info": _run_info(Path(run_dir)),
        "n_cards": len(view.cards),
        "unreadable": view.unreadable,
        "metrics": scored,  # the metrics some card has (the others are named as never scored)
        "never_scored": [m for m in metrics if m not in scored],
        "subjects": _subject_rows(view, fusion),
        "rank_rule": RULE,
        "comparisons": _comparisons(view, cfg, fusion),
        "distributions": _distributions(view, scored),
        "gate": _gate_rows(view, cfg),
        "gallery": _gallery(view, cfg),
        **_certificates(cfg.certificate, view.cards),
        "random_models": random_any,
    }


def template_env() -> Any:
    """The Jinja2 environment of pathgls's HTML pages: autoescaped, strict about undefined names."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_run_report(
    *, run_dir: str | os.PathLike[str], config: RunReportConfig | None = None
) -> str:
    """The report's HTML.

    Raises:
        NoScoreCardsError: the folder holds no readable ScoreCard.
        RunReportError: the template cannot be loaded or rendered.
    """
    import jinja2

    context = report_context(run_dir=run_dir, config=config)
    try:
        return template_env().get_template(TEMPLATE).render(**context)
    except jinja2.TemplateError as e:
        raise RunReportError(f"cannot render the run report template {TEMPLATE}: {e}") from e


def write_run_report(
    *,
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    config: RunReportConfig | None = None,
) -> Path:
    """Render the report of ``run_dir`` and write it (atomically) to ``out``.

    Raises:
        NoScoreCardsError: the folder holds no readable ScoreCard.
        RunReportError: the template fails, or ``out`` cannot be written.
    """
    from pathgls.io.atomic import write_text_atomic

    html = render_run_report(run_dir=run_dir, config=config)
    try:
        return Path(write_text_atomic(out, html))
    except OSError as e:
        raise RunReportError(f"cannot write the run report to {out}: {e}") from e
