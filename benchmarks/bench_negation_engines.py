"""The two negation engines on the same mentions of real reports: could one serve both readings?

pathgls reads a report twice (issue 35): the entity view (lexicon extractor, medspaCy ConText
rules: ``Entity.negated`` / ``uncertain``) feeds Grounding, the Stability Δ, DxAlign and HARE;
the case model (``pathgls/text/case/polarity.py``: local regex rules, present / absent /
uncertain) feeds Logic. Over the 1,820 TCGA reports of ``shared/data/reports/
tcga_reports_dev.tsv`` this compares them on the mentions both see, two ways:

* **mentions**: every entity the lexicon extractor finds inside a statement the case model reads
  (an assertion in a region it reads), judged by both engines on the same span — ConText's
  flags, and the case model's ``Context.polarity`` at the entity's offsets;
* **facts**: every present/absent fact the case model states whose evidence span overlaps an
  entity — the two pipelines' actual outputs for one mention.

Printed: the number of shared mentions; agreement on negated-vs-not and Cohen's κ; agreement on
present / absent / uncertain (ConText: negated → absent, else uncertain → uncertain, else
present); the disagreements split by which engine denies, per entity type, with examples.

Usage: python benchmarks/bench_negation_engines.py [--reports TSV] [--limit N] [--examples K]
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PATHGLS_SHARED_DATA", ROOT.parent / "shared" / "data"))
REPORTS = SHARED / "reports" / "tcga_reports_dev.tsv"
LABELS = ("present", "absent", "uncertain")


def context_label(entity) -> str:
    """ConText's verdict as one of LABELS (a negated mention is absent, hedged or not)."""
    if entity.negated:
        return "absent"
    return "uncertain" if entity.uncertain else "present"


def kappa(pairs: list[tuple[str, str]], labels: tuple[str, ...]) -> float:
    """Cohen's κ of two raters' labels."""
    n = len(pairs)
    if n == 0:
        return float("nan")
    observed = sum(a == b for a, b in pairs) / n
    ca, cb = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(ca[x] * cb[x] for x in labels) / (n * n)
    return (observed - expected) / (1 - expected) if expected < 1 else float("nan")


def snippet(text: str, start: int, end: int, width: int = 70) -> str:
    a, b = max(0, start - width), min(len(text), end + width // 2)
    return " ".join((text[a:start] + "[[" + text[start:end] + "]]" + text[end:b]).split())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=Path, default=REPORTS)
    ap.add_argument("--limit", type=int, default=0, help="first N reports only (0: all)")
    ap.add_argument("--examples", type=int, default=4)
    args = ap.parse_args()
    if not args.reports.exists():
        raise SystemExit(f"{args.reports} not found (set PATHGLS_SHARED_DATA)")

    from pathgls.text import analyze_report, build_extractor
    from pathgls.text.case.context import READ_REGIONS, Context

    csv.field_size_limit(10**9)
    with args.reports.open(encoding="utf-8", newline="") as f:
        texts = [r["report"] for r in csv.DictReader(f, delimiter="\t")]
    if args.limit:
        texts = texts[: args.limit]
    extractor = build_extractor("lexicon")
    mentions: list[tuple[str, str, str, str]] = []  # type, ConText, case, snippet
    facts: list[tuple[str, str, str, str]] = []
    entities = 0
    t0 = time.perf_counter()
    for text in texts:
        report = analyze_report(text, extractor=extractor)
        doc, case = report.document, report.case
        assert doc.text == report.text
        entities += len(report.entities)
        titles = {k: p.title for k, p in doc.parts.items()}
        contexts: dict[int, Context] = {}
        for e in report.entities:
            st = doc.statement_at(e.start)
            if st is None or not st.is_assertion or st.region not in READ_REGIONS:
                continue
            if e.end > st.end:
                continue
            ctx = contexts.get(st.index)
            if ctx is None:
                ctx = contexts[st.index] = Context.of(
                    doc.text, st, has_parts=bool(doc.parts), part_titles=titles
                )
            mentions.append(
                (
                    e.type,
                    context_label(e),
                    ctx.polarity(e.start, e.end),
                    snippet(doc.text, e.start, e.end),
                )
            )
        for fact in case.facts:
            if fact.value not in ("present", "absent"):
                continue
            over = [e for e in report.entities if e.start < fact.end and fact.start < e.end]
            if not over:
                continue
            e = over[0]
            label = fact.value if fact.certain else "uncertain"
            facts.append(
                (
                    f"{fact.slot}/{e.type}",
                    context_label(e),
                    label,
                    snippet(doc.text, e.start, e.end),
                )
            )
    seconds = time.perf_counter() - t0
    print(
        f"{len(texts)} reports, {entities} entities (lexicon extractor), "
        f"{seconds:.0f} s ({1000 * seconds / max(1, len(texts)):.0f} ms per report)"
    )
    rng = random.Random(0)
    for name, rows in (("mentions", mentions), ("facts", facts)):
        _summary(name, rows, rng, args.examples)


def _summary(name: str, rows: list[tuple[str, str, str, str]], rng, k: int) -> None:
    n = len(rows)
    print(f"\n== {name}: {n} shared mentions")
    if not n:
        return
    neg = [
        ("absent" if c == "absent" else "not", "absent" if r == "absent" else "not")
        for _, c, r, _ in rows
    ]
    agree_neg = sum(a == b for a, b in neg) / n
    print(
        f"negated vs not: agreement {100 * agree_neg:.1f}%, Cohen's κ "
        f"{kappa(neg, ('absent', 'not')):.3f}"
    )
    three = [(c, r) for _, c, r, _ in rows]
    agree3 = sum(a == b for a, b in three) / n
    print(f"present/absent/uncertain: agreement {100 * agree3:.1f}%, κ {kappa(three, LABELS):.3f}")
    table = Counter(three)
    print("  ConText \\ case  " + "  ".join(f"{x:>9}" for x in LABELS))
    for a in LABELS:
        print(f"  {a:>14}  " + "  ".join(f"{table[(a, b)]:>9}" for b in LABELS))
    only_context = [r for r in rows if r[1] == "absent" and r[2] != "absent"]
    only_case = [r for r in rows if r[2] == "absent" and r[1] != "absent"]
    print(
        f"disagreements on negation: {len(only_context) + len(only_case)} "
        f"({100 * (len(only_context) + len(only_case)) / n:.1f}%): ConText alone denies "
        f"{len(only_context)}, the case model alone denies {len(only_case)}"
    )
    by_type = Counter(t for t, *_ in rows)
    dis_type = Counter(t for t, *_ in only_context + only_case)
    print(
        "  by type (facts: slot/entity type), disagreements / mentions: "
        + ", ".join(f"{t} {dis_type[t]}/{by_type[t]}" for t, _ in by_type.most_common())
    )
    for label, sample in (("ConText alone denies", only_context), ("case alone denies", only_case)):
        for t, c, r, s in rng.sample(sample, min(k, len(sample))):
            print(f"  [{label}] ({t}; ConText {c}, case {r}) …{s}…")


if __name__ == "__main__":
    sys.exit(main())
