"""Training pairs for the contradiction judge, made from real reports without hand labels.

Every report is read into its case model (:mod:`pathgls.text.case`) and its judge units
(:func:`pathgls.logic.units.judge_units`). Signed-out reports are consistent, so:

* **companions** — two units of one report stating the same value of one slot of one target
  (both "margins free", "ER positive" twice) are a *consistent* pair; one of them edited on that
  slot (:func:`~pathgls.nli.judge_perturb.perturb` inside the words the fact was read from)
  makes a *contradiction* with the other, in the report's own phrasing;
* **direct edits** — a unit against its own edit: a contradiction;
* **transplants** — a unit of **another real report** about the same slot, key and kind of
  target: a contradiction when its value differs, consistent when equal;
* **siblings** (optional, ``siblings=True``) — two units of one report about the same slot of
  *different* things (the distal and the proximal margin, ER and PR, the left and the right
  pelvic nodes): consistent, and still consistent when one of them is edited to another value
  (``sibling-edit``) — a value that differs about another target is no contradiction, the lesson
  the near-duplicate lines of a checklist teach the top-K pairs;
* **hard negatives** — each unit against its most word-similar units of the same report (a
  margin line beside a vascular-invasion line, two parts with different findings), and random
  pairs of the same report: consistent.

:func:`neighbour_pairs` adds the pairs Logic itself will judge — each unit with its most similar
units by the judge's own statement embedding — as consistent pairs of signed-out reports, and
:func:`read_pairs` reads extra labelled pairs (the blind sets' dev halves, written by
``benchmarks/data/blind_pairs.py``).

A unit is shown with its specimen part ("(A) …"), as Logic shows it to the judge. The builder
is deterministic for a seed.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pathgls.logic.units import judge_units
from pathgls.nli.judge_perturb import SLOT_FAMILIES, perturb
from pathgls.text.case import Case, build_case

#: Slots whose different values from two reports contradict (transplants).
TRANSPLANT_SLOTS = frozenset(
    {
        "margin",
        "invasion",
        "finding",
        "node_status",
        "marker",
        "behaviour",
        "side",
        "grade",
        "stage",
    }
)
#: Slots whose values about two different targets or keys are independent (siblings).
SIBLING_SLOTS = frozenset(
    {"margin", "invasion", "marker", "node_status", "nodes", "presence", "margin_distance"}
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class SlotFact:
    """A case-model fact as the data builder needs it."""

    slot: str
    key: str
    target: str  # "tumour", "margin:bronchial", …
    value: str
    span: tuple[int, int]  # where its words are in the unit's text (-1, -1: not found)


@dataclass
class ReportUnits:
    """The units of one report with the facts each states."""

    report_id: str
    organ: str
    units: list[str] = field(default_factory=list)
    facts: list[list[SlotFact]] = field(default_factory=list)


@dataclass(frozen=True)
class Pair:
    """One training pair: premise, hypothesis, label (1 = contradiction) and how it was made."""

    premise: str
    hypothesis: str
    label: int
    source: str


def unit_text(case: Case, text: str, statement: int) -> str:
    """A unit as the judge reads it: with its specimen part when it has one."""
    part = case.document.statements[statement].part
    return f"({part}) {text}" if part else text


def read_report(report_id: str, organ: str, text: str) -> ReportUnits:
    """The judge units of one report and the certain facts each states."""
    case = build_case(text)
    units = judge_units(case)
    out = ReportUnits(report_id, organ)
    by_start = sorted((u.start, u.end, i) for i, u in enumerate(units))
    facts: list[list[SlotFact]] = [[] for _ in units]
    shown = [unit_text(case, u.text, u.statement) for u in units]
    for f in case.facts:
        if not f.certain:
            continue
        idx = next((i for s, e, i in by_start if s <= f.start < e), None)
        if idx is None:
            continue
        words = " ".join(case.evidence(f).split())
        at = shown[idx].find(words) if words else -1
        span = (at, at + len(words)) if at >= 0 else (-1, -1)
        value = "-".join(map(str, f.value)) if isinstance(f.value, tuple) else str(f.value)
        target = f.target.kind + (f":{f.target.name}" if f.target.name else "")
        if f.target.part:
            target += f"@{f.target.part}"
        facts[idx].append(SlotFact(f.slot, f.key, target, value, span))
    out.units = shown
    out.facts = facts
    return out


def _similar(units: Sequence[str], k: int) -> Iterable[tuple[int, int]]:
    """Each unit's ``k`` most word-similar other units (Jaccard), as index pairs."""
    bags = [set(_WORD.findall(u.lower())) for u in units]
    for i, a in enumerate(bags):
        if not a:
            continue
        scored = []
        for j, b in enumerate(bags):
            if j != i and b:
                scored.append((len(a & b) / len(a | b), j))
        scored.sort(reverse=True)
        for _, j in scored[:k]:
            yield i, j


def build_pairs(
    reports: Sequence[ReportUnits], *, seed: int = 0, hard_k: int = 2, siblings: bool = False
) -> list[Pair]:
    """Training pairs from the reports' units (see the module docstring), shuffled."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    index: dict[tuple[str, str, str], list[tuple[int, int, str]]] = defaultdict(list)
    for r_i, rep in enumerate(reports):
        for u_i, facts in enumerate(rep.facts):
            for f in facts:
                if f.slot in TRANSPLANT_SLOTS:
                    index[(f.slot, f.key, f.target.split("@")[0])].append((r_i, u_i, f.value))
    for r_i, rep in enumerate(reports):
        units = rep.units
        # companions: same slot, key, target and value in two units
        seen: dict[tuple[str, str, str, str], list[tuple[int, SlotFact]]] = defaultdict(list)
        for u_i, facts in enumerate(rep.facts):
            for f in facts:
                seen[(f.slot, f.key, f.target, f.value)].append((u_i, f))
        for members in seen.values():
            uniq = {u: f for u, f in members}
            if len(uniq) < 2:
                continue
            items = list(uniq.items())
            rng.shuffle(items)
            (a, fa), (b, _) = items[0], items[1]
            pairs.append(_ordered(units[a], units[b], 0, "companion", rng))
            edited = _edit(units[a], fa, rng)
            if edited is not None:
                pairs.append(_ordered(edited, units[b], 1, "companion-edit", rng))
        # direct edits and transplants, a few per report
        fact_units = [(u_i, f) for u_i, fs in enumerate(rep.facts) for f in fs]
        rng.shuffle(fact_units)
        for u_i, f in fact_units[:8]:
            edited = _edit(units[u_i], f, rng)
            if edited is not None:
                pairs.append(_ordered(units[u_i], edited, 1, "direct-edit", rng))
        for u_i, f in [x for x in fact_units if x[1].slot in TRANSPLANT_SLOTS][:8]:
            pool = index[(f.slot, f.key, f.target.split("@")[0])]
            other = [p for p in rng.sample(pool, min(len(pool), 12)) if p[0] != r_i]
            diff = [p for p in other if p[2] != f.value]
            same = [p for p in other if p[2] == f.value]
            if diff:
                o_r, o_u, _ = diff[0]
                pairs.append(_ordered(units[u_i], reports[o_r].units[o_u], 1, "transplant", rng))
            if same:
                o_r, o_u, _ = same[0]
                pairs.append(
                    _ordered(units[u_i], reports[o_r].units[o_u], 0, "transplant-same", rng)
                )
        if siblings:
            pairs += _siblings(rep, rng)
        # hard negatives inside the report, and random pairs of it
        similar = list(_similar(units, hard_k))
        rng.shuffle(similar)
        for a, b in similar[: max(6, len(units) // 4)]:
            pairs.append(Pair(units[a], units[b], 0, "hard-negative"))
        for _ in range(min(4, len(units) // 2)):
            a, b = rng.sample(range(len(units)), 2)
            pairs.append(Pair(units[a], units[b], 0, "random"))
    pairs = [p for p in pairs if p.premise != p.hypothesis]  # one text twice says nothing
    rng.shuffle(pairs)
    return pairs


def _target_name(f: SlotFact) -> str:
    return f.target.split("@")[0]


def _siblings(rep: ReportUnits, rng: random.Random, *, most: int = 6) -> list[Pair]:
    """Units about one slot of different things (see the module docstring), a few per report."""
    about = [{(f.slot, f.key, _target_name(f)) for f in fs} for fs in rep.facts]
    by_slot: dict[str, list[tuple[int, SlotFact]]] = defaultdict(list)
    for u_i, fs in enumerate(rep.facts):
        for f in fs:
            if f.slot in SIBLING_SLOTS:
                by_slot[f.slot].append((u_i, f))
    found: list[tuple[int, SlotFact, int]] = []
    for members in by_slot.values():
        for x, (a, fa) in enumerate(members):
            for b, fb in members[x + 1 :]:
                if a == b or about[a] & about[b]:
                    continue  # one unit also speaks of what the other does: not independent
                other_key = fa.key and fb.key and fa.key != fb.key
                ta, tb = _target_name(fa), _target_name(fb)
                other_target = ":" in ta and ":" in tb and ta != tb
                if other_key or other_target:
                    found.append((a, fa, b))
    rng.shuffle(found)
    out: list[Pair] = []
    seen: set[tuple[int, int]] = set()
    for a, fa, b in found:
        if (min(a, b), max(a, b)) in seen or len(seen) >= most:
            continue
        seen.add((min(a, b), max(a, b)))
        out.append(_ordered(rep.units[a], rep.units[b], 0, "sibling", rng))
        edited = _edit(rep.units[a], fa, rng)
        if edited is not None:
            out.append(_ordered(edited, rep.units[b], 0, "sibling-edit", rng))
    return out


def neighbour_pairs(
    reports: Sequence[ReportUnits],
    embed: Callable[[list[str]], np.ndarray],
    *,
    k: int = 3,
    most: int = 12,
    seed: int = 0,
) -> list[Pair]:
    """Each unit with its ``k`` nearest units of its report by ``embed``: consistent pairs.

    These are the pairs Logic judges in a signed-out report (:mod:`pathgls.logic.judged`), so a
    judge trained on them learns the false alarms it would otherwise raise. At most ``most``
    pairs per report, drawn at random among the nearest.
    """
    rng = random.Random(seed)
    distinct = list(dict.fromkeys(u for rep in reports if len(rep.units) >= 2 for u in rep.units))
    where = {u: i for i, u in enumerate(distinct)}
    every = np.asarray(embed(distinct), dtype=np.float32) if distinct else None
    out: list[Pair] = []
    for rep in reports:
        n = len(rep.units)
        if n < 2 or every is None:
            continue
        emb = every[[where[u] for u in rep.units]]
        sim = emb @ emb.T
        np.fill_diagonal(sim, -np.inf)
        kk = min(k, n - 1)
        near = np.argpartition(-sim, kk - 1, axis=1)[:, :kk]
        keys = sorted({(min(i, int(j)), max(i, int(j))) for i in range(n) for j in near[i]})
        rng.shuffle(keys)
        for i, j in keys[:most]:
            if rep.units[i] != rep.units[j]:
                out.append(_ordered(rep.units[i], rep.units[j], 0, "neighbour", rng))
    return out


def read_pairs(path: Path) -> list[Pair]:
    """Labelled pairs from a JSON-lines file (premise, hypothesis, label, source)."""
    from pathgls.io.limits import read_bounded

    out: list[Pair] = []
    # bounded like every reader (a device or an endless stream is stopped at the text cap)
    raw = read_bounded(path, what="labelled pairs file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e})") from e
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            label = int(row["label"])
            if label not in (0, 1):
                raise ValueError(f"label {label} is not 0 or 1")
            out.append(Pair(str(row["premise"]), str(row["hypothesis"]), label, str(row["source"])))
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}:{n}: not a labelled pair ({e})") from e
    return out


def _edit(unit: str, f: SlotFact, rng: random.Random) -> str | None:
    families = SLOT_FAMILIES.get(f.slot)
    if not families:
        return None
    span = f.span if f.span[0] >= 0 else None
    for family in rng.sample(families, len(families)):
        edited = perturb(unit, family, rng, span=span)
        if edited is None and span is not None:
            edited = perturb(unit, family, rng)
        if edited is not None:
            return edited
    return None


def _ordered(a: str, b: str, label: int, source: str, rng: random.Random) -> Pair:
    return Pair(a, b, label, source) if rng.random() < 0.5 else Pair(b, a, label, source)


def _read_row(row: tuple[str, str, str]) -> ReportUnits:
    return read_report(*row)


def read_reports(rows: Sequence[tuple[str, str, str]], *, workers: int = 1) -> list[ReportUnits]:
    """:func:`read_report` over ``(id, organ, text)`` rows, in order (``workers`` processes)."""
    if workers <= 1:
        return [_read_row(r) for r in rows]
    from multiprocessing import get_context

    with get_context("spawn").Pool(workers) as pool:
        return list(pool.imap(_read_row, rows, chunksize=8))


__all__ = [
    "Pair",
    "ReportUnits",
    "SlotFact",
    "build_pairs",
    "neighbour_pairs",
    "read_pairs",
    "read_report",
    "read_reports",
    "unit_text",
]
