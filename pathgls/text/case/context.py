"""What every slot reader shares: one statement with its clauses, label and subject lookups."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

from pathgls.text.case.model import Fact, Target
from pathgls.text.case.polarity import (
    ABSENT,
    PRESENT,
    UNCERTAIN,
    Clause,
    clauses,
    is_gross,
    polarity,
)
from pathgls.text.case.subjects import ClauseSubject, subject_before
from pathgls.text.document import Statement

#: Regions whose statements are read for most slots (gross only for size and side).
READ_REGIONS = frozenset({"diagnosis", "synoptic", "microscopic", "ihc", "comment", "other"})


#: A line that is only a checklist value ("Present", "Not identified").
_VALUE_LINE = re.compile(
    r"[ \t.:]*\n[ \t]*(?:(?P<neg>not\s+identified|absent|negative|none|no|not\s+present)|"
    r"present|identified|positive|yes)[ \t.]*(?:\n|$)",
    re.I,
)
#: Labels that open prose rather than name a checklist field.
_PROSE_LABEL = re.compile(
    r"(?:\w+\s+)?(?:comments?|notes?|summary|impression|interpretation|diagnosis|addendum|"
    r"final\s+diagnosis|microscopic(?:\s+description)?|discussion)",
    re.I,
)


@dataclass
class Context:
    """One statement as the readers see it."""

    text: str  # the whole document text (offsets are absolute)
    statement: Statement
    clauses: list[Clause]
    label: tuple[int, int] | None  # span of a checklist label ("Histologic Type")
    value_start: int  # where a labelled line's value begins (-1: no label)
    topic: str = ""  # what the previous labelled lines were about ("nodes", "margin")
    has_parts: bool = False  # the report has specimen parts
    part: str | None = None  # the part the statement is about (its own, or "In specimen D, …")
    part_title: str = ""  # the title of that part
    organ: str | None = None  # the organ the report is about, when its words say so
    facts: list[Fact] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        text: str,
        s: Statement,
        *,
        topic: str = "",
        has_parts: bool = False,
        part_titles: dict[str, str] | None = None,
    ) -> Context:
        """The context of statement ``s`` of ``text``."""
        body = s.value_start if s.label is not None and s.value_start >= 0 else s.start
        cl = clauses(text, body, s.end) or [Clause(s.start, s.end)]
        if body > s.start:
            cl = [Clause(s.start, body), *cl]
        label = (
            (s.start, s.value_start) if s.label is not None and s.value_start > s.start else None
        )
        ctx = cls(text, s, cl, label, s.value_start if label else -1, topic, has_parts, s.part)
        lead = _PART_LEAD.match(text, s.start, s.end) or _PART_TAIL.search(text, s.start, s.end)
        dash = _PART_DASH.match(text, s.start, s.end)
        if lead:
            ctx.part = lead.group("p").upper()
        elif dash and dash.group("p") in (part_titles or {}):
            ctx.part = dash.group("p")  # "A - The bladder resection contains …"
        ctx.part_title = (part_titles or {}).get(ctx.part or "", "")
        ctx._starts = [c.start for c in cl]
        return ctx

    @property
    def start(self) -> int:
        """Start of the statement."""
        return self.statement.start

    @property
    def end(self) -> int:
        """End of the statement."""
        return self.statement.end

    @property
    def region(self) -> str:
        """The statement's region."""
        return self.statement.region

    @property
    def label_text(self) -> str:
        """The checklist label, lower case ("" when none)."""
        return self.text[self.label[0] : self.label[1]].lower() if self.label else ""

    @property
    def prose_label(self) -> bool:
        """Whether the label opens prose ("Comment:", "Note:") rather than naming a field."""
        return self.label is not None and bool(
            _PROSE_LABEL.fullmatch(self.label_text.strip(" :.-\t\n"))
        )

    def in_label(self, pos: int) -> bool:
        """Whether ``pos`` lies in the checklist label."""
        return self.label is not None and self.label[0] <= pos < self.label[1]

    def clause(self, pos: int) -> Clause:
        """The clause holding ``pos`` (a label finding's clause runs into its value)."""
        if self.in_label(pos):
            return Clause(self.start, self.end)
        i = max(0, bisect.bisect_right(self._starts, pos) - 1)
        return self.clauses[i]

    def polarity(self, start: int, end: int) -> str:
        """PRESENT, ABSENT or UNCERTAIN for a finding at ``text[start:end]``."""
        c = self.clause(start)
        vs = self.value_start if self.in_label(start) else -1
        return polarity(self.text, c, start, end, value_start=vs)

    def subject(self, pos: int, *, skip: frozenset[str] = frozenset()) -> ClauseSubject | None:
        """The subject of a finding at ``pos`` (see :func:`subject_before`). A label that names
        the specimen ("Lobectomy of the right upper lobe:", "Kidney, left:") is the specimen the
        tumour is in, not another tissue."""
        c = self.clause(pos)
        label = self.label if not self.in_label(pos) else None
        found = subject_before(self.text, c.start, pos, label=label, skip=skip)
        if (
            found is not None
            and label is not None
            and label[0] <= found.start < label[1]
            and found.kind == "tissue"
            and _SPECIMEN_LABEL.search(self.label_text)
        ):
            return None
        return found

    @property
    def unknown_label(self) -> bool:
        """A checklist label that names no subject pathgls knows ("Urethral: free of tumor")."""
        if self.label is None or self.prose_label:
            return False  # "Comment: no invasive carcinoma is identified" is prose, not a field
        return subject_before(self.text, self.label[1], self.label[1], label=self.label) is None

    def bare(self, start: int, end: int) -> bool:
        """A statement that is only the finding's name ("Seminal vesicle invasion."): a checklist
        option or heading, not a statement that the finding is there."""
        if self.label is not None:
            return False
        rest = (self.text[self.start : start] + " " + self.text[end : self.end]).strip(
            " .,;:-*•\n\t"
        )
        if re.search(
            r"\b(?:invad|infiltrat|extend|involv|penetrat)\w*", self.text[start:end], re.I
        ):
            return False  # "Tumor extends into perinephric fat.": a verb makes it a sentence
        return len(rest.split()) <= 1 and not re.search(
            r"\b(?:present|identified|seen|noted|focal|extensive|positive|yes|no|not|with)\b",
            rest,
            re.I,
        )

    def _value_below(self) -> str | None:
        """PRESENT or ABSENT when the next line is nothing but a checklist value."""
        m = _VALUE_LINE.match(self.text, self.end)
        if m is None:
            return None
        return ABSENT if m.group("neg") else PRESENT

    def gross(self, pos: int) -> bool:
        """Whether the finding at ``pos`` is a gross (naked-eye) statement."""
        return self.region == "gross" or is_gross(self.text, self.clause(pos))

    def add(
        self,
        slot: str,
        key: str,
        value: Any,
        start: int,
        end: int,
        *,
        target: Target,
        certain: bool = True,
        note: str = "",
    ) -> Fact:
        """Record one fact of this statement."""
        f = Fact(slot, key, value, target, self.statement.index, start, end, certain, note)
        self.facts.append(f)
        return f

    def add_polar(
        self, slot: str, key: str, start: int, end: int, *, target: Target, pol: str | None = None
    ) -> Fact | None:
        """Record a present/absent fact (uncertain and gross ones are kept, not certain)."""
        p = pol or self.polarity(start, end)
        bare = self.bare(start, end)
        if bare and pol is None and (below := self._value_below()) is not None:
            p, bare = below, False  # "Perineural Invasion\nPresent": a field, its value below
        certain = p != UNCERTAIN and not self.gross(start) and not bare
        value = "absent" if p == ABSENT else "present" if p != UNCERTAIN else "uncertain"
        note = "gross" if self.gross(start) else ""
        return self.add(slot, key, value, start, end, target=target, certain=certain, note=note)

    def target(self, subject: ClauseSubject | None, default: str, *, name: str = "") -> Target:
        """The target a subject names, in this statement's part (``default`` when none)."""
        part = self.part
        if subject is None:
            return Target(default, part, name)
        if subject.kind in ("margin", "nodes"):
            return Target(subject.kind, part, subject.name)
        if subject.kind == "lesion":
            return Target("lesion", part, subject.name)
        if subject.kind == "tumour":
            if subject.other:
                return Target("lesion", part, "other")
            return Target("tumour", part)
        if subject.kind == "population":
            return Target("population", part, subject.name)
        if subject.kind == "part":  # "in part B": the part itself, or its tumour
            return Target("part" if default == "part" else "tumour", subject.name)
        if subject.kind == "background":
            return Target("tissue", part, "background")
        return Target("tissue", part, subject.name)


_WS = re.compile(r"\s+")
_SPECIMEN_LABEL = re.compile(
    r"\w+ectomy|biops|resection|excision|lobe\b|kidney|lung|breast|prostate|uterus|colon|"
    r"rectum|bladder|ovary|pancreas|liver|brain|stomach|specimen",
    re.I,
)
#: "In specimen D, the tumor …": a statement of one part in a section about several.
_PART_LEAD = re.compile(
    r"\W*(?:(?:in|for|within|regarding)\s+)?(?i:specimen|part)\s+#?\s*(?P<p>[A-Z]|\d{1,2})\b"
    r"(?!\s*[-–]\s*\d)"  # not "specimens 1-3"
)
_PART_DASH = re.compile(r"\W*(?P<p>[A-Z])\s+[-–]\s+(?=[A-Z][a-z])")
#: "… in the left lower lobe, part D." names its part at the end.
_PART_TAIL = re.compile(r",\s*(?i:specimen|part)\s+#?\s*(?P<p>[A-Z]|\d{1,2})\s*[.)]?\s*$")


def words(s: str) -> str:
    """Lower case with single spaces."""
    return _WS.sub(" ", s.lower()).strip()
