"""What every check shares: comparisons of two facts and the same-target rule.

A check reads the case model and yields :class:`Comparison` s: two facts it compared, and — when
they cannot both be true — the probability and the explanation. Every comparison is a pair Logic
scores (a conflict at its probability, a compatible pair at the base probability), so the pairs
are exactly what was checked.

Two facts are about the same target only when :meth:`CaseView.same` says so, precision first:
equal targets; or the case-level tumour (a synoptic line, a comment) and the tumour of the one
part that holds a tumour; never a tumour of a part that names several tumour types, a lesion of
another behaviour, a margin of a separately submitted margin part, or another part.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pathgls.config import CheckWeights
from pathgls.text.case import Case, Fact, Target
from pathgls.text.case.polarity import DENIED_BEFORE
from pathgls.text.case.vocab import MULTIPLE_TUMOURS, TUMOUR_MENTION

_MULTI = MULTIPLE_TUMOURS
#: "Multiple foci of PanIN", "two foci of perineural invasion": several foci, not tumours.
_NOT_TUMOUR_AFTER = re.compile(
    r"\s+of\s+(?:[\w\-]+\s+){0,2}?(?:PanIN|PIN|HGPIN|dysplasia|hyperplasia|atypi|metaplasia|"
    r"necrosis|inflammation|calcification|fibrosis|ha?emorrhage|perineural|lymphovascular|"
    r"vascular|angiolymphatic|invasion|endometriosis|adenomyosis|intraepithelial|microcalcification)",
    re.I,
)
#: Cues of one cancer in several foci, not of separate tumours.
_FOCI = re.compile(
    r"multifocal|multicentric|(?:multiple|several|two|three|2|3)\s+(?:[\w\-]+\s+){0,4}?(?:foci|focus)",
    re.I,
)
#: "grade 3 transitional cell carcinoma": a number that grades or stages, not a count.
_NUMBERED_BEFORE = re.compile(
    r"\b(?:grade|stage|type|level|pattern|group|figo|who|g)\s*$|(?:x|×)\s*$", re.I
)


#: A statement about one named sample: "Block A2: …", "In specimen D, …", "… in part 3" — not a
#: citation of the slide that shows a finding ("(slide 1C)").
_SAMPLE_REF = re.compile(
    r"(?:^\W*|\b(?:in|from|of)\s+)(?:specimens?|blocks?|parts?|cassettes?|containers?)\s+#?\s?"
    r"(?:[A-Z]\d{0,2}|\d{1,2}[A-Z]?)\b(?!\s*(?:cm|mm|x)\b)",
    re.I,
)
_SIDE_WORD = re.compile(r"\b(?:left|right|bilateral)\b", re.I)
#: A number that continues into a size ("mass 2.3 x 2.0 cm"): not "mass 2" of several.
_SIZE_AFTER = re.compile(r"[.,]\d|\s*(?:x|×|cm|mm)\b", re.I)


@dataclass(frozen=True)
class Comparison:
    """Two facts a check compared; ``probability`` > 0 when they cannot both be true."""

    rule: str
    a: Fact
    b: Fact
    probability: float = 0.0  # 0: compatible
    explanation: str = ""

    @property
    def conflict(self) -> bool:
        """Whether the two facts contradict each other."""
        return self.probability > 0

    @property
    def statements(self) -> tuple[int, int]:
        """The two statement indices, in report order."""
        return tuple(sorted((self.a.statement, self.b.statement)))  # type: ignore[return-value]


_OTHER_SITES = tuple(
    (site, re.compile(rx, re.I))
    for site, rx in (
        ("appendix", r"\bappendi(?:x|ceal)"),
        ("gallbladder", r"\bgall\s?bladder"),
        ("adrenal", r"\badrenal"),
        ("thyroid", r"\bthyroid"),
        ("skin", r"\bskin\b|\bcutaneous"),
    )
)


class CaseView:
    """A case model with the questions checks ask of it."""

    def __init__(self, case: Case) -> None:
        self.case = case
        tumour_parts = [k for k, p in case.parts.items() if k is not None and p.main is not None]
        self.only_part = tumour_parts[0] if len(tumour_parts) == 1 else None
        parts = [k for k in case.parts if k is not None]
        if not tumour_parts and len(parts) == 1:
            self.only_part = parts[0]  # one specimen: the case's tumour is in it
        self.n_tumour_parts = len(tumour_parts)
        #: Whether the report has several specimen parts (a line's part is then a parser's guess).
        self.several_parts = len(parts) > 1
        self.tumour_parts = frozenset(tumour_parts)
        mains = [m for k in tumour_parts if (m := case.parts[k].main) is not None]
        from pathgls.text.case import compatible_types

        #: Several parts sample one tumour type ("Brain tumor A", "Brain tumor B"): statements
        #: outside the parts are about that tumour (unless the report speaks of several tumours).
        self.one_tumour_type = len(tumour_parts) > 1 and all(
            compatible_types(a, b) is not False for a in mains for b in mains
        )
        self.margin_parts = {
            k
            for k, p in case.parts.items()
            if k is not None and re.search(r"margin", p.title, re.I)
        }

    @functools.cached_property
    def primaries(self) -> int:
        """How many primary tumours of incompatible types the case names (1 when unsure)."""
        from pathgls.text.case import compatible_types

        mains: list[str] = []
        for f in self.case.facts:
            if f.slot != "behaviour" or f.value != "malignant" or not f.certain:
                continue
            concept = next(
                (t.value for t in self.case.facts if t.slot == "type" and t.start == f.start), None
            )
            if concept is None or any(compatible_types(concept, m) is not False for m in mains):
                continue
            mains.append(concept)
        return max(1, len(mains))

    @functools.cached_property
    def multiple(self) -> frozenset[str | None]:
        """Parts (None: the case) whose statements speak of several tumours or foci."""
        return self._multiple(foci=True)

    @functools.cached_property
    def separate(self) -> frozenset[str | None]:
        """Parts whose statements speak of separate tumours ("a second tumour", "tumour #2"),
        not of one multifocal cancer: its invasion findings are still the case's."""
        return self._multiple(foci=False)

    def _multiple(self, *, foci: bool) -> frozenset[str | None]:
        from pathgls.text.case.vocab import vocabulary

        vocab = vocabulary()
        out: set[str | None] = set()
        for s in self.case.document.statements:
            text = self.case.document.statement_text(s)
            if not s.is_assertion or not any(
                not (s.label is not None and s.start + m.start() < s.value_start)  # a field name
                and not DENIED_BEFORE.search(text, max(0, m.start() - 30), m.start())
                and not _NOT_TUMOUR_AFTER.match(text, m.end())
                and (foci or not _FOCI.fullmatch(m.group()))
                and not _NUMBERED_BEFORE.search(text, max(0, m.start() - 12), m.start())
                and not re.match(
                    r"\d\s*(?:x|×|cm|mm|\.\d)", m.group(), re.I
                )  # "6 x 3 x 2 cm tumor"
                and not _SIZE_AFTER.match(text, m.end(), m.end() + 6)  # "a mass 2.3 x 2 cm"
                for m in _MULTI.finditer(text)
            ):
                continue  # "without additional focal lesion" speaks of one tumour
            if not TUMOUR_MENTION.search(text):
                continue  # "multifocal black foci of discoloration"
            if re.search(
                r"\bone\s+of\s+(?:which|them|these)\s+(?:is|was|represents)\b", text, re.I
            ):
                continue  # "multiple lesions …, one of which is an adenocarcinoma": one cancer
            terms = [vocab.diagnosis(d.group()) for d in vocab.diagnoses.finditer(text)]
            behaviours = {t.attributes.get("behavior") for t in terms if t} - {None}
            if behaviours and not behaviours & {"malignant", "in_situ"}:
                continue  # "an incidental nodule consistent with a leiomyoma": not a cancer
            out.add(s.part)
        return frozenset(out)

    def carcinoma(self, t: Target) -> bool:
        """Whether the tumour of ``t`` is a carcinoma (the AJCC chapters the stage rules read);
        True when the report names no type (the stage is then the only witness)."""
        from pathgls.text.case.vocab import vocabulary

        p = self.case.parts.get(t.part)
        main = p.main if p is not None and p.main else None
        if main is None and t.part is None and self.only_part is not None:
            main = self.case.parts[self.only_part].main
        if main is None:
            return True
        family = vocabulary().family(main)
        return family is None or family.startswith("carcinoma")

    def organ(self, f: Fact) -> str | None:
        """The organ of the tumour a fact is about."""
        p = self.case.parts.get(f.target.part)
        if p is not None and p.organ:
            return p.organ
        if f.target.part is None and self.only_part is not None:
            return self.case.parts[self.only_part].organ
        return self.case.parts[None].organ if None in self.case.parts else None

    def ambiguous(self, t: Target) -> bool:
        """Whether "the tumour" of ``t``'s part names no lesion for sure."""
        p = self.case.parts.get(t.part)
        if p is not None and p.ambiguous:
            return True
        if t.part is None and self.n_tumour_parts > 1:
            return not (self.one_tumour_type and None not in self.multiple)
        return False

    def _part_key(self, t: Target) -> str | None:
        if t.part is None and t.kind in ("tumour", "nodes", "margin") and self.only_part:
            if t.kind == "margin" and self.margin_parts:
                return "__case__"
            return self.only_part
        return t.part

    def same(self, a: Target, b: Target) -> bool:
        """Whether two targets are certainly the same thing (module docstring)."""
        if a.kind != b.kind or a.name != b.name:
            return False
        if a.kind == "tumour" and (self.ambiguous(a) or self.ambiguous(b)):
            return False
        if (
            a.kind == "tumour"
            and self.one_tumour_type
            and None not in self.multiple
            and (a.part is None) != (b.part is None)
            and (a.part or b.part) in self.tumour_parts
        ):
            return True  # the case's tumour and one of the parts that sample it
        if a.kind in ("lesion",) and a.name in ("other", ""):
            return False
        if a.kind == "population":
            return a.part == b.part
        return self._part_key(a) == self._part_key(b)

    def facts(self, slot: str, *, kind: str | None = None, key: str | None = None) -> list[Fact]:
        """Certain facts of one slot (and target kind / key)."""
        return [
            f
            for f in self.case.facts
            if f.slot == slot
            and f.certain
            and (kind is None or f.target.kind == kind)
            and (key is None or f.key == key)
        ]

    @functools.cached_property
    def _labels(self) -> dict[int, str]:
        doc = self.case.document
        return {
            s.index: " ".join(s.label.lower().split())
            for s in doc.statements
            if s.label is not None
        }

    def repeated_label(self, a: Fact, b: Fact) -> bool:
        """Two checklist lines with the same label ("Histologic type:" twice) belong to two
        checklists — two tumours, or the same one twice — never one statement against another."""
        la, lb = self._labels.get(a.statement), self._labels.get(b.statement)
        return la is not None and la == lb and a.statement != b.statement

    def pairs(self, facts: list[Fact]) -> Iterator[tuple[Fact, Fact]]:
        """Every pair of facts about the same target (from different evidence, not two lines of
        the same checklist label)."""
        for i, a in enumerate(facts):
            for b in facts[i + 1 :]:
                if (a.statement, a.start) == (b.statement, b.start) or self.repeated_label(a, b):
                    continue
                if self.same(a.target, b.target) and not self.other_sample(a, b):
                    yield a, b

    @functools.cached_property
    def _samples(self) -> dict[int, tuple[frozenset[str], frozenset[str]]]:
        """Statement → (the samples it names, the sides it names)."""
        doc = self.case.document
        out = {}
        for s in doc.statements:
            text = doc.statement_text(s)
            samples = frozenset(
                " ".join(m.group().lower().split()[-2:])
                for m in _SAMPLE_REF.finditer(text)
                if text.count("(", 0, m.start()) <= text.count(")", 0, m.start())
            )
            sides = frozenset(m.group().lower() for m in _SIDE_WORD.finditer(text))
            out[s.index] = (samples, sides)
        return out

    def other_sample(self, a: Fact, b: Fact) -> bool:
        """Whether two facts may be about different samples of their target: a statement naming
        a block, specimen or part the other does not ("In specimen D, the tumour is devoid of
        necrosis"; "Block A2: methylated MGMT" / "Block A3: no methylated MGMT"), or two node,
        margin or tissue statements naming different sides ("(Lymph nodes, left side): …")."""
        (sa, da), (sb, db) = self._samples[a.statement], self._samples[b.statement]
        if sa != sb:
            return True
        return a.target.kind not in ("tumour", "part") and bool(da) and bool(db) and da != db

    def organs_named(self, f: Fact, *, other_sites: bool = False) -> frozenset[str]:
        """The organs the sentence of a fact names (with ``other_sites``, also the appendix,
        gallbladder, adrenal, thyroid and skin: sites a second tumour is found in)."""
        from pathgls.text.case.build import organs_in

        sentence = self.case.sentence(f.statement)
        if other_sites:  # a type named for an organ ("endometrioid") is found in others too
            sentence = re.sub(r"(?i)endometrioid", " ", sentence)
        found = organs_in(sentence)
        if other_sites:
            found |= frozenset(site for site, rx in _OTHER_SITES if rx.search(sentence))
        return found

    def text(self, f: Fact) -> str:
        """The evidence words of a fact."""
        return self.case.evidence(f)


#: A check: the case model and the weights → the comparisons it made.
Check = Callable[[CaseView, CheckWeights], Iterable[Comparison]]


def compared(rule: str, a: Fact, b: Fact) -> Comparison:
    """A compatible comparison."""
    return Comparison(rule, a, b)


def conflict(rule: str, p: float, a: Fact, b: Fact, why: str) -> Comparison:
    """A contradiction."""
    return Comparison(rule, a, b, p, why)
