"""What a report diagnoses: its diagnoses, their behaviour and its key findings with polarity.

The pieces DxAlign (:mod:`pathgls.baselines.dxalign`) and the ``dx`` Stability Δ
(:mod:`pathgls.stability.dx`) share, read off the report graph of the lexicon extractor:

- :func:`diagnoses` / :func:`behaviours`: every affirmed diagnosis concept and its behaviour;
- :func:`diagnosis_text`: the text of the report's diagnosis sections;
- :func:`diagnosis_profile`: the *principal* diagnoses and the key findings, as a pathologist
  reads a report to decide whether two reports say the same thing clinically.

The principal diagnoses are the affirmed diagnoses that are not historical, hypothetical or about
family history (hedged ones count: "suspicious for carcinoma" is the report's diagnosis), chosen
in this order: named primary neoplasms (behaviour malignant, in situ, premalignant, borderline or
benign neoplasm: "invasive ductal carcinoma"; a metastatic deposit is a key finding of the primary,
not a second diagnosis); else metastatic neoplasms (a node biopsy with "metastatic
adenocarcinoma"); else generic neoplastic words ("carcinoma",
"malignancy"); else any named diagnosis (benign processes: "granulomatous inflammation"); else
"negative for malignancy" when the report denies a malignant diagnosis. Incidental processes
("fibrosis", "hemorrhage") next to a neoplasm are findings, not the diagnosis.

Key findings are the findings that change staging or treatment: lymph-node / metastasis status
(a malignant diagnosis denied of a lymph node, by the report graph's scopes, counts: "lymph nodes
are negative for malignancy"), margins, lymphovascular and perineural invasion, named
invasion (pleural, stromal, ...), extranodal extension, and grade — per lesion when the scope
says which lesion it is said of ("grade of invasive ductal carcinoma" is not the DCIS's nuclear
grade). Each keeps the set of values the report states for it (``positive`` / ``negative``;
``low`` / ``intermediate`` / ``high`` for grade); hedged ones are left out, and a margin or node
mention without a result says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pathgls.text.analyze import AnalyzedReport
from pathgls.text.scope import GENERIC_LESIONS
from pathgls.types import Entity, Scope

DIAGNOSIS = "pathological_diagnosis"
#: Stands for a report whose only diagnostic statement is the denial of a malignancy.
NO_MALIGNANCY = "negative for malignancy"
#: Behaviour → severity (0 benign process … 4 malignant); borderline sits with premalignant.
SEVERITY: Mapping[str, int] = MappingProxyType(
    {
        "benign_process": 0,
        "benign_neoplasm": 1,
        "premalignant": 2,
        "borderline": 2,
        "in_situ": 3,
        "malignant": 4,
    }
)
NEOPLASTIC = frozenset(b for b, s in SEVERITY.items() if s >= 1)
#: Key-finding names of the lexicon ``group`` attributes (invasion is keyed by its concept).
_GROUP_KEYS = MappingProxyType(
    {
        "lvi": "lymphovascular invasion",
        "pni": "perineural invasion",
        "margin": "margin",
        "metastasis": "metastasis",
        "extranodal_extension": "extranodal extension",
    }
)
_NOT_STATED = ("historical", "hypothetical", "family")
GRADE_ORDER = ("low", "intermediate", "high")


def concept_of(e: Entity) -> str:
    """The entity's canonical concept (its lower-case text when the extractor gives none)."""
    return e.concept or " ".join(e.text.lower().split())


def diagnosis_text(report: AnalyzedReport) -> str:
    """The text of the report's diagnosis sections ("" when it has none)."""
    parts = [
        report.text[s.start : s.end].strip()
        for s in report.parsed.sections
        if s.kind == "diagnosis"
    ]
    return "\n".join(p for p in parts if p)


def diagnoses(report: AnalyzedReport) -> list[str]:
    """Affirmed diagnosis concepts of a report, in order, deduplicated."""
    out: dict[str, None] = {}
    for e in report.entities:
        if e.type == DIAGNOSIS and not e.negated:
            out.setdefault(concept_of(e), None)
    return list(out)


def behaviours(report: AnalyzedReport) -> set[str]:
    """Behaviours (malignant, benign, in situ, ...) of the report's affirmed diagnoses."""
    return {
        e.attributes["behavior"]
        for e in report.entities
        if e.type == DIAGNOSIS and not e.negated and e.attributes.get("behavior")
    }


@dataclass(frozen=True)
class DiagnosisProfile:
    """A report's principal diagnoses and key findings (see the module docstring)."""

    # (concept, behaviour) in report order; behaviour "" when the lexicon gives none
    diagnoses: tuple[tuple[str, str], ...] = ()
    # (key finding, sorted stated values), sorted by key
    findings: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def concepts(self) -> tuple[str, ...]:
        """The principal diagnosis concepts."""
        return tuple(c for c, _ in self.diagnoses)

    @property
    def behaviour(self) -> str | None:
        """The most severe behaviour of the principal diagnoses (None: none known)."""
        known = [b for _, b in self.diagnoses if b in SEVERITY]
        return max(known, key=SEVERITY.__getitem__) if known else None

    def finding_values(self) -> dict[str, frozenset[str]]:
        """Key finding → the values the report states for it."""
        return {k: frozenset(v) for k, v in self.findings}


def _stated(e: Entity) -> bool:
    return not any(e.attributes.get(k) == "yes" for k in _NOT_STATED)


def _principal(report: AnalyzedReport) -> list[Entity]:
    affirmed = [e for e in report.entities if e.type == DIAGNOSIS and not e.negated and _stated(e)]
    named = [e for e in affirmed if concept_of(e) not in GENERIC_LESIONS]
    generic = [e for e in affirmed if concept_of(e) in GENERIC_LESIONS]
    neoplasms = [e for e in named if e.attributes.get("behavior") in NEOPLASTIC]
    for tier in (
        [e for e in neoplasms if "metastasis" not in e.attributes.get("depends_on", "")],
        neoplasms,
        [e for e in generic if e.attributes.get("behavior") in NEOPLASTIC],
        named,
    ):
        if tier:
            return tier
    return []


def _key_finding(e: Entity, scope: Scope) -> tuple[str, str] | None:
    """``(key, value)`` of an entity that states a key finding, else None."""
    if e.uncertain or not _stated(e):
        return None
    if e.type == "grade":
        g = e.attributes.get("grade")
        key = f"grade of {scope.lesion}" if scope.lesion else "grade"
        return (key, g) if g and not e.negated else None
    group = e.attributes.get("group", "")
    # "Lymph nodes: negative for malignancy" denies a metastasis; an affirmed generic diagnosis
    # of a node counts only through its metastasis attribute (a missed negation must not turn
    # a negative node into a positive one)
    node_denial = (
        e.negated and scope.station is not None and e.attributes.get("behavior") == "malignant"
    )
    if (
        e.type in ("lymph_node_involvement", "metastasis")
        or (e.type == DIAGNOSIS and "metastasis" in e.attributes.get("depends_on", ""))
        or (e.type == DIAGNOSIS and node_denial)
    ):
        key = "metastasis"
    elif group == "invasion" and e.type == "morphology_finding":
        key = concept_of(e)
    elif group in _GROUP_KEYS and e.type != DIAGNOSIS:
        key = _GROUP_KEYS[group]
    else:
        return None
    result = e.attributes.get("result")
    if e.negated:
        return key, "negative"
    if result in ("positive", "negative"):
        return key, result
    if e.type in ("margin", "lymph_node_involvement"):
        return None  # "margins were examined", "lymph node count": no status said
    return key, "positive"


def diagnosis_profile(report: AnalyzedReport) -> DiagnosisProfile:
    """The report's principal diagnoses and key findings (see the module docstring)."""
    dx: dict[str, str] = {}
    for e in _principal(report):
        dx.setdefault(concept_of(e), e.attributes.get("behavior", ""))
    if not dx and any(
        e.type == DIAGNOSIS
        and e.negated
        and not e.uncertain
        and _stated(e)
        and e.attributes.get("behavior") == "malignant"
        for e in report.entities
    ):
        dx[NO_MALIGNANCY] = "benign_process"
    found: dict[str, set[str]] = {}
    scopes = report.scopes.entity_scopes
    for e, scope in zip(report.entities, scopes, strict=True):
        kv = _key_finding(e, scope)
        if kv is not None:
            found.setdefault(kv[0], set()).add(kv[1])
    return DiagnosisProfile(
        diagnoses=tuple(dx.items()),
        findings=tuple((k, tuple(sorted(v))) for k, v in sorted(found.items())),
    )
