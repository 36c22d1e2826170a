"""From a report's structure to its case model: read every assertion, then resolve the targets.

Resolution, precision first:

* each part's lesions are the types its statements give; its **main tumour** is the first
  malignant one (or in-situ one when there is none); a second malignant type that is not a
  subtype or component of the first makes the part **ambiguous** — "the tumour" of that part
  then names no lesion for sure, and comparisons about it stay silent (a note says so);
* a type of other behaviour than the main tumour (an in-situ component, a dysplasia) is its own
  lesion, never the tumour;
* statements outside any part (a synoptic checklist, a comment) are about the case; they meet
  the part-level statements of the one part that holds a tumour, and none when several do;
* node counts in a part titled for a node group take that station.
"""

from __future__ import annotations

import dataclasses
import re

from pathgls.text.case.context import READ_REGIONS, Context
from pathgls.text.case.model import Case, Fact, PartCase, Target
from pathgls.text.case.read_amounts import read_amounts
from pathgls.text.case.read_findings import (
    read_behaviour,
    read_extent,
    read_findings,
    read_invasion,
    read_presence,
)
from pathgls.text.case.read_margins import read_margins
from pathgls.text.case.read_markers import read_markers
from pathgls.text.case.read_site import read_side, read_titles
from pathgls.text.case.read_staging import read_depth, read_nodes, read_stage
from pathgls.text.case.read_tumour import read_grade, read_size, read_type
from pathgls.text.case.subjects import ClauseSubject, clean_name
from pathgls.text.case.vocab import MULTIPLE_TUMOURS, vocabulary
from pathgls.text.document import Document, parse_document
from pathgls.text.vocab_files import load_table

#: Readers, in order; gross statements are read for size and side only.
READERS = (
    read_type,
    read_grade,
    read_size,
    read_side,
    read_stage,
    read_depth,
    read_nodes,
    read_margins,
    read_invasion,
    read_findings,
    read_extent,
    read_presence,
    read_behaviour,
    read_amounts,
)
_GROSS_READERS = (read_side, read_invasion)
_SIDE = re.compile(r"(?<![A-Za-z])(left|right)(?![A-Za-z])", re.I)
_NODE_TITLE = re.compile(r"(?<![A-Za-z])(?:lymph[\s\-]*nodes?|nodes?)(?![A-Za-z])", re.I)
_ORGANS = tuple(load_table("organ_words").alternations("organ", "pattern", list="report").items())


def organs_in(text: str) -> frozenset[str]:
    """The organs a statement names ("AJCC staging (bladder)" → {"urinary bladder"})."""
    return frozenset(o for o, rx in _ORGAN_RX if rx.search(text))


#: Above this many statements, a statement repeated word for word is read once.
MANY_STATEMENTS = 600


def build_case(report: str | bytes | Document) -> Case:
    """The case model of a report (raw text, bytes, or an already parsed :class:`Document`)."""
    doc = report if isinstance(report, Document) else parse_document(report)
    case = Case(document=doc)
    topic = ""
    population: ClauseSubject | None = None
    last_block_end = -1
    # a very long report (pasted twice, a template repeated): each distinct statement read once,
    # so the checks stay near-linear; ordinary reports (a few hundred statements) read all
    dedupe = len(doc.statements) > MANY_STATEMENTS
    seen: set[str] = set()
    repeated = 0
    titles = {k: p.title for k, p in doc.parts.items()}
    organ = _text_organ(doc)
    for s in doc.statements:
        if s.start - last_block_end > 2 and doc.text.count("\n", last_block_end, s.start) >= 2:
            population = None  # a new paragraph: no population carries over
        last_block_end = s.end
        if not s.is_assertion:
            continue
        if dedupe:
            said = " ".join(doc.statement_text(s).lower().split())
            if said in seen:
                repeated += 1
                continue  # read once: a repeat adds no fact, only pairs to compare
            seen.add(said)
        ctx = Context.of(doc.text, s, topic=topic, has_parts=bool(doc.parts), part_titles=titles)
        if s.region == "gross" and _synoptic_field(ctx):
            moved = dataclasses.replace(s, region="synoptic")
            ctx = Context.of(
                doc.text, moved, topic=topic, has_parts=bool(doc.parts), part_titles=titles
            )
        ctx.organ = organ
        if ctx.region == "gross":
            for read in _GROSS_READERS:
                read(ctx)
        elif ctx.region in READ_REGIONS:
            for read in READERS:
                read(ctx)
            population = read_markers(ctx, population)
        case.facts.extend(ctx.facts)
        topic = _topic(ctx, topic)
    case.facts.extend(read_titles(doc))
    _resolve(case)
    if repeated:
        case.notes.append(
            f"{repeated} repeated statements read once (a report of {len(doc.statements)} "
            "statements)"
        )
    return case


#: Checklist fields of the diagnosis: read in full even where OCR put them under the gross.
_SYNOPTIC_FIELD = re.compile(
    r"histologic(?:al)?\s+(?:type|grade)|tumou?r\s+type|(?:nuclear|fuhrman|"
    r"who|figo|gleason)\s+grade|pathologic(?:al)?\s+stag\w*|(?:surgical\s+)?margins?|"
    r"(?:regional\s+)?lymph\s+nodes?|lymph[\s-]?vascular\s+invasion|perineural\s+invasion|"
    r"laterality|p[TN]\b|tnm",
    re.I,
)


def _synoptic_field(ctx: Context) -> bool:
    """A labelled checklist line ("Histologic type: papillary renal cell carcinoma") in a gross
    section: a synoptic field the OCR layer moved, not a gross description."""
    return ctx.label is not None and bool(_SYNOPTIC_FIELD.match(ctx.label_text.strip()))


def _topic(ctx: Context, previous: str) -> str:
    """What a run of checklist lines is about ("nodes" after "Regional lymph nodes: pN1")."""
    lab = ctx.label_text
    body = ctx.text[ctx.start : ctx.end].lower()
    if re.search(r"lymph|node", lab or body[:60]):
        return "nodes"
    if re.search(r"\bmargins?\b", lab) and not re.search(r"distance|closest|nearest", lab):
        return "margin"
    if (
        previous == "margin"
        and ctx.label is not None
        and not re.search(
            r"type|grade|size|stage|invasion|extension|p[tnm]\b|lymph|node|necrosis|focality", lab
        )
    ):
        return "margin"
    if re.search(r"myometri", lab or body[:60]):
        return "depth"
    if previous == "depth" and re.search(r"depth|percent|thickness", lab):
        return "depth"
    if ctx.label is not None and re.match(r"\s*(?:number|#|no\.|total)\b", lab):
        return previous
    return ""


def _compatible(a: str, b: str) -> bool:
    """Whether two histotype family paths can name one tumour (see ``histotypes.tsv``)."""
    if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
        return True
    for x, y in ((a, b), (b, a)):
        if "+" in x:
            head, _, mix = x.rpartition("/")
            parts = mix.split("+")
            for p in parts:
                comp = f"{head}/{p}" if head else p
                if _compatible(comp, y):
                    return True
    return False


def compatible_types(a: str, b: str) -> bool | None:
    """Whether two diagnosis concepts can name one tumour (None: not comparable)."""
    vocab = vocabulary()
    fa, fb = vocab.family(a), vocab.family(b)
    if _shorter_name_of(a, b):
        return True  # "clear cell carcinoma" in a kidney report is the clear cell RCC
    if fa is None or fb is None:
        return None
    return _compatible(fa, fb)


#: Organ → the carcinoma a bare "… carcinoma" names there ("clear cell carcinoma" of a kidney).
_ORGAN_CARCINOMA = {"kidney": "renal cell carcinoma", "urinary bladder": "urothelial carcinoma"}


def organ_named(concept: str, organ: str | None) -> str:
    """A diagnosis name as the organ's reports mean it: in a kidney, "clear cell carcinoma" is
    the clear cell renal cell carcinoma (elsewhere a Müllerian clear cell carcinoma)."""
    full = _ORGAN_CARCINOMA.get(organ or "")
    if full is None or not concept.endswith(" carcinoma") or full in concept:
        return concept
    named = vocabulary().diagnosis(concept[: -len("carcinoma")] + full)
    return named.concept if named is not None else concept


def _shorter_name_of(a: str, b: str) -> bool:
    """Whether one diagnosis name is the other's, shortened: its words all in the longer name
    ("clear cell carcinoma" / "clear cell renal cell carcinoma", "papillary carcinoma" /
    "papillary urothelial carcinoma"), and the longer one no negation of them ("non-small")."""
    wa, wb = (set(re.findall(r"[a-z]+", x.lower())) for x in (a, b))
    short, long_ = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    return len(short) >= 2 and short < long_ and "non" not in long_ - short


def _resolve(case: Case) -> None:
    doc = case.document
    labels: list[str | None] = [None, *doc.parts]
    for label in labels:
        title = doc.parts[label].title if label is not None else ""
        case.parts[label] = PartCase(
            label=label, title=title, organ=_organ(title), side=_side(title)
        )
    for label, p in case.parts.items():
        types = [f for f in case.facts if f.slot == "type" and f.target.part == label and f.certain]
        malignant = [f for f in types if _behaviour(case, f) == "malignant"]
        chosen = malignant or [f for f in types if _behaviour(case, f) == "in_situ"]
        p.lesions = list(dict.fromkeys(f.value for f in types))
        if chosen:
            p.main = chosen[0].value
            for f in malignant[1:]:
                if _two_tumours(case, chosen[0], f):
                    p.ambiguous = True
        if p.main is not None:
            p.organ = _family_organ(p.main) or p.organ or _organ(p.main)
    organ = case_organ(case)
    for p in case.parts.values():
        if p.organ is None:
            p.organ = organ
    tumour_parts = [k for k, p in case.parts.items() if k is not None and p.main is not None]
    case_part = case.parts[None]
    if case_part.main is None and len(tumour_parts) == 1:
        only = case.parts[tumour_parts[0]]
        case_part.organ = case_part.organ or only.organ
    if len(tumour_parts) > 1:
        case.notes.append(
            f"{len(tumour_parts)} parts name a tumour: statements outside a part are compared "
            "with none of them"
        )
    for label, p in case.parts.items():
        if p.ambiguous:
            case.notes.append(
                f"{'part ' + label if label else 'the case'} names several tumour types "
                f"({', '.join(p.lesions)}): statements about 'the tumour' there are not compared"
            )
    case.facts = [_retarget(case, f) for f in case.facts]


def _two_tumours(case: Case, a: Fact, b: Fact) -> bool:
    """Whether two malignant types of one part name two tumours (rather than one tumour named
    two ways, which the type check reports): named in one statement, mixed, of different organs
    (a prostate cancer found in a cystectomy), or in a part that speaks of several tumours."""
    if compatible_types(a.value, b.value) is not False:
        return False
    if "mixed" in a.note + b.note or a.statement == b.statement:
        return True
    oa, ob = _family_organ(a.value), _family_organ(b.value)
    if oa and ob and oa != ob:
        return True
    doc = case.document
    return any(
        MULTIPLE_TUMOURS.search(doc.statement_text(s))
        for s in doc.statements
        if s.part == a.target.part and s.is_assertion
    )


def _behaviour(case: Case, f: Fact) -> str:
    for g in case.facts:
        if g.slot == "behaviour" and g.start == f.start and g.statement == f.statement:
            return g.value
    return ""


def _retarget(case: Case, f: Fact) -> Fact:
    """Lesions of another behaviour than the main tumour; node stations from part titles."""
    p = case.parts.get(f.target.part)
    if p is None:
        return f
    if (
        f.slot in ("type", "behaviour")
        and f.target.kind == "tumour"
        and p.main is not None
        and "copula" not in f.note
    ):
        concept = f.value if f.slot == "type" else _type_at(case, f)
        if concept is not None and concept != p.main:
            own = _behaviour_of(concept)
            main = _behaviour_of(p.main)
            if own != main:
                return dataclasses.replace(f, target=Target("lesion", f.target.part, concept))
    if f.target.kind == "lesion" and p.main is None and _behaviour_of(f.target.name) == "malignant":
        return dataclasses.replace(f, target=Target("tumour", f.target.part))
    if f.target.kind == "lesion" and p.main is not None and f.target.name == p.main:
        return dataclasses.replace(f, target=Target("tumour", f.target.part))
    if f.target.kind == "lesion" and p.main is not None and f.target.name not in ("other",):
        ok = compatible_types(p.main, organ_named(f.target.name, p.organ))
        if ok and _behaviour_of(f.target.name) == _behaviour_of(p.main):
            return dataclasses.replace(f, target=Target("tumour", f.target.part))
    labelled = case.document.statements[f.statement].label is not None
    if (
        f.target.kind == "nodes"
        and not f.target.name
        and f.target.part is not None
        and not labelled
        and _NODE_TITLE.search(p.title)
    ):
        station = clean_name(_NODE_TITLE.sub(" ", p.title), station=True)
        return dataclasses.replace(f, target=Target("nodes", f.target.part, station))
    return f


def _type_at(case: Case, f: Fact) -> str | None:
    for g in case.facts:
        if g.slot == "type" and g.start == f.start and g.statement == f.statement:
            return g.value
    return None


def _behaviour_of(concept: str) -> str:
    term = vocabulary().diagnosis_terms.get(concept)
    return term.attributes.get("behavior", "") if term is not None else ""


def _organ(text: str) -> str | None:
    for organ, rx in _ORGANS:
        if re.search(rx, text, re.I):
            return organ
    return None


_ORGAN_RX = tuple((organ, re.compile(rf"(?<![A-Za-z])(?:{rx})", re.I)) for organ, rx in _ORGANS)
_TYPE_ORGAN = load_table("type_organs").mapping("value", "organ", source="lexicon_site")


def _text_organ(doc: Document) -> str | None:
    """The organ the report's words name most (before any fact is read)."""
    counts: dict[str, int] = {}
    for organ, rx in _ORGAN_RX:
        n = len(rx.findall(doc.text))
        if n:
            counts[organ] = n
    if not counts:
        return None
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] >= 0.5 * sum(counts.values()) else None


def case_organ(case: Case) -> str | None:
    """The organ of the report's tumour: the one its types, part titles and diagnosis and
    synoptic statements name most (at least 60% of the organ words), else None."""
    counts: dict[str, float] = {}
    vocab = vocabulary()
    for f in case.facts:
        if f.slot == "type" and f.certain:
            term = vocab.diagnosis_terms.get(f.value)
            site = term.attributes.get("site", "") if term is not None else ""
            organ = _TYPE_ORGAN.get(site)
            if organ:
                counts[organ] = counts.get(organ, 0.0) + 3.0
    doc = case.document
    for part in doc.parts.values():
        organ = _organ(part.title)
        if organ:
            counts[organ] = counts.get(organ, 0.0) + 2.0
    for s in doc.statements:
        if s.region not in ("diagnosis", "synoptic", "specimen", "gross", "other", "comment"):
            continue
        for organ, rx in _ORGAN_RX:
            n = len(rx.findall(doc.text, s.start, s.end))
            if n:
                counts[organ] = counts.get(organ, 0.0) + min(n, 3) * 0.5
    if not counts:
        return None
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] >= 0.6 * sum(counts.values()) else None


_FAMILY_ORGAN = load_table("type_organs").pairs("value", "organ", source="histotype_family")


def _family_organ(concept: str) -> str | None:
    """The organ a tumour type belongs to ("clear cell renal cell carcinoma" → kidney)."""
    family = vocabulary().family(concept) or ""
    return next((organ for key, organ in _FAMILY_ORGAN if key in family), None)


def _side(title: str) -> str | None:
    sides = {m.lower() for m in _SIDE.findall(title)}
    return sides.pop() if len(sides) == 1 else None
