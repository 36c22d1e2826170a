"""``pathgls hare`` and ``pathgls meta``: reference-based metrics and their validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli import preflight
from pathgls.cli.common import fail, progress_bar
from pathgls.errors import PathGLSError, SameInputError
from pathgls.io.sanitize import markup_text as escape
from pathgls.io.sniff import read_text_bytes
from pathgls.io.tables import read_table
from pathgls.jsontext import JSONTextError, loads_strict

Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``hare`` and ``meta`` to ``app``."""
    app.command("hare")(hare)
    app.command("meta")(meta)


#: Report columns looked for, in order, when none is given: the references' and candidates'.
REFERENCE_COLUMNS = ("reference", "report", "text")
CANDIDATE_COLUMNS = ("candidate", "report", "text")


def read_reports(
    path: Path,
    *,
    column: str | None = None,
    prefer: tuple[str, ...] = ("report", "text", "reference", "candidate"),
) -> tuple[list[tuple[str, str]], str | None]:
    """(id, report) items from a text file, a directory of .txt/.md files, or a TSV/CSV/JSONL.

    Args:
        path: The file or folder.
        column: The report column (key) of a table (JSONL); None: the first of ``prefer``.
        prefer: Columns looked for when ``column`` is None.

    Returns:
        The items and the column (key) they were read from (None for text files).

    Raises:
        NotTextError: a file that is not text (an image, a PDF, a spreadsheet, ...).
        PathGLSError: nothing readable there, or no report column.
    """
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in (".txt", ".md"))
        if not files:
            raise PathGLSError(f"{path}: no .txt or .md report in this directory")
        return [(p.stem, _text(p)) for p in files], None
    if not path.is_file():
        raise PathGLSError(f"{path}: no such file or directory")
    suffix = path.suffix.lower()
    names = (column,) if column else prefer
    if suffix == ".jsonl":
        items = []
        lines = _text(path, what="JSONL file").splitlines()
        key = None
        for i, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                obj = loads_strict(line)
            except JSONTextError as e:  # a key twice, too deep, invalid
                raise PathGLSError(f"{path}:{i}: not JSON: {e}") from e
            if not isinstance(obj, dict):
                raise PathGLSError(f"{path}:{i}: expected a JSON object, got {type(obj).__name__}")
            key = next((c for c in names if c in obj), None)
            if key is None:
                raise PathGLSError(f"{path}:{i}: no report key (tried {', '.join(names)})")
            items.append((str(obj.get("id", obj.get("case_id", i))), str(obj[key])))
        return items, key
    if suffix in (".tsv", ".csv"):
        table = read_table(path, what="reports")
        key = next((c for c in names if c in table.columns), None)
        if key is None:
            raise PathGLSError(f"{path}: no report column (tried {', '.join(names)})")
        rows = [(r.get("case_id") or str(i), r[key] or "") for i, r in enumerate(table.rows)]
        return rows, key
    return [(path.stem, _text(path))], None


def _text(path: Path, *, what: str = "report") -> str:
    return read_text_bytes(path, what=what).decode("utf-8", errors="replace")


def check_not_same(refs: Path, ref_col: str | None, cands: Path, cand_col: str | None) -> None:
    """Refuse references and candidates read from the same column of the same file.

    Raises:
        SameInputError: every pair would be a report against itself (HARE 1.0 by construction).
    """
    try:
        same_file = refs.resolve() == cands.resolve()
    except OSError:
        same_file = False
    if same_file and ref_col == cand_col:
        where = f"column {ref_col!r} of {refs}" if ref_col else str(refs)
        raise SameInputError(
            f"--refs and --cands both read {where}: every report would be scored against "
            "itself (1.0 by construction); name the columns with --ref-column and --cand-column"
        )


def hare(
    refs: Annotated[Path, Opt(help="Reference report(s): file, directory, TSV/CSV/JSONL.")],
    cands: Annotated[Path, Opt(help="Candidate report(s), aligned with --refs.")],
    ref_column: Annotated[
        str | None, Opt(help="Report column of a --refs table (default: reference/report/text).")
    ] = None,
    cand_column: Annotated[
        str | None,
        Opt(help="Report column of a --cands table (default: candidate/report/text)."),
    ] = None,
    negation_aware: Annotated[
        bool, Opt(help="A negated/affirmed entity pair never matches.")
    ] = False,
    as_json: Annotated[bool, Opt("--json", help="One JSON object per pair.")] = False,
) -> None:
    """HARE: entity soft-F1 and relation F1 of candidates against references (offline models).

    A table given to both --refs and --cands is read from its reference and candidate columns
    (or --ref-column / --cand-column); the same column for both is refused.
    """
    console = Console(stderr=True)
    try:
        r, ref_col = read_reports(refs, column=ref_column, prefer=REFERENCE_COLUMNS)
        c, cand_col = read_reports(cands, column=cand_column, prefer=CANDIDATE_COLUMNS)
        check_not_same(refs, ref_col, cands, cand_col)
        if len(r) != len(c):
            raise PathGLSError(f"{len(r)} references but {len(c)} candidates: align them")
    except PathGLSError as e:
        fail(console, e)
    empty = [cid for (_, a), (cid, b) in zip(r, c, strict=True) if not a.strip() or not b.strip()]
    if r and len(empty) == len(r):
        fail(
            console,
            f"every one of the {len(r)} pair(s) has an empty reference or candidate "
            f"({', '.join(empty[:10])}): HARE would be 0.000 on every row, measuring nothing",
        )
    if empty:
        console.print(
            f"[yellow]warning:[/] {len(empty)} of {len(r)} pair(s) have an empty reference or "
            f"candidate, scored 0: {escape(', '.join(empty[:20]))}",
            soft_wrap=True,
        )
    if r and all(a.strip() == b.strip() for (_, a), (_, b) in zip(r, c, strict=True)):
        console.print(
            f"[yellow]warning:[/] each of the {len(r)} candidate(s) is identical to its "
            "reference: HARE is 1.0 by construction",
            soft_wrap=True,
        )
    from pathgls.hare.metric import HareConfig
    from pathgls.hare.models import build_hare_models, score_pairs

    try:
        cfg = HareConfig(negation_aware=negation_aware)
        results = score_pairs(
            references=[t for _, t in r],
            candidates=[t for _, t in c],
            models=build_hare_models(config=cfg),
            config=cfg,
        )
    except (PathGLSError, ValueError) as e:
        fail(console, e if isinstance(e, PathGLSError) else str(e))
    if as_json:
        for (rid, _), (cid, _), res in zip(r, c, results, strict=True):
            d = res.to_dict()
            d.pop("entity_matches", None)
            d.pop("relation_matches", None)
            if cid in empty:
                d["warning"] = "empty reference or candidate: scored 0, nothing measured"
            typer.echo(json.dumps({"reference": rid, "candidate": cid, **d}))
        return
    table = Table(title=f"HARE (offline) — {len(results)} pair(s)")
    for col in ("reference", "candidate", "HARE", "F1 ent", "P ent", "R ent", "F1 rel"):
        table.add_column(col)
    for (rid, _), (cid, _), res in zip(r, c, results, strict=True):
        rel = "—" if res.relation_f1 is None else f"{res.relation_f1:.3f}"
        table.add_row(
            escape(rid),
            escape(cid),
            f"{res.score:.3f}",
            f"{res.entity_f1:.3f}",
            f"{res.entity_precision:.3f}",
            f"{res.entity_recall:.3f}",
            rel,
        )
    Console().print(table)


def meta(
    table_path: Annotated[
        Path, typer.Argument(help="TSV/CSV: reference, candidate, expert_score.")
    ],
    metrics: Annotated[
        str, Opt(help="Comma-separated: bleu, rouge1, rougeL, bertscore, entity_f1, hare, dxalign.")
    ] = "bleu,rougeL,bertscore,hare,dxalign",
    score_column: Annotated[str, Opt(help="Expert score column.")] = "expert_score",
    include_zeros: Annotated[bool, Opt(help="Keep pairs with an expert score of 0.")] = False,
    plots: Annotated[Path | None, Opt(help="Write a scatter plot per metric here.")] = None,
    as_json: Annotated[bool, Opt("--json", help="Print the table as JSON.")] = False,
) -> None:
    """Correlate metrics with expert scores (published protocol) and print the table."""
    from dataclasses import asdict

    console = Console(stderr=True)
    names = [m.strip() for m in metrics.split(",") if m.strip()]
    try:
        if not names:
            raise PathGLSError("--metrics names no metric")
        for n in names:
            preflight.check_spec("metric", n)
        preflight.text_file(table_path, what="expert table")
    except PathGLSError as e:
        fail(console, e)
    from pathgls.meta.correlate import correlate, read_expert_table, scatter_plot
    from pathgls.meta.metrics import compute_metrics

    try:
        rows, notes = read_expert_table(table_path, score=score_column)
        for n in notes:
            console.print(f"[yellow]skipped[/] {escape(n)}", soft_wrap=True)
        refs, cands = [r.reference for r in rows], [r.candidate for r in rows]
        values: dict[str, list[float]] = {}
        with progress_bar(console, quiet=as_json) as bar:  # a metric can take minutes
            task = bar.add_task("metrics", total=len(names))
            for n in names:
                bar.update(task, description=f"{n} on {len(rows)} pairs")
                values |= compute_metrics([n], references=refs, candidates=cands)
                bar.advance(task)
        expert = [r.expert for r in rows]
        results = [
            correlate(metric=n, values=values[n], expert=expert, include_zeros=include_zeros)
            for n in names
        ]
        if plots is not None:
            plots.mkdir(parents=True, exist_ok=True)
            for n in names:
                scatter_plot(
                    plots / f"{n}.png",
                    metric=n,
                    values=values[n],
                    expert=expert,
                    include_zeros=include_zeros,
                )
    except PathGLSError as e:
        fail(console, e)
    if as_json:
        typer.echo(json.dumps([asdict(c) for c in results], indent=2))
        return
    t = Table(title=f"{table_path.name}: metrics vs expert scores")
    for col in ("metric", "n", "Pearson r", "p", "Spearman ρ", "Kendall τ", "R²", "RMSE"):
        t.add_column(col)
    for c in results:
        t.add_row(
            c.metric,
            str(c.n),
            _num(c.pearson, ".3f"),
            _num(c.pearson_p, ".1e"),
            _num(c.spearman, ".3f"),
            _num(c.kendall, ".3f"),
            _num(c.r2, ".3f"),
            _num(c.rmse, ".3f"),
        )
    Console().print(t)
    for c in results:
        for w in c.warnings:
            console.print(f"[yellow]warning:[/] {escape(w)}", soft_wrap=True)


def _num(value: float, fmt: str) -> str:
    """A table cell: the value, or "undefined" for NaN (never the string "nan")."""
    return "undefined" if value != value else format(value, fmt)
