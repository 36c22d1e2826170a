"""Benchmark summary: per-subject tables with bootstrap CIs, files, plots and a console table.

:func:`summarise` turns the ScoreCards of a run into one row per subject (item and route counts,
then the mean and a percentile-bootstrap CI of every metric and of the coverage, then the
coverage-aware rank of :mod:`pathgls.meta.ranking` with the matched trust it ranks on, best
first); :func:`write_summary` stores that table as CSV and Parquet, :func:`plot_modules` and
:func:`plot_subjects` draw it, and :func:`print_summary` shows it with rich. Figures are built
on :class:`matplotlib.figure.Figure` with the Agg canvas, so no pyplot state is touched and
nothing needs a display.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pathgls.config import FusionConfig
from pathgls.errors import ConfigError, PathGLSError
from pathgls.io.atomic import write_via
from pathgls.io.sanitize import csv_cell
from pathgls.meta.ranking import RULE, card_coverage, rank_subjects
from pathgls.meta.stats import BootstrapArgs, bootstrap_ci
from pathgls.modules import MODULE_NAMES, module_names
from pathgls.types import ROUTES, STATUSES, ScoreCard


def _metrics(names: tuple[str, ...]) -> tuple[str, ...]:
    return (*sorted(names, key=lambda m: m == "report"), "trust")


def summary_metrics() -> tuple[str, ...]:
    """Every module, plugins included (report last: summary.csv's documented column order),
    then the trust."""
    return _metrics(module_names())


#: :func:`summary_metrics` of the built-in modules alone (kept for code that imported it).
METRICS = _metrics(MODULE_NAMES)
COUNT_COLUMNS = ("subject", "n_items", *(f"n_{s}" for s in STATUSES), *ROUTES)
STAT_SUFFIXES = ("n", "mean", "ci_low", "ci_high")
#: Share of the fusion weight scored, per card (:attr:`pathgls.fusion.FusionResult.coverage`).
COVERAGE = "coverage"
#: The trust fused again over the modules every subject of the coverage tier was scored on.
MATCHED = "matched_trust"
#: Rank (1 = best): coverage tiers first, then matched trust, tied where the CIs overlap
#: (:func:`pathgls.meta.ranking.rank_subjects`); NaN: unranked.
RANK_COLUMN = "rank"
RANK_COLUMNS = (
    "tier",
    *(f"{MATCHED}_{s}" for s in STAT_SUFFIXES),
    "matched_on",
    RANK_COLUMN,
)


def _columns(metric_names: tuple[str, ...]) -> tuple[str, ...]:
    return (
        COUNT_COLUMNS
        + tuple(f"{m}_{s}" for m in (*metric_names, COVERAGE) for s in STAT_SUFFIXES)
        + RANK_COLUMNS
    )


def columns() -> tuple[str, ...]:
    """The summary table's columns (:func:`summarize`), plugins' modules included."""
    return _columns(summary_metrics())


#: :func:`columns` of the built-in modules alone (kept for code that imported it).
COLUMNS = _columns(METRICS)

_UNKNOWN_SUBJECT = "unknown"


def _metric_value(card: ScoreCard, metric: str) -> float | None:
    if metric != "trust":
        return card.value(metric)
    trust = card.trust
    return float(trust) if trust is not None and math.isfinite(trust) else None


def _by_subject(cards: Iterable[ScoreCard]) -> dict[str, list[ScoreCard]]:
    """Cards grouped by subject, subjects sorted."""
    out: dict[str, list[ScoreCard]] = {}
    for card in cards:
        out.setdefault(card.subject or _UNKNOWN_SUBJECT, []).append(card)
    return dict(sorted(out.items()))


def _values(cards: list[ScoreCard], metric: str) -> list[float]:
    """Finite values of ``metric`` over the cards that are not failed."""
    found = (_metric_value(c, metric) for c in cards if c.status != "failed")
    return [v for v in found if v is not None]


def _dtypes() -> dict[str, str]:
    """Column dtypes of the summary table: counts are integers, statistics floats."""
    counts = [*COUNT_COLUMNS[1:], *(f"{m}_n" for m in (*summary_metrics(), COVERAGE, MATCHED))]
    text = ("subject", "matched_on")
    out = {c: "object" if c in text else "int64" if c in counts else "float64" for c in columns()}
    return out  # rank and tier are float64: NaN for an unranked subject


def summarise(
    cards: Iterable[ScoreCard],
    *,
    fusion: FusionConfig | None = None,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per subject: counts, mean and CI of each metric and the coverage, then the rank.

    Args:
        cards: ScoreCards of a run; their ``subject`` groups them (``unknown`` when empty) and
            their ``status`` is counted.
        fusion: The weights the cards were fused with (coverage and matched trust are computed
            with them; default: the default weights).
        n_boot: Bootstrap resamples per (subject, metric).
        confidence: Coverage of the intervals.
        seed: Seed used for every (subject, metric), so the table is reproducible.

    Returns:
        Rows best rank first (unranked last, then by subject), columns :func:`columns`. Failed
        cards count in ``n_items`` and ``n_failed`` but give no values; a metric without values
        has ``n`` 0 and NaN statistics. ``coverage_*`` is the share of the fusion weight scored,
        over the subject's completed items like the metrics. ``tier``, ``matched_trust_*``,
        ``matched_on`` and ``rank`` come from :func:`pathgls.meta.ranking.rank_subjects`: over
        the items every subject completed, coverage tiers first, then the trust over the
        modules every subject of the tier was scored on (named in ``matched_on``);
        ``pathgls compare`` tests the pairs.

    Raises:
        ConfigError: ``n_boot`` or ``confidence`` is out of range.
    """
    fusion = fusion or FusionConfig()
    cards = [c if c.subject else dataclasses.replace(c, subject=_UNKNOWN_SUBJECT) for c in cards]
    if not cards:
        bootstrap_ci([], n_boot=n_boot, confidence=confidence, seed=seed)  # validates arguments
        return pd.DataFrame({c: [] for c in columns()}).astype(_dtypes())
    boot = BootstrapArgs(n_boot=n_boot, confidence=confidence, seed=seed)
    known = summary_metrics()
    ranking = rank_subjects(cards, fusion=fusion, **boot)
    rows: list[dict[str, Any]] = []
    for subject, mine in _by_subject(cards).items():
        statuses = [c.status for c in mine]
        routes = [c.decision.route for c in mine if c.decision is not None]
        row: dict[str, Any] = {"subject": subject, "n_items": len(mine)}
        row.update({f"n_{s}": statuses.count(s) for s in STATUSES})
        row.update({r: routes.count(r) for r in ROUTES})
        series = {m: _values(mine, m) for m in known}
        series[COVERAGE] = [v for c in mine if (v := card_coverage(c, fusion)) is not None]
        for metric, xs in series.items():
            low, high = bootstrap_ci(xs, **boot)
            row[f"{metric}_n"] = len(xs)
            row[f"{metric}_mean"] = float(np.mean(xs)) if xs else math.nan
            row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = low, high
        st = ranking.of(subject)
        row["tier"] = float(st.tier) if st is not None and st.tier is not None else math.nan
        row[f"{MATCHED}_n"] = st.matched_n if st is not None else 0
        row[f"{MATCHED}_mean"] = st.matched if st is not None else math.nan
        low, high = st.matched_ci if st is not None else (math.nan, math.nan)
        row[f"{MATCHED}_ci_low"], row[f"{MATCHED}_ci_high"] = low, high
        row["matched_on"] = st.matched_on if st is not None else ""
        row[RANK_COLUMN] = float(st.rank) if st is not None and st.rank is not None else math.nan
        rows.append(row)
    rows.sort(key=lambda r: (not math.isfinite(r[RANK_COLUMN]), r[RANK_COLUMN], r["subject"]))
    return pd.DataFrame(rows, columns=list(columns())).astype(_dtypes())


def _atomic_write(path: Path, writer: Callable[[Path], None]) -> Path:
    """Write ``path`` atomically (see :func:`pathgls.io.atomic.write_via`)."""
    try:
        return write_via(path, writer)
    except OSError as e:
        raise PathGLSError(f"cannot write {path}: {e}") from e


def parquet_available() -> bool:
    """True when pyarrow is installed (``pip install 'pathgls[parquet]'``)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def write_summary(table: pd.DataFrame, *, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``summary.csv``, and ``summary.parquet`` where pyarrow is installed, to ``out_dir``.

    The Parquet copy is the optional extra ``parquet`` (pyarrow, ~100 MB, for this file only);
    without it the run log says how to get one.

    Returns:
        ``{"csv": path}``, plus ``"parquet": path`` when written.

    Raises:
        PathGLSError: A file cannot be written.
    """
    out = Path(out_dir)
    cells = table.apply(lambda col: col.map(csv_cell) if col.dtype == object else col)
    files = {"csv": _atomic_write(out / "summary.csv", lambda p: cells.to_csv(p, index=False))}
    if parquet_available():
        files["parquet"] = _atomic_write(
            out / "summary.parquet", lambda p: table.to_parquet(p, engine="pyarrow", index=False)
        )
    else:
        logging.getLogger(__name__).info(
            "summary.parquet not written: pyarrow is not installed (pip install 'pathgls[parquet]')"
        )
    return files


def _new_figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    return _atomic_write(Path(path), lambda p: fig.savefig(p, format="png", dpi=120))


def _no_scores(path: str | os.PathLike[str]) -> Path:
    fig = _new_figure(4.0, 3.0)
    fig.text(0.5, 0.5, "no scores", ha="center", va="center", fontsize=14)
    return _save_figure(fig, path)


def _short(subject: str, limit: int = 24) -> str:
    """A subject spec short enough for an axis or a legend: its start and its end (the model)."""
    return (
        subject
        if len(subject) <= limit
        else f"{subject[: limit // 2 - 1]}…{subject[-(limit // 2) :]}"
    )


def random_note(cards: Iterable[ScoreCard]) -> str | None:
    """A figure's mark when some of its scores come from random test weights."""
    random = sorted({name for c in cards for name, m in c.modules.items() if m.random_weights})
    if not random:
        return None
    return f"RANDOM WEIGHTS: {', '.join(random)} (and trust) are wiring checks, not results"


def _label_subjects(ax: Any, subjects: list[str], positions: Any) -> None:
    labels = [_short(s) for s in subjects]
    long = max((len(s) for s in labels), default=0) > 8 or len(labels) > 4
    ax.set_xticks(list(positions))
    ax.set_xticklabels(labels, rotation=30 if long else 0, ha="right" if long else "center")


def plot_modules(cards: Iterable[ScoreCard], *, path: str | os.PathLike[str]) -> Path:
    """Box plots of each metric by subject, with the individual scores overlaid; PNG at ``path``.

    Metrics without any value get no panel; when nothing is plottable the figure says so.
    """
    cards = list(cards)
    grouped = _by_subject(cards)
    subjects = list(grouped)
    known = summary_metrics()
    values = {s: {m: _values(grouped[s], m) for m in known} for s in subjects}
    shown = [m for m in known if any(values[s][m] for s in subjects)]
    if not shown:
        return _no_scores(path)
    panel_width = max(2.8, 0.7 * len(subjects) + 1.2)
    fig = _new_figure(panel_width * len(shown), 3.6)
    axes = fig.subplots(1, len(shown), squeeze=False)[0]
    rng = np.random.default_rng(0)
    for ax, metric in zip(axes, shown, strict=True):
        filled = [(i + 1, values[s][metric]) for i, s in enumerate(subjects) if values[s][metric]]
        positions = [p for p, _ in filled]
        data = [np.asarray(v) for _, v in filled]
        ax.boxplot(data, positions=positions, widths=0.6, showfliers=False)
        for pos, ys in zip(positions, data, strict=True):
            xs = pos + rng.uniform(-0.15, 0.15, size=ys.size)
            ax.scatter(xs, ys, s=12, alpha=0.6, color="tab:blue", zorder=3)
        _label_subjects(ax, subjects, range(1, len(subjects) + 1))
        ax.set_xlim(0.4, len(subjects) + 0.6)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(metric)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("score")
    note = random_note(cards)
    if note:
        fig.suptitle(note, color="red", fontweight="bold")
    return _save_figure(fig, path)


#: The bar groups of :func:`plot_subjects`: the ranking's number and coverage, then the rest.
PLOT_GROUPS = (COVERAGE, MATCHED, "trust", *MODULE_NAMES)


def plot_groups() -> tuple[str, ...]:
    """:data:`PLOT_GROUPS` with every module, plugins included."""
    return (COVERAGE, MATCHED, "trust", *module_names())


_GROUP_LABELS = {
    MATCHED: "matched trust\n(ranked within tier)",
    COVERAGE: "coverage\n(tier)",
    "trust": "full trust",
}


def _legend_label(rec: dict[str, Any]) -> str:
    rank = rec.get(RANK_COLUMN, math.nan)
    head = f"#{int(rank)} " if isinstance(rank, float) and math.isfinite(rank) else "unranked "
    on = str(rec.get("matched_on") or "")
    return head + _short(str(rec["subject"]), 40) + (f"\n  on {on}" if on else "")


def plot_subjects(
    table: pd.DataFrame, *, path: str | os.PathLike[str], random_note: str | None = None
) -> Path:
    """Grouped bars per subject, in rank order, with CI error bars; PNG at ``path``.

    The first groups are what the subjects are ranked on: the coverage, then the matched trust
    (each legend entry names its rank and the modules it was matched on); then the full trust,
    then each module. A value a subject has not got is a slot labelled "missing" (not a blank); the
    legend sits beside the bars; ``random_note`` (see :func:`random_note`) is a red title.

    Raises:
        ConfigError: ``table`` lacks columns of :func:`summarise`'s table.
    """
    needed = ["subject", RANK_COLUMN, "matched_on"] + [
        f"{m}_{s}" for m in PLOT_GROUPS for s in ("mean", "ci_low", "ci_high")
    ]
    lacking = [c for c in needed if c not in table.columns]
    if lacking:
        raise ConfigError(f"summary table lacks columns {lacking}")
    if table.empty or not np.isfinite(table[[f"{m}_mean" for m in METRICS]].to_numpy(float)).any():
        return _no_scores(path)
    table = table.sort_values(
        [RANK_COLUMN, "subject"], na_position="last", kind="stable"
    ).reset_index(drop=True)
    groups = [  # a plugin's module: when the table has it
        m
        for m in plot_groups()
        if f"{m}_mean" in table.columns and np.isfinite(table[f"{m}_mean"].to_numpy(float)).any()
    ]
    n_subjects = len(table)
    width = 0.8 / n_subjects
    fig = _new_figure(max(6.0, 1.0 + len(groups) * (0.35 * n_subjects + 0.6)), 4.2)
    ax = fig.subplots()
    x = np.arange(len(groups), dtype=np.float64)
    for i, row in enumerate(table.to_dict(orient="records")):
        offset = (i - (n_subjects - 1) / 2) * width
        means = np.array([row[f"{m}_mean"] for m in groups], dtype=np.float64)
        lows = np.array([row[f"{m}_ci_low"] for m in groups], dtype=np.float64)
        highs = np.array([row[f"{m}_ci_high"] for m in groups], dtype=np.float64)
        ok = np.isfinite(means)
        color = f"C{i % 10}"
        label = _legend_label(row)
        for xm in x[~ok] + offset:  # a missing value is named, not left as an empty slot
            ax.text(xm, 0.02, "missing", rotation=90, ha="center", va="bottom", fontsize=7)
        if not ok.any():  # nothing to draw, but keep the subject in the legend
            ax.bar([np.nan], [np.nan], width=width, color=color, label=label)
            continue
        ax.bar(x[ok] + offset, means[ok], width=width, color=color, label=label)
        tier = row.get("tier", math.nan)
        if MATCHED in groups and math.isfinite(tier) and ok[groups.index(MATCHED)]:
            # the matched trust ranks within a tier only: say which, on the bar
            xm = x[groups.index(MATCHED)] + offset
            ax.text(
                xm,
                0.02,
                f"tier {int(tier)}",
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=7,
                color="white",
            )
        ci = ok & np.isfinite(lows) & np.isfinite(highs)
        if ci.any():
            yerr = np.vstack([means[ci] - lows[ci], highs[ci] - means[ci]]).clip(min=0.0)
            ax.errorbar(x[ci] + offset, means[ci], yerr=yerr, fmt="none", ecolor="black", capsize=3)
    ax.set_xticks(x)
    ax.set_xticklabels([_GROUP_LABELS.get(m, m) for m in groups])
    ax.set_xlim(-0.5, len(groups) - 0.5)  # every slot inside the axes, the "missing" labels too
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("mean (whiskers: bootstrap CI)")
    ax.set_title(
        "Subjects in rank order: coverage first, then the trust over the modules they share",
        fontsize=10,
    )
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="rank, subject", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if random_note:
        fig.suptitle(random_note, color="red", fontweight="bold")
    return _save_figure(fig, path)


def _format_metric(row: dict[str, Any], metric: str) -> str:
    n = int(row[f"{metric}_n"])
    mean = float(row[f"{metric}_mean"])
    if n == 0 or not math.isfinite(mean):
        return "missing"
    low, high = float(row[f"{metric}_ci_low"]), float(row[f"{metric}_ci_high"])
    if math.isfinite(low) and math.isfinite(high):
        return f"{mean:.3f} [{low:.2f}, {high:.2f}] (n={n})"
    return f"{mean:.3f} (n={n})"


def _format_coverage(row: dict[str, Any]) -> str:
    mean = float(row[f"{COVERAGE}_mean"])
    return "–" if not math.isfinite(mean) else f"{mean:.0%}"


def ranked_on(row: dict[str, Any]) -> str:
    """What the rank uses, in its order: the coverage tier, then the matched trust within it
    (``tier 1 · 0.866 [0.80, 0.93] (n=3)``); a higher trust in a lower tier ranks below."""
    tier = row.get("tier", math.nan)
    head = f"tier {int(tier)}" if isinstance(tier, float | int) and math.isfinite(tier) else "–"
    return f"{head} · {_format_metric(row, MATCHED)}"


def print_summary(table: pd.DataFrame, *, console: Any, compact: bool = False) -> None:
    """Print the summary table on a :class:`rich.console.Console`, one row per subject.

    Rows in rank order; the matched trust the rank rests on and the modules it was matched on
    come first, the coverage and the full trust beside them. Metrics that no subject has are
    left out of the table and named in its caption.
    """
    from rich.table import Table
    from rich.text import Text

    from pathgls.io.sanitize import markup_text as escape

    known = [m for m in summary_metrics() if m in METRICS or f"{m}_n" in table.columns]
    shown = [m for m in known if len(table) == 0 or (table[f"{m}_n"] > 0).any()]
    absent = [m for m in known if m not in shown]
    caption = f"missing for every subject: {', '.join(absent)}" if absent else None
    caption = "; ".join(x for x in (caption, RULE) if x is not None)
    if compact:  # one block per subject: nothing cut at 80 columns or in a log
        _print_compact(table, shown=shown, caption=caption, console=console)
        return
    out = Table(title="PathGLS benchmark summary", caption=caption)
    out.add_column("rank", justify="right")
    out.add_column("subject", style="bold", overflow="fold")
    out.add_column("items", justify="right")
    out.add_column("ok/part/fail", justify="right")
    out.add_column("dep/rev/rej", justify="right")
    out.add_column("ranked on: tier, matched trust", justify="right", overflow="fold")
    out.add_column("coverage", justify="right")
    for metric in shown:
        out.add_column("full trust" if metric == "trust" else metric, justify="right")
    order = table.sort_values([RANK_COLUMN, "subject"], na_position="last", kind="stable")
    for row in order.to_dict(orient="records"):
        statuses = "/".join(str(int(row[f"n_{s}"])) for s in STATUSES)
        routes = "/".join(str(int(row[r])) for r in ROUTES)
        metrics = [Text(_format_metric(row, m)) for m in shown]
        matched = ranked_on(row)
        if row.get("matched_on"):
            matched += f"\non {row['matched_on']}"
        rank = row[RANK_COLUMN]
        out.add_row(
            "–" if not math.isfinite(rank) else str(int(rank)),
            escape(str(row["subject"])),
            str(int(row["n_items"])),
            statuses,
            routes,
            Text(matched),
            _format_coverage(row),
            *metrics,
        )
    console.print(out)


def _print_compact(table: pd.DataFrame, *, shown: list[str], caption: str, console: Any) -> None:
    """:func:`print_summary` as one block per subject (a head line, then its numbers)."""
    from rich.markup import escape

    console.print("[bold]PathGLS benchmark summary[/]")
    order = table.sort_values([RANK_COLUMN, "subject"], na_position="last", kind="stable")
    for row in order.to_dict(orient="records"):
        rank = row[RANK_COLUMN]
        head = "unranked" if not math.isfinite(rank) else f"#{int(rank)}"
        statuses = "/".join(str(int(row[f"n_{s}"])) for s in STATUSES)
        routes = "/".join(str(int(row[r])) for r in ROUTES)
        console.print(
            f"[bold]{head} {escape(str(row['subject']))}[/]: {int(row['n_items'])} items, "
            f"ok/part/fail {statuses}, deploy/review/reject {routes}",
            overflow="fold",
        )
        on = f" on {row['matched_on']}" if row.get("matched_on") else ""
        console.print(
            f"  ranked on {escape(ranked_on(row))}{escape(on)} · coverage {_format_coverage(row)}",
            overflow="fold",
        )
        metrics = " · ".join(
            f"{'full trust' if m == 'trust' else m} {_format_metric(row, m)}" for m in shown
        )
        console.print("  " + escape(metrics), overflow="fold")
    console.print(escape(caption), overflow="fold")
