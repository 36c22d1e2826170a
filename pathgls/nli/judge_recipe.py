"""The judge's one-command retrain: real reports in, a trained judge directory out.

``pathgls judge train --reports TSV [--expert TSV] [--pairs JSONL] --out DIR`` reads the reports
(columns ``id, organ, report``; the expert file's ``reference`` column adds more), leaves out
every id in the held-out list (``heldout.txt`` beside the shipped judge: the untouched
evaluation rows and the bases of the blind sets' test halves), builds the pairs
(:mod:`pathgls.nli.judge_data`: the report-made sources; optionally siblings, each unit's
``neighbours`` nearest units by the judge's own embedding as consistent pairs, and extra
labelled pairs repeated ``extra_repeat`` times — the defaults reproduce the shipped judge),
trains (:mod:`pathgls.nli.judge_train`) and writes the weights, their description and the data
counts. The decision threshold is carried over from ``--threshold`` (chosen on dev data by
``benchmarks/bench_logic_judge.py --tune``).
"""

from __future__ import annotations

import csv
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pathgls.nli.judge import SHIPPED_DIR
from pathgls.nli.judge_data import Pair, build_pairs, neighbour_pairs, read_reports
from pathgls.nli.judge_train import TrainConfig, save_judge, train_judge

HELDOUT = SHIPPED_DIR / "heldout.txt"


@dataclass(frozen=True)
class RecipeResult:
    """What a retrain made."""

    out: Path
    n_reports: int
    n_pairs: int
    sources: dict[str, int]
    positives: int
    final_loss: float
    first_loss: float


def read_rows(
    reports: Path, expert: Path | None, heldout: set[str], *, limit: int | None = None
) -> list[tuple[str, str, str]]:
    """(id, organ, text) of every report not held out (expert references as ``expert:<case>``)."""
    csv.field_size_limit(sys.maxsize)
    rows: list[tuple[str, str, str]] = []
    with open(reports, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["id"] not in heldout and row["report"].strip():
                rows.append((row["id"], row.get("organ", ""), row["report"]))
    if expert is not None:
        with open(expert, newline="", encoding="utf-8") as fh:
            table = list(csv.DictReader(fh, delimiter="\t"))
        # several case ids share one reference text: a held-out id holds out its text
        seen = {r["reference"] for r in table if f"expert:{r['case_id']}" in heldout}
        for row in table:
            rid = f"expert:{row['case_id']}"
            text = row["reference"]
            if not text.strip() or text in seen:
                continue
            seen.add(text)
            rows.append((rid, "EXPERT", text))
    return rows[:limit] if limit else rows


def retrain(
    *,
    reports: Path,
    out: Path,
    expert: Path | None = None,
    heldout: Path | None = HELDOUT,
    config: TrainConfig | None = None,
    threshold: float = 0.5,
    workers: int = 2,
    limit: int | None = None,
    extra_pairs: Sequence[Pair] = (),
    extra_repeat: int = 1,
    neighbours: int = 0,
    siblings: bool = False,
    log: Callable[[str], None] = print,
) -> RecipeResult:
    """Build the pairs, train, and write the judge to ``out`` (see the module docstring)."""
    cfg = config or TrainConfig()
    held: set[str] = set()
    if heldout is not None:
        held = {x.strip() for x in heldout.read_text(encoding="utf-8").split() if x.strip()}
    rows = read_rows(reports, expert, held, limit=limit)
    if len(rows) < 2:
        raise ValueError(f"{reports}: fewer than two reports left to train on")
    log(f"reading {len(rows)} reports ({len(held)} ids held out)")
    units = read_reports(rows, workers=workers)
    pairs = build_pairs(units, seed=cfg.seed, siblings=siblings)
    if neighbours > 0:
        pairs += neighbour_pairs(units, bottom_embedder(cfg), k=neighbours, seed=cfg.seed)
    if extra_pairs:
        pairs += [p for p in extra_pairs for _ in range(max(1, extra_repeat))]
    if neighbours > 0 or extra_pairs:  # mixed in; with neither, build_pairs' order is kept
        random.Random(cfg.seed).shuffle(pairs)
    sources = dict(Counter(p.source for p in pairs))
    positives = sum(p.label for p in pairs)
    log(f"{len(pairs)} pairs ({positives} contradictions): {sources}")
    result = train_judge(pairs=pairs, config=cfg, log=log)
    save_judge(
        result,
        out,
        config=cfg,
        threshold=threshold,
        extra={
            "data": {
                "reports": len(rows),
                "heldout_ids": len(held),
                "pairs": len(pairs),
                "contradictions": positives,
                "sources": sources,
                "extra_pairs": len(extra_pairs),
                "extra_repeat": extra_repeat,
                "neighbours": neighbours,
                "siblings": siblings,
            }
        },
    )
    return RecipeResult(
        out, len(rows), len(pairs), sources, positives, result.losses[-1], result.losses[0]
    )


def bottom_embedder(cfg: TrainConfig) -> Callable[[list[str]], np.ndarray]:
    """The judge's statement embedding (the frozen bottom layers' mean), before any training."""
    import torch

    from pathgls.nli.judge import base_model_dir, load_base
    from pathgls.nli.judge_model import JudgeNet, pad_batch

    tok, bert = load_base(base_model_dir())
    net = JudgeNet(bert, n_bottom=cfg.n_bottom).eval()

    def embed(texts: list[str]) -> np.ndarray:
        rows = [
            list(x) for x in tok(texts, truncation=True, max_length=cfg.max_tokens)["input_ids"]
        ]
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))  # batches of like length
        out = np.zeros((len(rows), net.segment.shape[0]), dtype=np.float32)
        with torch.inference_mode():
            for s in range(0, len(order), 256):
                idx = order[s : s + 256]
                ids, mask = pad_batch([rows[i] for i in idx])
                out[idx] = net.encode(ids, mask).embeddings.numpy()
        return out

    return embed
