"""Validation rows from an expert-scored table of (reference, candidate) reports, offline.

Each candidate gets the scores a run would give it without a slide: the report-side module
(DxAlign against the reference, mapped to [0, 1] as the fusion fuses it,
:mod:`pathgls.baselines.report_side`) and Logic (S_l with the model-free rules NLI, the offline
default). The label is the raw expert score; :func:`pathgls.meta.labels.expert_labels` or a
cut-off turns it into acceptable / unacceptable. The organ of each row is the organ its
reference names most often (the lexicon's anatomical sites), for the certificate.

Scoring takes about a second per pair on one core; ``cache`` keeps the rows in a JSON file keyed
by the table's checksum, so repeated calibrations and benchmarks read them back.

May import: everything below :mod:`pathgls.meta`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pathgls.errors import CalibrationError, TableError
from pathgls.io.tables import read_table


@dataclass(frozen=True)
class ExpertRow:
    """One scored candidate: its id, the module scores, the expert score and the organ."""

    item_id: str
    scores: dict[str, float | None]
    expert: float
    organ: str | None


def is_expert_table(path: str | os.PathLike[str], *, score_column: str = "expert_score") -> bool:
    """True when the table has ``reference``, ``candidate`` and the score column."""
    try:
        cols = read_table(Path(path), what="table").columns
    except TableError:
        return False
    return {"reference", "candidate", score_column} <= set(cols)


def report_organ(text: str, extractor: object) -> str | None:
    """The organ the report's anatomical sites name most often (None: none named)."""
    from pathgls.text.scope import organ_of

    found = Counter(
        o
        for e in extractor.extract(text)  # type: ignore[attr-defined]
        if e.type == "anatomical_site"
        for o in [organ_of(e)]
        if o
    )
    return found.most_common(1)[0][0] if found else None


def score_expert_table(
    path: str | os.PathLike[str],
    *,
    score_column: str = "expert_score",
    id_columns: Sequence[str] = ("case_id", "candidate_slot"),
    cache: str | os.PathLike[str] | None = None,
) -> list[ExpertRow]:
    """Report-side and Logic scores of every candidate with a numeric expert score.

    Raises:
        CalibrationError: unreadable table, missing columns, or no usable row.
    """
    from pathgls.io.checksums import file_sha256

    p = Path(path)
    digest = file_sha256(p)
    key = f"{digest}:{score_column}:{','.join(id_columns)}"
    if cache is not None and Path(cache).is_file():
        try:
            data = json.loads(Path(cache).read_text(encoding="utf-8"))
            if data.get("key") == key:
                return [ExpertRow(**r) for r in data["rows"]]
        except (OSError, ValueError, TypeError, KeyError):
            pass  # a stale or broken cache is recomputed
    try:
        table = read_table(p, required=("reference", "candidate", score_column), what="experts")
    except TableError as e:
        raise CalibrationError(str(e)) from e
    ids = [c for c in id_columns if c in table.columns]
    items = []
    for line, r in zip(table.lines, table.rows, strict=True):
        try:
            expert = float(r[score_column] or "")
        except ValueError:
            continue
        ref, cand = r["reference"] or "", r["candidate"] or ""
        if ref.strip() and cand.strip():
            name = "/".join((r[c] or "").strip() for c in ids) if ids else f"line{line}"
            items.append((name, ref, cand, expert))
    if not items:
        raise CalibrationError(f"{p}: no row with a reference, a candidate and a numeric score")
    rows = _score(items)
    if cache is not None:
        from dataclasses import asdict

        from pathgls.io.atomic import write_text_atomic

        payload = {"key": key, "rows": [asdict(r) for r in rows]}
        write_text_atomic(cache, json.dumps(payload))
    return rows


def _score(items: list[tuple[str, str, str, float]]) -> list[ExpertRow]:
    from pathgls.baselines.dxalign import DxAlignConfig, dxalign_scores
    from pathgls.baselines.report_side import ReportModels, build_report_scorer
    from pathgls.config import ReportConfig
    from pathgls.logic import logic_score
    from pathgls.nli.rules import RulesNLI
    from pathgls.text import build_extractor
    from pathgls.text.embedders import build_embedder

    extractor, embedder = build_extractor("lexicon"), build_embedder("minilm")
    cfg = ReportConfig()
    scorer = build_report_scorer(
        config=cfg, models=ReportModels(extractor=extractor, embedder=embedder)
    )
    raw = dxalign_scores(
        references=[i[1] for i in items],
        candidates=[i[2] for i in items],
        extractor=extractor,
        embedder=embedder,
        config=DxAlignConfig(behaviour_weight=cfg.behaviour_weight),
    )
    organs: dict[str, str | None] = {}
    nli = RulesNLI()
    out = []
    for (name, ref, cand, expert), dx in zip(items, raw, strict=True):
        if ref not in organs:
            organs[ref] = report_organ(ref, extractor)
        logic = logic_score(report=cand, nli=nli).value
        report = scorer.calibrate(dx.score)  # type: ignore[attr-defined]
        out.append(
            ExpertRow(
                name,
                {"report": float(report), "logic": None if logic is None else float(logic)},
                expert,
                organs[ref],
            )
        )
    return out
