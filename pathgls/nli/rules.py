"""Offline clinical contradiction rules: an NLI scorer that explains itself.

Both texts of a pair go through an entity extractor (the lexicon backend by default); the rules
below compare their entities and the strongest rule that fires gives the contradiction
probability (``base_probability`` when none does). Every rule is symmetric in the two texts.

Rules and their probabilities (``RuleWeights``):

* ``negation`` — the same concept (or finding family) affirmed on one side, negated on the other;
* ``dependency`` — a finding negated on one side while a diagnosis on the other depends on it
  ("no stromal invasion" vs "invasive ductal carcinoma");
* ``benign_vs_malignant`` — a benign neoplasm diagnosed on one side, a malignant diagnosis or a
  finding that only malignancy has (metastasis, lymphovascular invasion, ...) on the other; also
  "no malignancy" vs a malignant diagnosis;
* ``in_situ_vs_invasive`` — an in-situ diagnosis that excludes invasion ("DCIS; no invasive
  carcinoma") against invasion stated elsewhere (plain coexistence is no conflict);
* ``benign_morphology`` — a description of a benign lesion (no atypia, no pleomorphism) against
  a malignant diagnosis (stronger with two such statements);
* ``grade`` — low vs high grade (strong), intermediate vs either (weak), and a stated grade
  against features that imply the opposite;
* ``marker_result`` — one IHC marker reported positive on one side and negative on the other;
* ``margin`` — margins involved on one side, free on the other.

Uncertain mentions ("suspicious for", "cannot rule out") never fire a rule; a sentence that
itself states both sides (carcinoma arising in an adenoma, a mixed-grade tumour) is no
contradiction; and a negation scoped to a place the other sentence does not talk about ("no
carcinoma at the margins", "the remaining lymph nodes are negative") contradicts nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pathgls.nli.base import RuleHit, register_nli
from pathgls.text.base import EntityExtractor
from pathgls.types import Entity

#: Entity types for which "affirmed here, negated there" is a contradiction.
NEGATABLE = frozenset(
    {
        "pathological_diagnosis",
        "metastasis",
        "morphology_finding",
        "lymphovascular_invasion",
        "perineural_invasion",
        "lymph_node_involvement",
    }
)
#: Concepts that mean "malignancy" in general ("no evidence of malignancy").
GENERIC_MALIGNANCY = frozenset(
    {"malignancy", "malignant neoplasm", "malignant cells", "malignant tumor"}
)


@dataclass(frozen=True)
class RuleWeights:
    """Contradiction probability of each rule."""

    negation: float = 0.95
    dependency: float = 0.9
    benign_vs_malignant: float = 0.9
    in_situ_vs_invasive: float = 0.9
    benign_morphology: float = 0.6
    benign_morphology_strong: float = 0.8
    grade_opposite: float = 0.9
    grade_adjacent: float = 0.3
    grade_implied: float = 0.7
    marker_result: float = 0.9
    margin: float = 0.8


def _certain(e: Entity) -> bool:
    return not e.uncertain


def _affirmed(e: Entity) -> bool:
    return not e.negated and not e.uncertain


def _key(e: Entity) -> str:
    return e.concept or e.text.lower().strip()


def _implies(e: Entity) -> set[str]:
    return {v.strip() for v in e.attributes.get("implies", "").split(",") if v.strip()}


def _malignant(e: Entity) -> bool:
    """An affirmed malignant diagnosis or a finding only malignancy has."""
    if not _affirmed(e):
        return False
    if (
        e.type in ("pathological_diagnosis", "metastasis")
        and e.attributes.get("behavior") == "malignant"
    ):
        return True
    return "malignant" in _implies(e)


def _hit(rule: str, p: float, a: Entity, b: Entity, why: str) -> RuleHit:
    return RuleHit(
        rule=rule, probability=p, premise_entity=a.text, hypothesis_entity=b.text, explanation=why
    )


Rule = Callable[[Sequence[Entity], Sequence[Entity], RuleWeights], list[RuleHit]]


#: Generic mentions whose negation is nearly always scoped to a place ("no tumor in the margin").
GENERIC_LESION = frozenset(
    {"tumor", "neoplasia", "neoplasm", "lesion", "mass", "carcinoma", "malignancy"}
)


class Side(list[Entity]):
    """The entities of one sentence, with the sentence itself (for scope words)."""

    def __init__(self, entities: Sequence[Entity], text: str = "") -> None:
        super().__init__(entities)
        self.text = text


#: "The remaining nodes are negative": a statement about *other* members of a set.
_PARTITIVE = re.compile(r"\b(?:remaining|remainder|rest of|all other|other|additional)\b", re.I)


def _scopes(side: Sequence[Entity]) -> set[str]:
    """Where a sentence's statements are scoped: sites, margins, lymph nodes, "the remaining"."""
    out = {_key(e) for e in side if e.type == "anatomical_site"}
    if _PARTITIVE.search(getattr(side, "text", "")):
        out.add("<the remaining ones>")
    out |= {"margin" for e in side if e.type == "margin"}
    out |= {"lymph node" for e in side if e.type == "lymph_node_involvement"}
    return out


def _different_organs(a_side: Sequence[Entity], b_side: Sequence[Entity]) -> bool:
    """Both sentences name sites, and none in common (a uterine leiomyoma vs a bladder cancer)."""
    sa = {_key(e) for e in a_side if e.type == "anatomical_site"}
    sb = {_key(e) for e in b_side if e.type == "anatomical_site"}
    return bool(sa and sb and not sa & sb)


def rule_negation(
    a_side: Sequence[Entity], b_side: Sequence[Entity], w: RuleWeights
) -> list[RuleHit]:
    if _scopes(b_side) - _scopes(a_side):
        return []  # "carcinoma" here, "no carcinoma at the margins / in other nodes" there
    hits = []
    for a in a_side:
        if a.type not in NEGATABLE or not _certain(a) or a.negated:
            continue
        for b in b_side:
            if b.type not in NEGATABLE or not _certain(b) or not b.negated:
                continue
            ga, gb = a.attributes.get("group"), b.attributes.get("group")
            if _key(b) in GENERIC_LESION and not gb:
                continue  # "no tumor" (somewhere) says little about "tumor" (elsewhere)
            if _key(a) == _key(b) or (ga and ga == gb):
                hits.append(
                    _hit("negation", w.negation, a, b, f"'{a.text}' affirmed, '{b.text}' negated")
                )
    return hits


def rule_dependency(
    a_side: Sequence[Entity], b_side: Sequence[Entity], w: RuleWeights
) -> list[RuleHit]:
    hits = []
    for a in a_side:
        needs = {v.strip() for v in a.attributes.get("depends_on", "").split(",") if v.strip()}
        if not needs or not _affirmed(a):
            continue
        for b in b_side:
            met = needs & {b.attributes.get("group"), _key(b)}
            if b.negated and _certain(b) and met:
                need = ", ".join(sorted(met))
                hits.append(
                    _hit(
                        "dependency",
                        w.dependency,
                        a,
                        b,
                        f"'{a.text}' needs {need}, but '{b.text}' is negated",
                    )
                )
    return hits


def rule_benign_vs_malignant(
    a_side: Sequence[Entity], b_side: Sequence[Entity], w: RuleWeights
) -> list[RuleHit]:
    if any(_malignant(e) and e.type == "pathological_diagnosis" for e in a_side):
        return []  # "carcinoma arising in an adenoma" states both: no conflict on this side
    if _different_organs(a_side, b_side):
        return []
    scoped = bool(_scopes(a_side) - _scopes(b_side))  # "no malignancy in the lymph nodes"
    hits = []
    for a in a_side:
        benign = _affirmed(a) and a.attributes.get("behavior") == "benign_neoplasm"
        no_malignancy = a.negated and _certain(a) and _key(a) in GENERIC_MALIGNANCY and not scoped
        if not (benign or no_malignancy):
            continue
        for b in b_side:
            if _malignant(b):
                what = "benign neoplasm" if benign else "no malignancy"
                hits.append(
                    _hit(
                        "benign_vs_malignant",
                        w.benign_vs_malignant,
                        a,
                        b,
                        f"{what} ('{a.text}') vs malignant '{b.text}'",
                    )
                )
    return hits


def rule_in_situ_vs_invasive(
    a_side: Sequence[Entity], b_side: Sequence[Entity], w: RuleWeights
) -> list[RuleHit]:
    # In-situ and invasive lesions coexist all the time; only an in-situ diagnosis that excludes
    # invasion ("DCIS; no invasive carcinoma") contradicts invasion stated elsewhere.
    excludes = any(
        e.negated
        and _certain(e)
        and (e.attributes.get("group") == "invasion" or e.attributes.get("invasive") == "yes")
        for e in a_side
    )
    if not excludes:
        return []
    hits = []
    for a in a_side:
        if not (_affirmed(a) and a.attributes.get("behavior") == "in_situ"):
            continue
        for b in b_side:
            invasive = (
                b.attributes.get("invasive") == "yes" or b.attributes.get("group") == "invasion"
            )
            if _affirmed(b) and invasive:
                hits.append(
                    _hit(
                        "in_situ_vs_invasive",
                        w.in_situ_vs_invasive,
                        a,
                        b,
                        f"in situ '{a.text}' vs invasive '{b.text}'",
                    )
                )
    return hits


def _benign_evidence(side: Sequence[Entity]) -> list[Entity]:
    """Statements that only a benign lesion fits: no atypia, no pleomorphism.

    "Benign-appearing" is not counted: reports use it for the background tissue around a cancer.
    """
    if any(_malignant(e) for e in side):
        return []
    return [
        e
        for e in side
        if e.negated and _certain(e) and e.attributes.get("group") in ("atypia", "pleomorphism")
    ]


def rule_benign_morphology(
    a_side: Sequence[Entity], b_side: Sequence[Entity], w: RuleWeights
) -> list[RuleHit]:
    evidence = _benign_evidence(a_side)
    if not evidence or _different_organs(a_side, b_side):
        return []
    p = w.benign_morphology_strong if len(evidence) >= 2 else w.benign_morphology
    what = ", ".join(f"'{e.text}'" + (" (negated)" if e.negated else "") for e in evidence)
    return [
        _hit(
            "benign_morphology",
            p,
            evidence[0],
            b,
            f"benign morphology ({what}) vs malignant '{b.text}'",
        )
        for b in b_side
        if _malignant(b) and b.type == "pathological_diagnosis"
    ]


_GRADE_LEVEL = {"low": 0, "intermediate": 1, "high": 2}


def _mixed_grade(side: Sequence[Entity]) -> bool:
    return {"low", "high"} <= {e.attributes.get("grade") for e in side if _affirmed(e)}


def rule_grade(a_side: Sequence[Entity], b_side: Sequence[Entity], w: RuleWeights) -> list[RuleHit]:
    if _mixed_grade(a_side) or _mixed_grade(b_side):
        return []  # a sentence that states both grades describes a mixed tumour
    hits = []
    for a in a_side:
        ga = a.attributes.get("grade")
        if ga not in _GRADE_LEVEL or not _affirmed(a):
            continue
        for b in b_side:
            if not _affirmed(b):
                continue
            gb = b.attributes.get("grade")
            if gb in _GRADE_LEVEL and gb != ga:
                gap = abs(_GRADE_LEVEL[ga] - _GRADE_LEVEL[gb])
                p = w.grade_opposite if gap == 2 else w.grade_adjacent
                hits.append(_hit("grade", p, a, b, f"grade {ga} ('{a.text}') vs {gb} ('{b.text}')"))
            implied = _implies(b)
            opposite = {"low": "high_grade", "high": "low_grade"}.get(ga)
            if opposite and opposite in implied:
                hits.append(
                    _hit(
                        "grade",
                        w.grade_implied,
                        a,
                        b,
                        f"grade {ga} ('{a.text}') vs '{b.text}' ({opposite})",
                    )
                )
    return hits


def _marker_results(side: Sequence[Entity]) -> dict[str, tuple[str, Entity]]:
    """Marker concept → (result, result entity), pairing each marker with its nearest result."""
    markers = [e for e in side if e.type == "ihc_marker" and not e.uncertain]
    results = [
        e
        for e in side
        if e.attributes.get("result") in ("positive", "negative") and e.type != "margin"
    ]
    out: dict[str, tuple[str, Entity]] = {}
    for m in markers:
        if not results:
            break
        r = min(results, key=lambda r: abs(r.start - m.start))
        out[_key(m)] = (r.attributes["result"], r)
    return out


def rule_marker_result(
    a_side: Sequence[Entity], b_side: Sequence[Entity], w: RuleWeights
) -> list[RuleHit]:
    ra, rb = _marker_results(a_side), _marker_results(b_side)
    hits = []
    for marker, (res_a, ea) in ra.items():
        if marker in rb and rb[marker][0] != res_a:
            eb = rb[marker][1]
            hits.append(
                _hit(
                    "marker_result",
                    w.marker_result,
                    ea,
                    eb,
                    f"{marker} {res_a} here, {rb[marker][0]} there",
                )
            )
    return hits


def rule_margin(
    a_side: Sequence[Entity], b_side: Sequence[Entity], w: RuleWeights
) -> list[RuleHit]:
    hits = []
    for a in a_side:
        if a.type != "margin" or a.uncertain or a.attributes.get("result") != "positive":
            continue
        for b in b_side:
            if b.type == "margin" and not b.uncertain and b.attributes.get("result") == "negative":
                hits.append(
                    _hit(
                        "margin",
                        w.margin,
                        a,
                        b,
                        f"margin involved ('{a.text}') vs free ('{b.text}')",
                    )
                )
    return hits


#: The rules, in the order they are tried (all are tried; the strongest hit wins).
RULES: tuple[Rule, ...] = (
    rule_negation,
    rule_dependency,
    rule_benign_vs_malignant,
    rule_in_situ_vs_invasive,
    rule_benign_morphology,
    rule_grade,
    rule_marker_result,
    rule_margin,
)


class RulesNLI:
    """Contradiction probabilities from clinical rules over extracted entities.

    Args:
        extractor: entity extractor for both texts (default: the ``lexicon`` backend).
        weights: probability of each rule.
        base_probability: probability when no rule fires (never exactly 0: rules are not proof
            of consistency).
    """

    name = "rules"

    def __init__(
        self,
        extractor: EntityExtractor | None = None,
        *,
        weights: RuleWeights | None = None,
        base_probability: float = 0.02,
    ) -> None:
        if extractor is None:
            from pathgls.text import build_extractor

            extractor = build_extractor("lexicon")
        self.extractor = extractor
        self.weights = weights or RuleWeights()
        self.base_probability = base_probability
        self._cache: dict[str, list[Entity]] = {}

    def _entities(self, text: str) -> list[Entity]:
        if text not in self._cache:
            if len(self._cache) > 8192:
                self._cache.clear()
            self._cache[text] = self.extractor.extract(text) if text.strip() else []
        return self._cache[text]

    def explain(self, premise: str, hypothesis: str) -> list[RuleHit]:
        """Every rule hit for the pair, strongest first (premise entities on the left)."""
        p, h = Side(self._entities(premise), premise), Side(self._entities(hypothesis), hypothesis)
        hits: list[RuleHit] = []
        for rule in RULES:
            hits.extend(rule(p, h, self.weights))
            for hit in rule(h, p, self.weights):  # the rule with the roles swapped
                hits.append(
                    RuleHit(
                        hit.rule,
                        hit.probability,
                        hit.hypothesis_entity,
                        hit.premise_entity,
                        hit.explanation,
                    )
                )
        return sorted(hits, key=lambda x: -x.probability)

    def contradiction(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """P(contradiction) per pair: the strongest rule's probability, else the base."""
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        out = np.full(len(premises), self.base_probability, dtype=np.float64)
        for i, (p, h) in enumerate(zip(premises, hypotheses, strict=True)):
            hits = self.explain(p, h)
            if hits:
                out[i] = max(self.base_probability, hits[0].probability)
        return out


@register_nli("rules", description="offline clinical contradiction rules over lexicon entities")
def _build_rules(arg: str) -> RulesNLI:
    return RulesNLI()
