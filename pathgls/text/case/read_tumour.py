"""Readers of the tumour's valued slots: type and behaviour, grade (per system), size, side/site.

A type is read only where it is *the* diagnosis of its subject: a checklist line of a type label
("Histologic type: …"), a diagnosis line that starts with it, or a copula in prose ("the tumor is
a …", "consistent with …"). Grades keep their system; a generic number is only compared within
its system. Sizes are read only of the tumour (never of a specimen, a fragment or a margin).
"""

from __future__ import annotations

import dataclasses
import re

from pathgls.text.case.context import Context
from pathgls.text.case.model import Target
from pathgls.text.case.polarity import PRESENT
from pathgls.text.case.subjects import location_after, subject_before
from pathgls.text.case.vocab import TUMOUR_MENTION, vocabulary
from pathgls.text.vocab_files import load_table

_TYPE_LABEL = re.compile(
    r"^\s*(?:histologic(?:al)?|histopathologic(?:al)?|tumou?r|cancer|carcinoma|final|"
    r"pathologic(?:al)?|microscopic|who|histologic(?:al)?\s+who)?\s*(?:type|subtype|histology|histotype|diagnosis|"
    r"histologic\s+type|type\s+of\s+tumou?r|tumou?r\s+histology)\b",
    re.I,
)
_COPULA = re.compile(
    r"(?:\b(?:is|are|was|represents?|represent(?:ing)?|consistent\s+with|diagnostic\s+of|"
    r"shows?|showed|showing|demonstrates?|reveals?|revealed|contains?|harbou?rs?|"
    r"compatible\s+with|characteristic\s+of|typical\s+of|confirm(?:s|ing)?|shows?\s+(?:a|an)|"
    r"diagnosed\s+as|classified\s+as|features\s+of|those\s+of|identified\s+as)\s+(?:an?\s+|the\s+)?"
    r"(?:(?:invasive|infiltrating|residual|primary|conventional|classic|typical|benign|malignant|"
    r"grade\s+(?:[1-4]|I{1,3}V?)|"
    r"high[\s\-]grade|low[\s\-]grade|(?:well|moderately|poorly)[\s\-]differentiated|small|large|"
    r"solitary|single|unifocal|focal|\d+(?:\.\d+)?\s*(?:cm|mm)|thymic|pulmonary|renal|gastric|colonic|"
    r"hepatic|pancreatic|mammary|ovarian|endometrial|cervical|prostatic|esophageal|cutaneous|"
    r"intraductal|recurrent|diffuse|fibrillary|gemistocytic|anaplastic|pilocytic|mucinous|"
    r"mucin-producing|keratinizing|non-keratinizing|papillary|serous|acinar|solid|[a-z]+-[a-z]+)"
    r"[\s,]+){0,3}$)",
    re.I,
)
_LEAD = re.compile(
    r"^[\s\-*•:]*(?:(?:grade\s+(?:[1-4]|I{1,3}V?)(?:\s*/\s*[34])?|invasive|infiltrating|residual|"
    r"primary|multifocal|bilateral|focal|"
    r"predominantly|mostly|extensive|high|low|grade|moderately|well|poorly|differentiated|"
    r"anaplastic|recurrent|histologic(?:al)?|nuclear|the|a|an|malignant|benign|papillary|"
    r"diagnosis|consistent\s+with|compatible\s+with|clear[\s\-]cell|chromophobe|conventional)"
    r"[\s,\-:]+|\([^()]{1,20}\)[\s,\-:]*){0,4}$",
    re.I,
)
#: "1,2) BRAIN TUMOR: " before a diagnosis line's name: the line's own heading.
_HEADING_PREFIX = re.compile(
    r"^[\s\-*•]*(?:\(?[\dA-Za-z]{1,3}(?:\s*,\s*\d{1,2})*[.)]\s*)?[A-Za-z][A-Za-z ,/\-]{1,40}:\s*"
)
_MIXED = re.compile(
    r"\b(?:mixed|combined|with\s+(?:an?\s+)?(?:focal\s+)?\w+\s+(?:component|features|"
    r"differentiation)|component|collision|biphasic)\b|"
    # "carcinoma and a neuroendocrine tumor" (not "left temporal and periventricular tumor")
    r"(?:oma|tumou?r)\s*(?:\([^)]{0,20}\)\s*)?,?\s+(?:and|with|plus)\s+(?:an?\s+)?(?:\w+\s+){0,3}(?:carcinoma|adenocarcinoma|sarcoma|"
    r"tumou?r)\b",
    re.I,
)
#: "OVARY WITH POORLY DIFFERENTIATED …", "Prostate, showing adenocarcinoma": the diagnosis of
#: the organ a diagnosis line names first.
_ORGAN_WITH = re.compile(
    r"^[\s\-*•:]*(?:[A-Za-z\-]+[\s,]+){1,3}(?:with|showing|involved\s+by|containing|harbou?ring)\s+"
    r"(?:(?:an?|the|invasive|infiltrating|residual|multifocal|focal|extensive|high|low|grade|"
    r"moderately|well|poorly|differentiated|anaplastic|recurrent|papillary|solid|cystic)[\s,\-]+){0,4}$",
    re.I,
)
_ARISING = re.compile(
    r"\b(?:arising\s+(?:in|from)|in\s+a\s+background\s+of|associated\s+with|"
    r"adjacent|background|ex\b|from\s+(?:an?\s+)?)\s*(?:\w+\s+){0,3}$",
    re.I,
)
_SUBTYPE = re.compile(
    r"[\s,(\-]*(?:\([^)]{0,60}\)[\s,]*)?(?:(?:of\s+)?(?P<w>clear[\s\-]cell|conventional|papillary|chromophobe|"
    r"collecting\s+duct)\s*(?:\(\w+\)\s*)?(?:type|variant|subtype)|(?:type|subtype)\s*[:\-]?\s*"
    r"(?P<w2>clear[\s\-]cell|conventional|papillary|chromophobe))",
    re.I,
)
_SUBTYPE_BEFORE = re.compile(
    r"(?P<w>clear[\s\-]cell|papillary|chromophobe)\s*\([^)]{0,20}\)\s*$", re.I
)
_RCC_SUBTYPES = load_table("rcc_subtypes").mapping("subtype", "concept")
_BEHAVIOUR = {
    "malignant": "malignant",
    "in_situ": "in_situ",
    "premalignant": "premalignant",
    "benign_neoplasm": "benign",
    "benign_process": "benign",
    "borderline": "borderline",
}


def read_type(ctx: Context) -> None:
    """Diagnosis names stated as the diagnosis of their subject (type + behaviour facts)."""
    if ctx.region in ("gross",):
        return
    vocab = vocabulary()
    text = ctx.text
    label_is_type = bool(ctx.label is not None and _TYPE_LABEL.match(ctx.label_text))
    for m in vocab.diagnoses.finditer(text, ctx.start, ctx.end):
        term = vocab.diagnosis(m.group())
        if term is None or ctx.in_label(m.start()):
            continue
        behaviour = _BEHAVIOUR.get(term.attributes.get("behavior", ""))
        if behaviour is None:
            continue
        if "metastasis" in term.attributes.get("depends_on", "") or _METASTATIC.search(
            text, max(ctx.start, m.start() - 12), m.start()
        ):
            _metastasis(ctx, m, term.concept)  # where the tumour spread, not what it is
            continue
        c = ctx.clause(m.start())
        before = text[c.start : m.start()]
        copula = bool(_COPULA.search(before[-80:]))
        subject = ctx.subject(m.start()) if copula else None
        principal = (
            (
                label_is_type
                and m.start() >= ctx.value_start
                and _LEAD.match(text[ctx.value_start : m.start()])
            )
            or (
                ctx.region in ("diagnosis", "other")
                and (
                    _LEAD.match(before)
                    or _ORGAN_WITH.match(before)
                    or _LEAD.match(_HEADING_PREFIX.sub("", before, count=1))
                )
                and c.start == _body(ctx)
            )
            or (
                # "Addendum Diagnosis: Left temporal tumor\nAnaplastic Astrocytoma (Grade III)",
                # "C. Pancreatic mass: \n Ductal adenocarcinoma invading …": a line of its own
                ctx.region in ("diagnosis", "other", "synoptic", "microscopic")
                and (ctx.region != "microscopic" or ctx.part is not None)
                and "\n" in text[_body(ctx) : m.start()]
                and _LEAD.match(before.rsplit("\n", 1)[-1])
                and not re.search(r"[.;]\s*$", before.rsplit("\n", 1)[0])
            )
            or bool(_COPULA.search(before[-80:]))
        )
        pol = ctx.polarity(m.start(), m.end())
        if principal and (_option_list(ctx, m) or _ABOUT_A_TYPE.search(before[-60:])):
            principal = False  # a list of types to choose from; "characteristic of X"
        if principal and copula and _PLACED_SUBJECT.search(before[-80:]):
            continue  # "the tumor in the lymph nodes is urothelial carcinoma": one site's tumour
        if not principal or _ARISING.search(before[-40:]):
            if pol == PRESENT and behaviour in ("malignant", "in_situ"):
                # named, not stated as the diagnosis: an anchor for finding -> diagnosis pairs
                ctx.add(
                    "mention",
                    "",
                    term.concept,
                    m.start(),
                    m.end(),
                    target=Target("tumour", ctx.part),
                )
            continue
        if pol != PRESENT:
            continue
        if (
            behaviour == "benign"
            and term.attributes.get("behavior") == "benign_process"
            and copula
            and subject is not None
            and subject.kind == "tumour"
            and re.search(r"\b(?:is|are|was|were|appears?)\s+(?:\w+ly\s+)?$", before, re.I)
        ):
            continue  # "the mass is edematous": a description of the tumour, not its diagnosis
        concept = term.concept
        sub = _SUBTYPE.match(text, m.end(), min(ctx.end, m.end() + 60))
        pre = _SUBTYPE_BEFORE.search(text, max(ctx.start, m.start() - 40), m.start())
        if sub and concept == "renal cell carcinoma":
            word = " ".join((sub.group("w") or sub.group("w2")).lower().replace("-", " ").split())
            concept = _RCC_SUBTYPES.get(word, concept)
        elif pre and concept == "renal cell carcinoma":  # "Clear cell (conventional) renal …"
            word = " ".join(pre.group("w").lower().replace("-", " ").split())
            concept = _RCC_SUBTYPES.get(word, concept)
        of_type = _OF_TYPE.match(text, m.end(), min(ctx.end, m.end() + 40))
        if of_type:  # "endometrial adenocarcinoma of the endometrioid type"
            named = next(
                (
                    t
                    for noun in (m.group(), m.group().split()[-1], "adenocarcinoma", "carcinoma")
                    if (t := vocab.diagnosis(f"{of_type.group(1)} {noun}")) is not None
                ),
                None,
            )
            if named is not None and _subtype_of(named.concept, concept):
                concept = named.concept  # a subtype of what the line names
        mixed = any(_names_a_mix(ctx, x) for x in _MIXED.finditer(text, ctx.start, ctx.end))
        target = Target("tumour", ctx.part)
        if subject is not None and subject.kind == "part":
            target = Target("tumour", subject.name)
        note = "mixed" if mixed else ""
        if label_is_type:
            note = (note + " field").strip()
        if (
            copula
            and subject is not None
            and subject.kind in ("tumour", "part")
            and not subject.other
            and "cell" not in subject.name
            and re.search(r"\b(?:is|was|represents?)\b", before[-60:], re.I)
        ):
            note = (note + " copula").strip()
        ctx.add("type", "", concept, m.start(), m.end(), target=target, note=note)
        key = "invasive" if term.attributes.get("invasive") == "yes" else ""
        ctx.add("behaviour", key, behaviour, m.start(), m.end(), target=target, note=note)


def _denied_diagnosis_before(ctx: Context, pos: int) -> bool:
    """Whether a parenthesised grade at ``pos`` is that of a diagnosis named just before it and
    denied ("a gemistocytic astrocytoma (WHO grade II) is not diagnosed")."""
    paren = ctx.text.rfind("(", max(ctx.start, pos - 4), pos)
    if paren < 0:
        return False
    last = None
    for d in vocabulary().diagnoses.finditer(ctx.text, max(ctx.start, paren - 60), paren):
        last = d
    if last is None or ctx.text[last.end() : paren].strip():
        return False
    return ctx.polarity(last.start(), last.end()) != PRESENT


def _subtype_of(sub: str, concept: str) -> bool:
    """Whether diagnosis ``sub`` is ``concept`` or one of its subtypes (histotype families)."""
    vocab = vocabulary()
    fs, fc = vocab.family(sub), vocab.family(concept)
    return fs is not None and fc is not None and (fs == fc or fs.startswith(fc + "/"))


_METASTATIC = re.compile(r"metastatic\s+$", re.I)
#: "adenocarcinoma of the endometrioid type", "carcinoma, serous type".
_OF_TYPE = re.compile(r"\s*,?\s*(?:of\s+(?:the\s+)?)?([a-z]+)\s+(?:type|subtype)\b", re.I)


def _names_a_mix(ctx: Context, x: re.Match[str]) -> bool:
    """Whether a mixed-tumour cue names a mix: not "no sarcomatous component", not "malignant
    mullerian mixed tumor" (one tumour's name)."""
    text = ctx.text
    before = text[max(ctx.start, x.start() - 30) : x.start()]
    if re.search(r"\b(?:no|not|without|lacks?|lacking|absent)\s+(?:\w+\s+){0,2}$", before, re.I):
        return False
    return not (
        re.match(r"mixed\s+(?:tumou?r|m[uü]ll)", text[x.start() : x.end() + 12], re.I)
        or re.search(r"\b(?:heterologous|homologous)\b", x.group(), re.I)
        or re.search(r"m[uü]llerian\s+$", before, re.I)
    )


_ABOUT_A_TYPE = re.compile(
    r"\b(?:characteristic|typical|suggestive|reminiscent|features?)\s+of\s+"
    r"(?:the\s+|an?\s+)?(?:[\w\-]+\s+){0,2}$|\b(?:devoid\s+of|lack\w*|absence\s+of)\s+"
    r"(?:[\w\-,]+\s+){0,6}$",
    re.I,
)
_PLACED_SUBJECT = re.compile(
    r"\b(?:tumou?r|carcinoma|neoplasm|lesion)\s+(?:in|of|within)\s+(?:the\s+)?[\w\-]+(?:\s+[\w\-]+)?"
    r"\s+(?:is|was|represents)\s+(?:an?\s+|the\s+)?(?:[\w\-]+\s+){0,2}$",
    re.I,
)
_BARE_LINE = re.compile(r"[\s\-*•\d.)\]]*(?P<d>[^\n]*?)[\s.,;:]*")


def _bare_diagnosis(line: str) -> str | None:
    """The concept a line names when the line is nothing but a diagnosis name."""
    vocab = vocabulary()
    body = _BARE_LINE.fullmatch(line)
    if body is None or not body.group("d"):
        return None
    hit = vocab.diagnoses.fullmatch(body.group("d"))
    term = vocab.diagnosis(hit.group()) if hit else None
    return term.concept if term is not None else None


def _option_list(ctx: Context, m: re.Match[str]) -> bool:
    """A line that is only a diagnosis name between lines that are other diagnosis names
    ("Small cell carcinoma / Dysgerminoma / Papillary serous carcinoma"): the options of a
    checklist whose mark the text lost, not diagnoses."""
    text = ctx.text
    a = text.rfind("\n", 0, m.start()) + 1
    b = text.find("\n", m.end())
    b = len(text) if b < 0 else b
    own = _bare_diagnosis(text[a:b])
    if own is None:
        return False
    before = text[:a].rstrip("\n").rsplit("\n", 1)[-1] if a > 0 else ""
    after = text[b + 1 :].lstrip("\n").split("\n", 1)[0] if b < len(text) else ""
    return any(
        (other := _bare_diagnosis(line)) is not None and other != own for line in (before, after)
    )


def _metastasis(ctx: Context, m: re.Match[str], concept: str) -> None:
    """ "Metastatic melanoma in two axillary lymph nodes": what spread, and where."""
    if ctx.polarity(m.start(), m.end()) != PRESENT:
        return
    primary = concept.removeprefix("metastatic ").strip()
    subject = ctx.subject(m.start(), skip=frozenset({"tumour", "lesion"}))
    where = subject or location_after(ctx.text, m.end(), ctx.clause(m.start()).end)
    target = ctx.target(where, "part") if where is not None else Target("part", ctx.part)
    ctx.add("metastasis", "", primary, m.start(), m.end(), target=target)


def _body(ctx: Context) -> int:
    return ctx.value_start if ctx.value_start >= 0 else ctx.start


# --- grade ------------------------------------------------------------------------------------

_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4}
_NUM = r"(?P<n>[1-4]|I{1,3}|IV)\b"


def _num(s: str) -> int:
    s = s.strip().lower()
    return _ROMAN[s] if s in _ROMAN else int(s)


_GLEASON = re.compile(
    r"gleason(?:\s?'\s?s)?\s*(?:score|grade|sum|pattern)?\s*(?:is|of|[:=])?\s*(?:(?P<s>\d{1,2})\s*"
    r"[\(\[]\s*(?P<a>[1-5])\s*\+\s*(?P<b>[1-5])\s*[\)\]]|(?P<a2>[1-5])\s*\+\s*(?P<b2>[1-5])"
    r"(?:\s*(?:\+\s*[1-5]\s*)?(?:=|equals?|for\s+a\s+(?:total\s+)?(?:score\s+)?of)\s*"
    r"(?P<s2>\d{1,2}))?|(?P<s3>\d{1,2})(?!\s*[+%]))",
    re.I,
)
_TOTAL_SCORE = re.compile(
    r"\s*[\(,;]?\s*(?:total\s+|gleason\s+)?(?:score|sum)\s*(?:of|=|:)?\s*(?P<s>\d{1,2})\b", re.I
)
_GRADE_GROUP = re.compile(
    r"(?:(?:isup|who)\s*(?:/\s*(?:isup|who))?\s*)?grade\s+group\s*(?:\([^()]{0,20}\)\s*)?"
    r"(?:is|of|[:=])?\s*(?P<n>[1-5])\b|"
    r"(?<![A-Za-z])GG\s*(?P<n2>[1-5])\b",
    re.I,
)
_SYSTEM_GRADE = re.compile(
    r"(?P<sys>fuhrman|isup|who\s*/\s*isup|isup\s*/\s*who|figo|nottingham|who|bloom[\s\-]+"
    r"richardson|elston|histologic(?:al)?|nuclear|overall|combined|tumou?r|architectural)?"
    r"(?:\s+(?:nuclear|histologic(?:al)?|combined|modified|architectural))?"
    r"(?:\s*\([A-Za-z'’\s]{2,15}\))?\s*grade\s*"
    r"(?:/\s*differentiation\s*)?(?:is|of|[:=\-])?\s*(?:\(?\s*)?(?P<n>[1-4]|I{1,3}V?|IV)\b(?:\s*(?:/|of|out\s+of)\s*"
    r"(?P<d>[34]|III|IV)\b)?",
    re.I,
)
_SYSTEM_BEFORE = re.compile(
    r"(?P<sys>fuhrman|isup|figo|nottingham|who|nuclear)\W+(?:\([^)]{0,15}\)\W*)?grade\b"
    r"[^.;\d]{0,30}$",
    re.I,
)
_COMPONENT_AFTER = re.compile(
    r"(?:[\s\-]+[A-Za-z]+){0,2}?\s+(?:components?|areas?|foci|elements?|regions?)\b", re.I
)
#: The value of a grade field: "2 of 4", "G-3", "III", "3/3".
_VALUE_GRADE = re.compile(
    r"\s*(?:grade\s*)?(?:G\s*-?\s*)?(?P<n>[1-4]|IV|I{1,3})(?![\d.A-Za-z])(?:\s*(?:of|/)\s*(?P<d>[34]))?"
    r"(?!\s*(?:-|to|or|and|&)\s*\w)",
    re.I,
)
_G_TOKEN = re.compile(r"(?<![A-Za-z0-9])G(?P<n>[1-3])(?![A-Za-z0-9])")
#: "G2: moderately differentiated", "(G3)": a grade token, not a cassette "G2".
_G_CONTEXT = re.compile(
    r"\s*(?:[:\-)]\s*)?(?:\(?\s*)?(?:well|moderately|poorly|un)[\s\-]*differentiated|\s*\)", re.I
)
#: A grade that is one end of a range or list ("2-3", "II/III", "3 & 4", "2 or 3", "2 to 3").
_RANGE = re.compile(
    r"\s*(?:-|–|/|&|\bor\b|\bto\b|\band\b)\s*(?:G|grade\s*)?(?:[1-4]|I{1,3}V?|IV)\b(?!\s*(?:of|/))",
    re.I,
)
_NOTT_SCORE = re.compile(
    r"(?:nottingham|total|overall|combined|bloom[\s\-]+richardson)\s+(?:histologic\s+)?score\s*"
    r"(?:is|of|[:=])?\s*(?P<n>[3-9])\b(?:\s*(?:/|of)\s*9)?|\b(?P<n2>[3-9])\s*/\s*9\b",
    re.I,
)
_DIFF = re.compile(
    r"(?P<a>well|moderately|moderate|poorly|un)(?:[\s.]*(?:to|-|/)[\s.]*(?P<b>well|moderately|moderate|"
    r"poorly))?[\s\-]*(?:differentiated|differentiation)",
    re.I,
)
_TWO_TIER = re.compile(
    r"(?<![A-Za-z])(?P<v>low|high)[\s\-]+grade(?![A-Za-z])(?![\s,]*(?:[\w\-]+\s+){0,2}(?:dysplasia|component|"
    r"pin|prostatic\s+intraepithelial|intra\w*|squamous\s+intra|sil|"
    r"cin|atypia|neoplasia|papillary\s+urothelial\s+neoplasm|malignant\s+potential|"
    r"squamous|urothelial\s+dysplasia|adenoma|lesion))",
    re.I,
)
_DIFF_VALUE = {"well": 1, "moderately": 2, "moderate": 2, "poorly": 3, "un": 3}
_SYSTEMS = load_table("grade_systems").mapping("name", "system")


_DIAGNOSIS_NEXT = re.compile(
    r"[\s,\-]*(?:(?:papillary|solid|cystic|invasive|infiltrating)\s+)*", re.I
)


def read_grade(ctx: Context) -> None:
    """Grades by system (facts keyed gleason, grade_group, nottingham, nottingham_score,
    fuhrman, figo, who, histologic, nuclear, two_tier, differentiation)."""
    if ctx.region == "gross":
        return
    text, lab = ctx.text, ctx.label_text
    taken: list[tuple[int, int]] = []

    def add(key: str, value: object, m: re.Match[str], note: str = "") -> None:
        if any(a <= m.start() < b for a, b in taken):
            return
        if _RANGE_BEFORE.search(text, max(ctx.start, m.start() - 30), m.start()):
            return  # "grade II or grade III", "from grade II to III", "ranges between 2 and 3"
        named = key not in ("histologic", "two_tier", "differentiation", "nuclear")
        if (
            ctx.label is None
            and ctx.region not in ("diagnosis", "synoptic")
            and not (named or _near_tumour(ctx, m))
        ):
            return  # a generic grade in prose must be said of the tumour ("the tumour is grade 2")
        taken.append((m.start(), m.end()))
        subject = ctx.subject(m.start())
        if (nxt := _DIAGNOSIS_NEXT.match(text, m.end(), ctx.end)) and vocabulary().diagnoses.match(
            text, nxt.end(), ctx.end
        ):
            subject = None  # "OVARY WITH POORLY DIFFERENTIATED SEROUS CARCINOMA": the carcinoma's
        target = ctx.target(subject, "tumour")
        if target.kind in ("margin", "nodes", "population", "tissue", "part"):
            return
        certain = ctx.polarity(m.start(), m.end()) == PRESENT or (
            # "absent or inconspicuous nucleoli (Fuhrman grade 1)": a denial outside the
            # parentheses does not reach the grade within them
            text[max(ctx.start, m.start() - 2) : m.start()].rstrip().endswith("(")
            and not re.search(r"\b(?:no|not)\b", text[m.start() : m.end()], re.I)
        )
        certain = certain and not _denied_diagnosis_before(ctx, m.start())
        ctx.add("grade", key, value, m.start(), m.end(), target=target, certain=certain, note=note)

    part_label = re.search(r"\b(primary|secondary|tertiary)\b", lab)
    for m in _GLEASON.finditer(text, ctx.start, ctx.end):
        if part_label or re.search(
            r"(?:primary|secondary|tertiary)\s+(?:gleason\s+)?(?:pattern|grade)",
            text[max(ctx.start, m.start() - 30) : m.end()],
            re.I,
        ):
            n = re.search(r"[1-5]", m.group()[-3:])
            word = (
                part_label.group(1)
                if part_label
                else re.search(  # type: ignore[union-attr]  # the window matched one above
                    r"primary|secondary|tertiary",
                    text[max(ctx.start, m.start() - 30) : m.end()],
                    re.I,
                )
                .group()
                .lower()
            )
            if n:
                add(f"gleason_{word}", int(n.group()), m)
            continue
        a = m.group("a") or m.group("a2")
        b = m.group("b") or m.group("b2")
        s = m.group("s") or m.group("s2") or m.group("s3")
        if a and b and not s:
            total = _TOTAL_SCORE.match(text, m.end(), min(ctx.end, m.end() + 40))
            s = total.group("s") if total else None
        if a and b:
            add("gleason", (int(a), int(b), int(s) if s else None), m)
        elif (
            s and 6 <= int(s) <= 10 and not re.match(r"\s*/\s*5|\s*%", text[m.end() : m.end() + 4])
        ):
            add("gleason", (None, None, int(s)), m)  # a score; 1-5 alone are patterns
    for m in _GRADE_GROUP.finditer(text, ctx.start, ctx.end):
        add("grade_group", int(m.group("n") or m.group("n2")), m)
    for m in _NOTT_SCORE.finditer(text, ctx.start, ctx.end):
        add("nottingham_score", int(m.group("n") or m.group("n2")), m)
    for m in _SYSTEM_GRADE.finditer(text, ctx.start, ctx.end):
        sys_word = " ".join((m.group("sys") or "").lower().replace("-", " ").split())
        if re.search(r"grade\s+group", m.group(), re.I):
            continue
        if _RANGE.match(text, m.end(), ctx.end) or re.search(r"grades\b", m.group(), re.I):
            continue  # "grade 2-3", "G2/G3", "grades 3 & 4": a range, not one grade
        system = _SYSTEMS.get(sys_word.replace(" ", "")) or _SYSTEMS.get(sys_word)
        if system is None:
            named = _SYSTEM_BEFORE.search(
                text, max(ctx.clause(m.start()).start, m.start() - 60), m.start()
            )
            if named:  # "The NUCLEAR (BRODERS') GRADE of the tumor is: GRADE 2"
                word = named.group("sys").lower()
                system = _SYSTEMS.get(word.replace(" ", "")) or _SYSTEMS.get(word)
        if system is None:
            system = _label_system(lab) or "histologic"
        if (
            system == "gleason"
            or "pattern" in lab
            or _GLEASON_PATTERN.search(text, max(ctx.start, m.start() - 25), m.start())
        ):
            continue  # "Gleason grade 3" is a pattern, read by the Gleason rule
        if _PATTERN_AFTER.match(text, m.end(), ctx.end):
            continue  # "grade 3 pattern also present", "a grade 4 component"
        if system == "histologic" and not sys_word and _GLEASON_WORD.search(text):
            continue  # a bare "Grade 4" in a Gleason-graded report names a pattern
        denominator = m.group("d")
        if not denominator:  # "grade 3 (of 4)", "grade 3 of a 4-tier system"
            tier = re.match(
                r"\s*\(?\s*(?:of|/)\s*(?:a\s+)?(\d)\b", text[m.end() : min(ctx.end, m.end() + 16)]
            )
            denominator = tier.group(1) if tier else None
        note = f"of {_num(denominator)}" if denominator else ""
        value = _num(m.group("n"))
        split = _OCR_ROMAN_REST.match(text, m.end(), ctx.end)
        if split and m.group("n").upper() in ("I", "II"):
            value = min(4, value + len(split.group(1)))  # OCR: "grade I II" is grade III
        add(system, value, m, note)
    for m in _G_TOKEN.finditer(text, ctx.start, ctx.end):
        system = _label_system(lab) or "histologic"
        graded = (
            "grade" in lab
            or _G_CONTEXT.match(text, m.end(), ctx.end)
            # "Transitional cell carcinoma G1 pT2", "adenocarcinoma, G3": beside the type or stage
            or re.match(r"[\s,;]+p?T(?:[0-4]|is|a\b)", text[m.end() : m.end() + 8])
            or re.search(
                r"(?:carcinoma|oma)[\s,;]+$", text[max(ctx.start, m.start() - 20) : m.start()], re.I
            )
        )
        if system != "gleason" and graded and not _RANGE.match(text, m.end(), ctx.end):
            add(system, int(m.group("n")), m, "G")
    value_grade = (
        _VALUE_GRADE.match(text, ctx.value_start, ctx.end)
        if ctx.label is not None and "grade" in lab and "gleason" not in lab
        else None
    )
    if value_grade:  # "Nuclear grade (Fuhrman): 2 of 4", "Histologic grade: III"
        grade_n = value_grade.group("n").upper()
        value = int(grade_n) if grade_n.isdigit() else {"I": 1, "II": 2, "III": 3, "IV": 4}[grade_n]
        d = value_grade.group("d")
        add(_label_system(lab) or "histologic", value, value_grade, f"of {d}" if d else "")
    for m in _DIFF.finditer(text, ctx.start, ctx.end):
        if _COMPONENT_AFTER.match(text, m.end(), ctx.end):
            continue  # "with a well-differentiated liposarcoma component": a part, not the grade
        a = _DIFF_VALUE[m.group("a").lower()]
        b = _DIFF_VALUE[m.group("b").lower()] if m.group("b") else a
        add("differentiation", (min(a, b), max(a, b)), m)
    for m in _TWO_TIER.finditer(text, ctx.start, ctx.end):
        add("two_tier", m.group("v").lower(), m)
    # "a predominant grade 3 nuclear grade and scattered foci of grade 4": one statement giving
    # one system two grades grades areas of the tumour, not the tumour
    mine = [
        i
        for i, f in enumerate(ctx.facts)
        if f.slot == "grade" and f.statement == ctx.statement.index
    ]
    other_focus = _OTHER_FOCUS.search(text, ctx.start, ctx.end) is not None
    for i in mine:
        f = ctx.facts[i]
        family = _GRADE_FAMILY.get(f.key, f.key)
        if any(
            _GRADE_FAMILY.get(ctx.facts[j].key, ctx.facts[j].key) == family
            and ctx.facts[j].value != f.value
            for j in mine
        ):
            ctx.facts[i] = dataclasses.replace(f, certain=False, note=(f.note + " mixed").strip())
        elif other_focus:
            note = (f.note + " another focus").strip()
            ctx.facts[i] = dataclasses.replace(f, certain=False, note=note)


_GLEASON_PATTERN = re.compile(
    r"gleason(?:'?s)?\s*(?:primary|secondary|tertiary)?\s*$|"
    r"(?:primary|secondary|tertiary|terilary)\s+(?:gleason\s+)?$",
    re.I,
)
_GLEASON_WORD = re.compile(r"\bgleason\b", re.I)
_PATTERN_AFTER = re.compile(r"\s*(?:pattern|component|areas?)\b", re.I)
_OCR_ROMAN_REST = re.compile(r"\s(I{1,2})\b(?!\s*(?:/|-|or\b|to\b))")
#: A statement about a second tumour focus ("this tumor focus is of lower histologic grade",
#: "the non-dominant tumor foci"): its grades are the focus's, not the case's.
_OTHER_FOCUS = re.compile(
    r"\b(?:non[\s\-]?dominant|other|another|second|separate|smaller|additional)\s+"
    r"(?:\w+\s+){0,2}?(?:focus|foci|nodules?|tumou?rs?|lesions?)\b|"
    r"\btumou?r\s+(?:focus|foci)\b|\b(?:lower|higher)\s+(?:histologic\s+)?grade\b|"
    r"\b(?:at|involv\w*|positive)\s+(?:\w+\s+){0,2}margins?\b",
    re.I,
)
_GRADE_FAMILY = {"histologic": "nuclear", "fuhrman": "nuclear", "nuclear": "nuclear"}


_RANGE_BEFORE = re.compile(
    r"(?:(?:-|–|/|&|\bor\b|\bto\b|\band\b)\s*(?:G|grade\s*)?|\b(?:ranges?|ranging|between|"
    r"from|up\s+to|range\s+of|appearance\s+of|features\s+of|warrant\w*|than|underlying)\s+"
    r"(?:\w+\s+){0,3})$",
    re.I,
)


def _near_tumour(ctx: Context, m: re.Match[str]) -> bool:
    c = ctx.clause(m.start())
    window = ctx.text[max(c.start, m.start() - 80) : min(c.end, m.end() + 40)]
    return TUMOUR_MENTION.search(window) is not None


def _label_system(label: str) -> str | None:
    for word, system in _SYSTEMS.items():
        if word in label:
            return system
    if "gleason" in label:
        return "gleason"
    return None


# --- size -------------------------------------------------------------------------------------

_DIMS = re.compile(
    r"(?P<d>\d{1,3}(?: ?[.,]\d{1,2})?)(?:\s*(?:cm|mm))?(?:\s*[x×X\*]\s*\d{1,3}(?: ?[.,]\d{1,2})?"
    r"(?:\s*(?:cm|mm))?){0,2}\s*(?P<u>cm|mm|centimeters?|millimeters?|em|rnm)\b",
    re.I,
)
_SIZE_LABEL = re.compile(
    r"(?:tumou?r|lesion|mass|carcinoma|neoplasm)?\s*(?:size|dimension|greatest\s+dimension|"
    r"maximum\s+dimension|largest\s+dimension|greatest\s+diameter|maximal\s+diameter)|"
    r"(?:maximum|maximal|greatest|largest)\s+(?:tumou?r|lesion)\s+(?:diameter|dimension|size)",
    re.I,
)
_NOT_TUMOUR_SIZE = re.compile(
    r"aggregate|fragments?|pieces?|specimen|cores?|portion|segment|length|thickness|depth|"
    r"metasta\w*|nodules?|larger|largest\s+(?:nodule|focus|deposit)|additional|\bad\b|focus|foci|"
    r"distance|margin|away\s+from|from\s+the|to\s+the|weigh|ellipse|skin|cassettes?|"
    r"lymph\s+nodes?|nodes?|cyst|wall|kidney|lung|lobe|uterus|prostate|gland|bladder|ovary|"
    r"breast|pancreas|stomach|colon|liver|organ|resection|cuff|stump|ureter|vein|artery|"
    r"range|ranging|up\s+to|deposits?|foci|focus|satellite|additional|second|other|smaller|"
    r"within|extends?|extension|invasion|invades|beyond|measuring\s+up\s+to|previous|prior",
    re.I,
)
_TUMOUR_NEAR = re.compile(
    r"(?<![A-Za-z])(?:tumou?r|mass|lesion|neoplasm|carcinoma|nodule)(?![A-Za-z])", re.I
)


_SIZE_CUE = re.compile(
    r"(?:measur\w*|size\s+(?:of|is)|sized|diameter|dimension|spanning|span|\(\s*|,\s*|"
    r"tumou?r\s+of|mass\s+of|\bis|\bwas|(?:forming|forms)\s+an?\s+(?:[\w\-]+\s+)?(?:mass|nodule|"
    r"tumou?r|lesion))\s*(?:up\s+to\s+|approximately\s+|about\s+)?$",
    re.I,
)
_NOT_SIZE_NEAR = re.compile(
    r"<|>|≤|≥|less\s+than|greater\s+than|more\s+than|up\s+to|proximity|approach|close|depth|thick|length|long\b|width|wide\b|distance|from\b|away|margin|deposit|aggregate|"
    r"fragment|specimen|portion|piece|node|metasta|satellite|second|other|additional|smaller|"
    r"separate|cyst|wall|invad|invasion|extends?|extension|within|to\s+the|cuff|ink",
    re.I,
)


_NOUN_AFTER_SIZE = re.compile(
    r"\s*(?:\([^)]{0,20}\)\s*)?(?:(?!(?:with|and|of|in|from|to|or|the|a|an)\b)[\w\-]+\s+){0,2}?"
    r"(?:tumou?r|mass|carcinoma|adenocarcinoma|"
    r"neoplasm)\b(?!\s+(?:cells?|bed|free|deposit|nodules?|size|site|type|focality|extent))",
    re.I,
)


def read_size(ctx: Context) -> None:
    """The tumour's greatest dimension in cm ("size" facts): from a size field, the size given
    with the diagnosis ("adenocarcinoma (3.5 cm)", "… 5.5 cm in greatest dimension") or "the
    tumour measures …" — never from the gross description (specimens, aggregates, distances,
    second nodules), and not when a statement gives several sizes."""
    if ctx.region == "gross":
        return
    text = ctx.text
    lab = ctx.label_text
    label_size = bool(lab and _SIZE_LABEL.search(lab) and not _NOT_TUMOUR_SIZE.search(lab))
    found = []
    for m in _DIMS.finditer(text, ctx.start, ctx.end):
        c = ctx.clause(m.start())
        near = text[max(c.start, m.start() - 60) : m.start()]
        after = text[m.end() : min(c.end, m.end() + 30)]
        if _NOUN_AFTER_SIZE.match(text, m.end(), ctx.end) and not re.search(
            r"\b(?:second|another|other|additional|separate|smaller|satellite)\s+$|\b(?:two|three|\d)\s+$|"
            r"(?:than|>|<|≥|≤|up\s+to|least|exceed\w*|over|under)\s*$",
            near[-25:],
            re.I,
        ):
            found.append(m)  # "the specimen contained a 6 x 3 x 2 cm tumor invading …"
            continue
        if _NOT_SIZE_NEAR.search(near[-35:]) or re.match(
            r"\s*(?:\)\s*)?(?:from|to|away|of\s+(?:the\s+)?margin|in\s+(?:length|depth|thickness)|deep|"
            r"(?:inferior|superior|anterior|posterior|lateral|medial|distal|proximal|adjacent)\s+(?:to|from)|"
            r"or\s+(?:less|more|greater|smaller)|"
            r"thick|long|wide|(?:invasion\s+|invasive\s+|of\s+)?(?:depth|thickness))",
            after,
            re.I,
        ):
            continue
        if label_size and m.start() >= ctx.value_start:
            found.append(m)
            continue
        subject = ctx.subject(m.start())
        if subject is None:
            # "SQUAMOUS CELL CARCINOMA, MODERATELY DIFFERENTIATED (2.5 CM)": the diagnosis a
            # clause before, with only its descriptors between
            whole = subject_before(text, ctx.start, m.start())
            if whole is not None and re.fullmatch(
                r"[\s,]*(?:[\w\-]+[\s,]+){0,4}\(\s*", text[whole.end : m.start()]
            ):
                subject = whole
        if subject is None or subject.kind not in ("tumour", "lesion") or subject.other:
            continue
        if subject.kind == "tumour" and re.search(r"\bcells?$", subject.name):
            continue  # "tumour cells (0.5 cm from …)", not "squamous cell carcinoma (2.5 cm)"
        gap = text[subject.end : m.start()]
        if len(gap) > 80 or not (
            _SIZE_CUE.search(gap)
            or (not gap.strip() and re.search(r"(?:mass|nodule|tumou?r|lesion)$", subject.name))
            or re.match(
                r"\s*(?:in\s+)?(?:greatest|maximum|maximal|largest)\s+(?:dimension|diameter)",
                after,
                re.I,
            )
        ):
            continue
        found.append(m)
    if len(found) != 1:
        return  # none, or several sizes: which is the tumour's is not certain
    m = found[0]
    unit = m.group("u").lower()
    dims = [
        float(x.replace(",", ".").replace(" ", ""))
        for x in re.findall(r"\d{1,3}(?: ?[.,]\d{1,2})?", m.group())
    ]  # OCR: "3 .0 cm" is 3.0 cm
    value = max(dims) / (10.0 if unit.startswith(("m", "rn")) else 1.0)  # OCR "rnm" is "mm"
    subject = ctx.subject(m.start())
    target = Target("tumour", ctx.part)
    if subject is not None and subject.kind == "lesion" and not _is_main_type(subject.name):
        target = Target("lesion", ctx.part, subject.name)
    c = ctx.clause(m.start())
    other = _OTHER_LESION.search(text, max(c.start, m.start() - 70), min(c.end, m.end() + 50))
    if other is not None:
        # "benign Brenner tumor (1 cm)", "calcified nodule (0.5 cm) consistent with old granuloma"
        target = Target("lesion", ctx.part, other.group().lower())
    residual = re.search(
        r"\bresidual\b", text[max(ctx.start, m.start() - 80) : m.start()], re.I
    )  # "residual adenocarcinoma, 1.5 cm": what a re-excision left, not the tumour
    ctx.add(
        "size",
        "",
        round(value, 2),
        m.start(),
        m.end(),
        target=target,
        note="residual" if residual else "",
    )


#: Words that make a sized lesion another lesion than the cancer ("tiny renomedullary
#: interstitial cell tumor, 2 mm").
_OTHER_LESION = re.compile(
    r"\b(?:benign|incidental|granulomas?|adenomas?|leiomyomas?|fibromas?|polyps?|cysts?|"
    r"hamartomas?|brenner|interstitial\s+cell\s+tumou?r|calcified\s+nodule|lymph\s+node|"
    r"fibroids?|papilloma|angiomyolipoma|oncocytoma)\b",
    re.I,
)


def _is_main_type(concept: str) -> bool:
    vocab = vocabulary()
    term = vocab.diagnosis_terms.get(concept)
    return term is not None and term.attributes.get("behavior") == "malignant"
