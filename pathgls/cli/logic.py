"""``pathgls logic`` and ``pathgls entities``: report understanding from the command line."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pathgls.cli import preflight
from pathgls.cli.common import fail
from pathgls.errors import PathGLSError
from pathgls.io.sanitize import markup_text as escape
from pathgls.io.sniff import read_text_bytes
from pathgls.io.tables import read_table

Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``logic`` and ``entities`` to ``app``."""
    app.command("logic")(logic)
    app.command("entities")(entities)


def _read_reports(path: Path, column: str | None, id_column: str) -> list[tuple[str, bytes | str]]:
    """(id, report) items from a report file, or from a TSV with one report per row.

    Raises:
        NotTextError: the file is missing, a folder, or not text (an image, a PDF, ...).
        TableError: a TSV/CSV that cannot be read as a table.
        PathGLSError: no report column.
    """
    if path.suffix.lower() not in (".tsv", ".csv"):
        return [(path.stem, read_text_bytes(path, what="report"))]
    table = read_table(path, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
    fields = list(table.columns)
    col = column or next((c for c in ("candidate", "report", "text") if c in fields), None)
    if col is None or col not in fields:
        raise PathGLSError(f"{path}: no report column (have {', '.join(fields)}); pass --column")
    if not table.rows:
        raise PathGLSError(f"{path}: a header and no report rows: nothing to score")
    items: list[tuple[str, bytes | str]] = []
    first: dict[str, int] = {}
    twice = []
    for i, (line, row) in enumerate(zip(table.lines, table.rows, strict=True)):
        rid = row.get(id_column) or str(i)
        slot = row.get("candidate_slot")
        key = f"{rid}/{slot}" if slot not in (None, "") else rid
        if key in first:
            twice.append(f"{key!r} (lines {first[key]} and {line})")
        first.setdefault(key, line)
        items.append((key, row[col] or ""))
    if twice:
        raise PathGLSError(
            f"{path}: {len(twice)} {id_column} value(s) given twice: {', '.join(twice[:10])}; "
            "each report needs its own id"
        )
    return items


def make_scorer(spec: str) -> Any:
    """The scorer ``pathgls logic`` scores with (``models.nli``); each pool worker calls this
    once, so what it builds is what every worker runs."""
    from pathgls.nli import build_nli

    return build_nli(spec)


def score_report(text: bytes | str, scorer: Any, *, config: Any) -> Any:
    """S_l of one report text with ``scorer`` (``config``: the LogicConfig).

    Logic reads the cleaned text and its warnings, not entities: the entity pass is not run.
    """
    from pathgls.logic import logic_score
    from pathgls.text.analyze import AnalyzedReport
    from pathgls.text.sections import parse_report

    parsed = parse_report(text)
    report = AnalyzedReport(parsed=parsed, warnings=list(parsed.warnings))
    return logic_score(report=report, nli=scorer, config=config)


def _warm_before_fork() -> None:
    """Import Logic and the NLI backends and read one tiny case here, before the pool starts:
    forked workers then share those modules and vocabularies instead of each loading its own
    (on a busy machine that load is most of a short table's time; importing the backends
    imports torch, which every worker otherwise imported again). Under spawn it would be
    wasted: skipped."""
    import multiprocessing

    if multiprocessing.get_start_method(allow_none=False) != "fork":
        return
    import pathgls.nli  # noqa: F401  (the backends' modules, torch with them: imported once)
    from pathgls.logic import logic_score  # noqa: F401  (imported for the workers)
    from pathgls.text.case.build import build_case

    build_case("Diagnosis: invasive carcinoma. No necrosis.")


def logic(
    report: Annotated[
        Path, typer.Argument(help="A report file (.txt/.md) or a TSV/CSV of reports.")
    ],
    nli: Annotated[
        str | None, Opt(help="NLI backend: rules (default), or hf:<repo-or-dir>.")
    ] = None,
    extractor: Annotated[
        str | None,
        Opt(
            help="Entity extractor (checked, not run: S_l reads the report's statements, not "
            "its entities; see `pathgls entities`)."
        ),
    ] = None,
    column: Annotated[
        str | None, Opt(help="Report column of a TSV (default: candidate/report/text).")
    ] = None,
    id_column: Annotated[str, Opt(help="Id column of a TSV.")] = "case_id",
    top: Annotated[int, Opt(help="Contradicting pairs to show per report.")] = 3,
    config: Annotated[
        Path | None,
        Opt(help="TOML config: its logic section, models.nli and models.extractor."),
    ] = None,
    as_json: Annotated[bool, Opt("--json", help="Print JSON (one object per report).")] = False,
    workers: Annotated[
        int | None,
        Opt(
            min=1,
            help="Processes scoring a table (default: every core this process may use); "
            "results stream in input order.",
        ),
    ] = None,
) -> None:
    """Logic score S_l: do the report's findings contradict its diagnosis?"""
    from pathgls.config import load_config

    console = Console(stderr=True)
    try:  # inputs and specs first: no heavy import before they are known to be good
        preflight.config_file(config)
        cfg = load_config(config, models={"nli": nli, "extractor": extractor})
        items = _read_reports(report, column, id_column)
        preflight.check_config_models(cfg, nli=True, extractor=True)
    except PathGLSError as e:
        fail(console, e)
    from pathgls.cli.logic_pool import default_workers, score_in_pool, score_serially

    n_workers = min(workers or default_workers(), len(items))
    score = functools.partial(score_report, config=cfg.logic)
    try:
        if n_workers <= 1:
            results = score_serially(items, scorer=make_scorer(cfg.models.nli), score=score)
        else:
            _warm_before_fork()
            results = score_in_pool(
                items,
                make_scorer=functools.partial(make_scorer, cfg.models.nli),
                score=score,
                workers=n_workers,
            )
        _print_results(results, as_json=as_json, top=top, console=console)
    except PathGLSError as e:
        fail(console, e)


def _print_results(results: Any, *, as_json: bool, top: int, console: Console) -> None:
    """Print each report's S_l (or its error) as it comes."""
    from pathgls.evidence import LogicEvidence

    out = Console()
    for r in results:
        rid, score = r.rid, r.score
        if r.error is not None:
            console.print(f"[red]error[/] {escape(rid)}: {escape(r.error)}", soft_wrap=True)
            continue
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "id": rid,
                        "logic": score.value,
                        "missing_reason": score.missing_reason,
                        "evidence": score.evidence,
                        "warnings": score.warnings,
                    }
                )
            )
            continue
        value = "missing" if score.value is None else f"{score.value:.3f}"
        out.print(
            f"[bold]{escape(rid)}[/]  S_l = {value}"
            + (
                f"  ({escape(score.missing_reason or '')})"
                if score.value is None
                else f"  (K={score.evidence['k']} of {score.evidence['n_pairs']} pairs, "
                f"{r.scorer_name})"
            ),
            soft_wrap=True,
        )
        for w in score.warnings:
            out.print(f"  [yellow]warning:[/] {escape(w)}", soft_wrap=True)
        evidence = LogicEvidence.from_dict(score.evidence)
        for check in evidence.checks[:top]:  # what contradicts what, where, and why
            out.print(
                f"  [red]{escape(check.rule)}[/] p={check.probability:.2f}: "
                f"{escape(check.explanation)}",
                soft_wrap=True,
            )
            for side in (check.first, check.second):
                where = escape(f"[{side.scope}]")
                out.print(f"    {where} {escape(side.sentence)}", soft_wrap=True)
        if not evidence.checks:
            for pair in evidence.top_pairs[:top]:
                out.print(f"  p={pair.probability:.2f} ({escape(pair.kind)})", soft_wrap=True)
                out.print(f"    premise:    {escape(pair.premise)}", soft_wrap=True)
                out.print(f"    hypothesis: {escape(pair.hypothesis)}", soft_wrap=True)


def entities(
    report: Annotated[Path, typer.Argument(help="A report file.")],
    extractor: Annotated[
        str, Opt(help="Entity extractor: lexicon, hf-ner:<dir>, llm:<url>#<model>.")
    ] = "lexicon",
    as_json: Annotated[bool, Opt("--json", help="Print the report graph as JSON.")] = False,
) -> None:
    """Entities (type, section, negation, uncertainty) and relations of a report."""
    console = Console(stderr=True)
    try:
        data = read_text_bytes(report, what="report")
        preflight.check_spec("extractor", extractor)
    except PathGLSError as e:
        fail(console, e)
    from pathgls.text import analyze_report, build_extractor
    from pathgls.text.graph import graph_to_json

    try:
        ext = build_extractor(extractor)
        analyzed = analyze_report(data, extractor=ext)
    except PathGLSError as e:
        fail(console, e)
    if as_json:
        typer.echo(json.dumps(graph_to_json(analyzed.graph), indent=2))
        return
    out = Console()
    for w in analyzed.warnings:
        out.print(f"[yellow]warning:[/] {escape(w)}", soft_wrap=True)
    table = Table(title=f"{report.name}: {len(analyzed.entities)} entities")
    for col in ("#", "text", "type", "concept", "section", "neg", "unc", "attributes"):
        table.add_column(col)
    for i, ent in enumerate(analyzed.entities):
        attrs = ", ".join(f"{k}={v}" for k, v in sorted(ent.attributes.items()))
        table.add_row(
            str(i),
            escape(ent.text),
            ent.type,
            escape(ent.concept),
            ent.section,
            "yes" if ent.negated else "",
            "yes" if ent.uncertain else "",
            escape(attrs),
        )
    out.print(table)
    if analyzed.relations:
        rt = Table(title=f"{len(analyzed.relations)} relations")
        for col in ("head", "relation", "tail"):
            rt.add_column(col)
        for r in analyzed.relations:
            rt.add_row(
                f"{r.head} {escape(analyzed.entities[r.head].text)}",
                r.type,
                f"{r.tail} {escape(analyzed.entities[r.tail].text)}",
            )
        out.print(rt)
