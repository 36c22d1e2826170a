"""Readers of present/absent slots: invasion kinds, extent into structures, findings, presence.

Each reader takes a statement :class:`~pathgls.text.case.context.Context` and records facts.
Overlapping matches keep the longest ("lympho-vascular invasion" is not also "vascular
invasion"); a structure is an *extent* only in an involvement context ("invades the renal sinus
fat", "Renal sinus: uninvolved", "seminal vesicle invasion"), never because it is named.
"""

from __future__ import annotations

import re

from pathgls.text.case.context import Context
from pathgls.text.case.model import Target
from pathgls.text.case.polarity import ABSENT, DENIED_BEFORE, PRESENT, UNCERTAIN
from pathgls.text.case.subjects import ClauseSubject, location_after, subjects_in
from pathgls.text.case.vocab import CONFINED, vocabulary

_INVOLVE_BEFORE = re.compile(
    r"(?:invad\w*|invasion|infiltrat\w*|extend\w*|extension|involv\w*|penetrat\w*|spread\w*|"
    r"grow\w*|perforat\w*|breach\w*|reach\w*)\s+(?:\w+\s+){0,2}?(?:in(?:to)?|of|to|through|"
    r"beyond|the)?\s*(?:the\s+|a\s+|its\s+)?(?:[\w\-]+\s+){0,3}$|(?:into|through|beyond)\s+"
    r"(?:the\s+)?(?:[\w\-]+\s+){0,2}$|"
    # "no tumor seen in the seminal vesicles", "carcinoma is present in perinephric fat"
    r"(?:tumou?r|carcinoma|malignancy|cancer|neoplasm)\s+(?:(?:is|are|was|were)\s+)?(?:(?:not\s+)?"
    r"(?:seen|identified|present|noted|found)\s+)?(?:in|within)\s+(?:the\s+|both\s+|either\s+)?"
    r"(?:[\w\-]+\s+){0,2}$",
    re.I,
)
_INVOLVE_AFTER = re.compile(
    r"^\s*(?:\([^)]{0,20}\)\s*)?(?:invasion|involvement|extension|infiltration|spread|"
    r"(?:is|are|was|were)\s+(?:not\s+|focally\s+|extensively\s+|also\s+)?(?:involved|invaded|"
    r"infiltrated|free|uninvolved)|(?:not\s+)?involved|uninvolved|invaded|infiltrated)\b",
    re.I,
)
_CONFINED = re.compile(
    r"(?:confined|limited|restricted)\s+to\s+(?:the\s+)?(?P<o>[\w\s]{2,30}?)(?=[\s,.;)]|$)|"
    r"(?P<o2>organ|prostate|kidney|bladder|uterus)[\s\-]confined|(?P<o3>intra-?prostatic)",
    re.I,
)
_FINDING_AFTER_TUMOUR = re.compile(
    r"\s*(?:(?:is|are|was|were)\s+(?:negative|positive)\s+for|extension|penetrat\w*|invading|"
    r"infiltrat\w*|spread|necrosis|emboli|thrombus|budding|deposits?|multicentricity|multifocality|cells?\s+(?:are|is)\s+(?:positive|negative)|"
    r"size|grade|type|infiltrating\s+lymphocytes|regression|bed|focality|site|location|"
    r"extension|cellularity|border|margin|volume|involvement|rupture|capsule)",
    re.I,
)
_PRESENCE = re.compile(
    r"(?<![A-Za-z])(?:(?:residual\s+|metastatic\s+|invasive\s+|viable\s+|definite\s+|"
    r"definitive\s+)?(?:tumou?rs?|neoplasms?|neoplasia|carcinomas?|malignan(?:cy|cies)|"
    r"cancers?|sarcomas?|lymphomas?|melanomas?|gliomas?|residual\s+disease|"
    r"metastas[ie]s|metastatic\s+(?:disease|tumou?r|carcinoma|neoplasm)|"
    r"malignant\s+(?:cells|neoplasm|tumou?r)|tumou?r\s+cells|neoplastic\s+cells)|"
    r"evidence\s+of\s+malignancy)(?![A-Za-z])",
    re.I,
)
_BENIGN_VALUE = re.compile(
    r"^\s*(?:benign|unremarkable|normal|within\s+normal\s+limits|negative(?!\s+for\s+\w+\s+"
    r"(?:invasion|extension))|no\s+(?:significant\s+)?(?:pathologic\w*\s+)?(?:abnormality|"
    r"change|diagnostic\s+abnormality))\b",
    re.I,
)


def _longest(matches: list[tuple[str, re.Match[str]]]) -> list[tuple[str, re.Match[str]]]:
    """Drop matches inside a longer one."""
    matches.sort(key=lambda km: (km[1].start(), -(km[1].end() - km[1].start())))
    out: list[tuple[str, re.Match[str]]] = []
    end = -1
    for k, m in matches:
        if m.start() >= end:
            out.append((k, m))
            end = m.end()
    return out


def _tumour_target(ctx: Context, pos: int, *, default: str = "tumour") -> Target:
    return ctx.target(_finding_subject(ctx, pos, pos), default)


def _finding_subject(ctx: Context, start: int, end: int) -> ClauseSubject | None:
    """What a finding at ``text[start:end]`` is about. A denied tumour word is no subject ("the
    gallbladder shows no carcinoma and no perineural invasion": the gallbladder's); a denied
    finding with no subject before it is about the place named after it ("no necrosis is
    identified in the lymph nodes")."""
    subject = ctx.subject(start)
    if (
        subject is not None
        and subject.kind == "tumour"
        and DENIED_BEFORE.search(ctx.text, max(ctx.start, subject.start - 30), subject.start)
    ):
        subject = ctx.subject(start, skip=frozenset({"tumour"}))
    if subject is None or subject.kind == "tumour":
        c = ctx.clause(start)
        after = location_after(ctx.text, end, c.end)
        if (
            after is not None
            and after.kind in ("nodes", "tissue", "margin", "population", "lesion")
            and ctx.polarity(start, end) == ABSENT
        ):
            return after
    return subject


#: Invasion said of one place ("perineural invasion of the retroperitoneal neural plexus"): a
#: finding of its own, not the tumour's invasion as a whole.
_INVASION_OF_PLACE = re.compile(
    r"\s+(?:of|in|into|at|within)\s+(?:the\s+)?(?!(?:tumou?r|carcinoma|neoplasm|lesion|nerves?|"
    r"vessels?|lymphatics?|small|large|vascular|lymphatic|blood|perineural|spaces?)\b)"
    r"(?P<w>(?:[A-Za-z][\w\-]+(?:\s+|\s*\([^)]{0,20}\)\s*)){1,3}"
    r"(?:plexus|ganglia|ganglion|fat|tissue|wall|capsule|vein|artery|bed))\b",
    re.I,
)


def read_invasion(ctx: Context) -> None:
    """Lymphovascular, lymphatic, venous, vascular and perineural invasion, each its own key."""
    vocab = vocabulary()
    found = [(k, m) for k, rx in vocab.invasion for m in rx.finditer(ctx.text, ctx.start, ctx.end)]
    for kind, m in _longest(found):
        target = _tumour_target(ctx, m.start())
        if target.kind in ("margin", "nodes", "population"):
            continue  # "perineural invasion at the margin" is a margin statement
        where = _INVASION_OF_PLACE.match(ctx.text, m.end(), ctx.end)
        if where:  # "Perineural invasion of retroperitoneal neural plexus: not identified"
            kind = f"{kind} ({' '.join(where.group('w').lower().split())})"
        if ctx.region == "gross":
            # vessels and nerves are seen under the microscope: a sentence about them under a
            # gross heading is microscopy written there ("No lymphovascular invasion is noted.")
            p = ctx.polarity(m.start(), m.end())
            if p == UNCERTAIN or ctx.bare(m.start(), m.end()):
                continue
            value = "absent" if p == ABSENT else "present"
            ctx.add("invasion", kind, value, m.start(), m.end(), target=target)
            continue
        ctx.add_polar("invasion", kind, m.start(), m.end(), target=target)


def read_findings(ctx: Context) -> None:
    """Necrosis, microvascular proliferation, extranodal extension and other findings."""
    vocab = vocabulary()
    found = [(k, m) for k, rx in vocab.findings for m in rx.finditer(ctx.text, ctx.start, ctx.end)]
    for key, m in _longest(found):
        subject = _finding_subject(ctx, m.start(), m.end())
        if key == "extracapsular extension":
            # of a lymph node it is extranodal extension; of the prostate, extraprostatic
            window = ctx.text[max(ctx.start, m.start() - 80) : min(ctx.end, m.end() + 60)]
            if (
                (subject is not None and subject.kind == "nodes")
                or ctx.topic == "nodes"
                or re.search(r"\blymph|\bnodes?\b", ctx.part_title, re.I)
            ) or re.search(
                r"nod(?:e|al)|\bN[1-3]\b|lymph|\bmeta?t?stati\w*\s+(?:focus|foci|deposit)",
                window,
                re.I,
            ):
                key, subject = "extranodal extension", None
            else:
                target = ctx.target(subject, "tumour")
                if target.kind == "tumour" and ctx.organ == "prostate":
                    ctx.add_polar(
                        "extent", "extraprostatic tissue", m.start(), m.end(), target=target
                    )
                continue
        if key == "extranodal extension":
            default = "nodes"
            if subject is not None and subject.kind not in ("nodes",):
                subject = None
        else:
            default = "tumour"
        target = ctx.target(subject, default)
        if key != "extranodal extension" and target.kind in ("margin", "nodes", "population"):
            continue
        if _QUANTITY_BEFORE.search(ctx.text, max(ctx.start, m.start() - 25), m.start()):
            continue  # "20% of tumor necrosis": an amount (of one sample), not a finding's status
        ctx.add_polar("finding", key, m.start(), m.end(), target=target)


_QUANTITY_BEFORE = re.compile(r"\d\s*(?:%|0/0|o/o)\s*(?:of\s+)?(?:the\s+)?(?:\w+\s+)?$", re.I)


#: The visceral pleural invasion categories of a lung tumour: PL0 none, PL1 beyond the
#: elastic layer, PL2 to the pleural surface (PL3, the parietal pleura, is another structure).
_PL = re.compile(r"(?<![A-Za-z0-9])PL\s?(?P<n>[0-2])(?![A-Za-z0-9])")


def _read_pleural_category(ctx: Context) -> None:
    found = list(_PL.finditer(ctx.text, ctx.start, ctx.end))
    if len({m.group("n") for m in found}) != 1 or ctx.region == "gross":
        return  # none, or a list of categories to choose from
    for m in found:
        value = "absent" if m.group("n") == "0" else "present"
        target = Target("tumour", ctx.part)
        ctx.add("extent", "visceral pleura", value, m.start(), m.end(), target=target)


def read_extent(ctx: Context) -> None:
    """Structures the tumour involves or does not ("extent" facts)."""
    _read_pleural_category(ctx)
    vocab = vocabulary()
    found = [
        (k, m) for k, rx in vocab.structures for m in rx.finditer(ctx.text, ctx.start, ctx.end)
    ]
    for key, m in _longest(found):
        c = ctx.clause(m.start())
        before = ctx.text[max(c.start, m.start() - 70) : m.start()]
        after = ctx.text[m.end() : min(c.end, m.end() + 60)]
        in_label = ctx.in_label(m.start())
        if re.match(
            r"\s*(?:\w+\s+)?(?:margins?|resection\s+lines?|lymph\s+nodes?|nodes?)\b",
            ctx.text[m.end() : m.end() + 25],
            re.I,
        ):
            continue  # "the renal vein margin" is a margin, "perivesical lymph nodes" nodes
        if in_label and ctx.topic == "margin":
            continue  # "Perirenal adipose tissue: negative" in a list of margins
        if in_label and re.search(
            r"depth|distance|percent|thickness|remaining|uninvolved|"
            r"background|non-?neoplastic|adjacent",
            ctx.label_text,
        ):
            continue  # "Depth of myometrial invasion: 0.6 cm" is a depth; "Remaining myometrium"
        trigger = _INVOLVE_BEFORE.search(before)
        if trigger and re.search(r"\bbeyond\b", trigger.group(), re.I):
            continue  # "invasion beyond the muscularis propria" is about what lies outside it
        named_after = _INVOLVE_AFTER.match(after)
        if trigger:
            start = m.start() - len(before) + trigger.start()
        elif named_after and _heading_only(ctx, m, named_after):
            continue  # "VISCERAL PLEURAL INVASION" on a line of its own: a heading or an option
        elif named_after or (in_label and _label_is_structure(ctx, m)):
            start = m.start()
        elif key in ("extraprostatic tissue",) and "exten" in m.group().lower():
            start = m.start()  # "extraprostatic extension" names its own involvement
        else:
            continue
        subject = ctx.subject(start)
        if subject is not None and subject.kind in ("margin", "nodes", "population"):
            continue
        if subject is not None and subject.kind == "tissue" and _is_structure(subject, key):
            subject = None  # "Renal sinus: involved": the structure is the label, not a subject
        target = ctx.target(subject, "tumour")
        if target.kind == "tissue" or _benign_subject(ctx.text[c.start : start]):
            continue  # "focal endosalpingiosis involving the uterine serosa": not the tumour
        if re.match(r"\s*(?:mucosa|epitheli\w+|lumen|lining|surface)\b", after, re.I):
            continue  # "no malignancy in the fallopian tube mucosa": a layer, not the extent
        pol = _extent_polarity(ctx, start, m)
        if start < m.start() and re.search(
            r"\b(?:without|no|not)\b", ctx.text[start : m.start()], re.I
        ):
            pol = ABSENT  # "involves the epithelium without cervical stromal invasion"
        if pol == ABSENT and trigger and re.search(r"\bthrough\b", trigger.group(), re.I):
            continue  # "not through the capsule": into it, but not beyond
        if re.search(
            r"\b(?:close|near|approach\w*|abut\w*|within\s+\d)", ctx.text[start : m.start()], re.I
        ) or re.search(
            r"\b(?:push\w*|bulg\w*|protrud\w*|compress\w*)\s+(?:\w+\s+){0,2}$",
            ctx.text[max(c.start, start - 30) : start],
            re.I,
        ):
            pol = UNCERTAIN  # "extends very close to", "pushes into the renal sinus": not into it
        if (
            pol == PRESENT
            and in_label
            and not trigger
            and not re.search(r"invas|involv|exten|infiltr|spread", ctx.label_text)
            and re.match(r"\s*(?:present|identified)\b", ctx.text[ctx.value_start : ctx.end], re.I)
        ):
            pol = UNCERTAIN  # "Ampulla: Present": the structure is in the specimen
        side = re.search(
            r"\b(left|right)\s+(?:[\w\-]+\s+)?$",
            ctx.text[max(c.start, m.start() - 30) : m.start()],
            re.I,
        )
        if side and key in _PAIRED_STRUCTURES:
            key = f"{key} ({side.group(1).lower()})"  # the left seminal vesicle is not the right
        ctx.add_polar("extent", key, start, m.end(), target=target, pol=pol)
    for m in _CONFINED.finditer(ctx.text, ctx.start, ctx.end):
        organ_text = (m.group("o") or m.group("o2") or m.group("o3") or "").lower()
        organ = next((o for o, rx in vocab.confined if rx.search(organ_text)), None)
        if organ is None and "prostat" in organ_text:
            organ = "prostate"
        if organ is None:
            continue
        pol = ctx.polarity(m.start(), m.end())
        if (
            pol != PRESENT
            or re.match(
                r"\s*(?:in\s+(?:all\s+)?(?:the\s+)?other|elsewhere|except|apart\s+from|largely|mostly)",
                ctx.text[m.end() : m.end() + 40],
                re.I,
            )
            or re.search(
                r"\b(?:largely|mostly|predominantly)\s+$",
                ctx.text[max(ctx.start, m.start() - 20) : m.start()],
                re.I,
            )
        ):
            continue  # "organ-confined in all other regions": not everywhere
        target = _tumour_target(ctx, m.start())
        if target.kind != "tumour":
            continue
        for structure in CONFINED[organ]:
            ctx.add(
                "extent",
                structure,
                "absent",
                m.start(),
                m.end(),
                target=target,
                certain=not ctx.gross(m.start()),
                note=f"confined to the {organ}",
            )


#: Structures that come in pairs: a side makes them another structure.
_PAIRED_STRUCTURES = frozenset(
    {"seminal vesicle", "fallopian tube", "adrenal gland", "ureter", "ovarian surface"}
)


def _heading_only(ctx: Context, m: re.Match[str], named: re.Match[str]) -> bool:
    """A statement that is only a structure and its involvement word, with no value."""
    if ctx.label is not None:
        return False
    head = ctx.text[ctx.start : m.start()].strip(" .,;:-*•\n\t")
    tail = ctx.text[m.end() + named.end() : ctx.end].strip(" .,;:-*•\n\t")
    return not tail and len(head.split()) <= 2 and not re.search(r"\d|\b(?:no|not)\b", head, re.I)


def _label_is_structure(ctx: Context, m: re.Match[str]) -> bool:
    """A checklist line whose label names the structure ("Capsule/perinephric fat: Uninvolved")."""
    value = ctx.text[ctx.value_start : ctx.end].strip().lower() if ctx.value_start >= 0 else ""
    return bool(
        re.match(
            r"(?:not\s+)?(?:involved|uninvolved|present|absent|identified|not\s+identified|"
            r"negative|positive|free|invaded|yes|no)\b",
            value,
        )
    )


def _is_structure(subject: ClauseSubject, key: str) -> bool:
    return any(w in key for w in subject.name.split()) or subject.name in key


def _extent_polarity(ctx: Context, start: int, m: re.Match[str]) -> str:
    pol = ctx.polarity(start, m.end())
    if pol == PRESENT:
        # "does not invade X", "not involving X": a denial right before the verb
        c = ctx.clause(start)
        pre = ctx.text[max(c.start, start - 45) : start].lower()
        if re.search(
            r"\b(?:not|no|without|nor)\s+(?:[\w\-]+\s+){0,2}$|\b(?:not|no|without|nor)\s*$", pre
        ) or re.search(r"\b(?:does|do|did)\s+not\s*$", pre):
            return ABSENT
        if re.search(r"\b(?:approach\w*|abut\w*|close\s+to|near)\s+(?:\w+\s+){0,2}$", pre):
            return UNCERTAIN
    return pol


def _benign_subject(before: str) -> bool:
    """Whether the words before an involvement name only benign lesions as its subject."""
    vocab = vocabulary()
    terms = [vocab.diagnosis(d.group()) for d in vocab.diagnoses.finditer(before)]
    behaviours = {t.attributes.get("behavior") for t in terms if t} - {None}
    return bool(behaviours) and all(str(b).startswith("benign") for b in behaviours)


def _precursor(concept: str) -> bool:
    """An in-situ or premalignant lesion ("ductal carcinoma in situ", "dysplasia")."""
    from pathgls.text.case.vocab import vocabulary

    term = vocabulary().diagnosis_terms.get(concept)
    return term is not None and term.attributes.get("behavior") in ("in_situ", "premalignant")


def _part_level(ctx: Context) -> bool:
    """Whether a subjectless statement speaks for its whole part: a diagnosis line under a part
    label, or any assertion of a report without parts."""
    if ctx.part is not None:
        return ctx.region == "diagnosis"
    return not _has_parts(ctx) and ctx.region in (
        "diagnosis",
        "comment",
        "synoptic",
        "other",
        "microscopic",
    )


#: A line naming one tissue of the specimen, under which its findings follow.
_TISSUE_HEADING = re.compile(
    r"(?:(?:LEFT|RIGHT|BILATERAL)\s+(?:(?:AND|&)\s+(?:LEFT|RIGHT)\s+)?)?(?:CERVIX|MYOMETRIUM|SEROSA|ENDOMETRIUM|OVAR(?:Y|IES)|"
    r"(?:FALLOPIAN\s+)?TUBES?|PARAMETRIA|PARAMETRIUM|OMENTUM|ADNEXA|LYMPH\s+NODES?|MARGINS?|"
    r"LOWER\s+UTERINE\s+SEGMENT|VAGINAL\s+CUFF|URETERS?|URETHRA|SEMINAL\s+VESICLES?|PLEURA|"
    r"ADRENAL(?:\s+GLAND)?|BACKGROUND|UNINVOLVED\s+\w+|NON-?NEOPLASTIC\s+\w+)",
    re.I,
)
_PART_LINE = re.compile(r"[ \t]*(?:part\s+|specimen\s+)?(?:[A-Z]|\d{1,2})\s?[.):]", re.I)
_OTHER_PARTS_LINE = re.compile(
    r"[ \t]*(?:[A-Z]|\d{1,2})(?:\s*(?:,|&|and|-|to)\s*(?:[A-Z]|\d{1,2}))+\s?[.):]", re.I
)
_WHOLE_DENIAL = re.compile(
    r"\W*(?:(?:there\s+is\s+)?no\s+(?:evidence\s+of\s+)?(?:residual\s+)?(?:tumou?r|malignancy|"
    r"carcinoma|neoplasm|sarcoma|lymphoma|malignant\s+neoplasm|cancer)|negative\s+for\s+"
    r"(?:tumou?r|malignancy|carcinoma|neoplasm|malignant\s+cells|dysplasia\s+or\s+malignancy)|"
    r"benign\b[^.;]{0,60})\s*(?:is\s+|are\s+)?(?:identified|seen|present|noted|found)?\W*$",
    re.I,
)


def _whole_part_denial(ctx: Context, m: re.Match[str]) -> bool:
    """A denial that speaks for a whole part or report: the whole statement says no tumour
    ("A. Kidney: no tumor identified."), or the denial names the part ("in part B")."""
    if not _part_level(ctx):
        return False
    body = ctx.value_start if ctx.label is not None and ctx.value_start >= 0 else ctx.start
    if (
        ctx.label is not None
        and not _is_part_title(ctx)
        and not re.search(r"diagnos|impression|interpretation|result|findings?\b", ctx.label_text)
    ):
        return False  # "Bronchial margin: no carcinoma", "Fallopian tubes: negative": its label
    before = ctx.text[max(0, ctx.start - 120) : ctx.start].rstrip().split("\n")[-2:]
    if any(_TISSUE_HEADING.fullmatch(line.strip(" :-\"'")) for line in before):
        return False  # "CERVIX" / "CHRONIC CERVICITIS" / "NO TUMOR IDENTIFIED": the cervix's
    last = before[-1].strip() if before and ctx.label is None else ""
    if last.endswith(":") and not _PART_LINE.match(last) and len(last) <= 60:
        return False  # '"POSTERIOR VAGINAL CUFF":' / 'NEGATIVE FOR CARCINOMA.': the cuff's
    if _OTHER_PARTS_LINE.match(last):
        return False  # "B,C,D. Lymph nodes, level 7" / "- Negative for malignancy.": theirs
    return _WHOLE_DENIAL.fullmatch(ctx.text, body, ctx.end) is not None


def _is_part_title(ctx: Context) -> bool:
    """Whether the statement's label is its part's title ("B. Lymph nodes, left: …")."""
    return ctx.part is not None and ctx.label_text.strip(" .:") in ctx.part_title.lower()


def _has_parts(ctx: Context) -> bool:
    return ctx.has_parts


_NONINVASIVE = re.compile(
    r"(?<![A-Za-z])(?:non-?\s?invasive|non-?\s?infiltrating|no\s+(?:evidence\s+of\s+)?(?:definite\s+)?"
    r"(?:stromal\s+|submucosal\s+)?invasion(?!\s+(?:by\s+(?:the\s+)?(?:tumou?r|carcinoma|neoplasm)\s+)?(?:of|into|through|to|beyond)\b)|without\s+(?:any\s+)?"
    r"(?:evidence\s+of\s+)?(?:stromal\s+|submucosal\s+)?invasion(?!\s+(?:by\s+(?:the\s+)?(?:tumou?r|carcinoma|neoplasm)\s+)?(?:of|into|through|to|beyond)\b)|"
    r"(?:entirely|purely|exclusively)\s+(?:in[\s\-]situ|intraepithelial|intraductal|non-?invasive)|"
    r"in[\s\-]situ\s+only|only\s+in[\s\-]situ|(?:DCIS|CIS|LCIS|AIS|carcinoma\s+in\s+situ|"
    r"in[\s\-]situ\s+carcinoma)\s+only|confined\s+to\s+the\s+(?:mucosa|epithelium|urothelium|"
    r"ducts?|basement\s+membrane|surface\s+epithelium)|(?:does|do|did)\s+not\s+invade(?!\s+(?:the\s+)?"
    r"[a-z]))",
    re.I,
)
_TYPE_AFTER = re.compile(
    r"\s*(?:[\w\-]+\s+){0,3}?(?:carcinoma|neoplasm|tumou?r|lesion|component|papilloma|"
    r"adenocarcinoma|growth)",
    re.I,
)
_INVASIVE_WORD = re.compile(
    r"(?<![A-Za-z\-])(?:invasive\s+(?:tumou?r|carcinoma|component|growth|cancer|focus|foci|"
    r"adenocarcinoma|disease)|(?:tumou?r|carcinoma)\s+(?:invades|infiltrates)|"
    r"destructive(?:,)?\s+infiltrative|infiltrative\s+growth|stromal\s+invasion|"
    r"frankly\s+invasive|(?:full[\s\-]+thickness|transmural)\s+invasion|invasion\s+(?:of|into|"
    r"through)\s+(?:the\s+)?(?:\w+\s+){0,3}(?:wall|muscularis|stroma|submucosa|lamina\s+propria))"
    r"(?![A-Za-z])",
    re.I,
)
_BENIGN_PREDICATE = re.compile(
    r"\b(?:is|are|was|were|appears?|represents?)\s+(?:entirely\s+|completely\s+|purely\s+)?"
    r"(?:benign|non-?neoplastic|reactive)\b(?!\s+(?:for|with|to|against)\b)",
    re.I,
)


def read_behaviour(ctx: Context) -> None:
    """Invasion of the tumour as a whole: "non-invasive", "no invasion", "in situ only" (absent)
    against "invasive component", "tumor invades" (present); "the tumour is benign"."""
    text = ctx.text
    for m in _NONINVASIVE.finditer(text, ctx.start, ctx.end):
        if ctx.polarity(m.start(), m.start() + 1) == "uncertain":
            continue
        if re.match(r"non", m.group(), re.I) and _TYPE_AFTER.match(text, m.end(), ctx.end):
            continue  # "non-invasive papillary carcinoma": a lesion's name, not a claim
        subject = ctx.subject(m.start())
        if subject is not None and subject.kind in ("margin", "nodes", "population", "tissue"):
            continue
        if subject is not None and subject.kind == "lesion" and _precursor(subject.name):
            continue  # "the DCIS component is non-invasive": of the in-situ lesion, not the tumour
        if subject is None and not _part_level(ctx):
            continue
        target = ctx.target(subject, "tumour")
        if target.kind == "part":
            target = Target("tumour", target.part)
        ctx.add(
            "behaviour",
            "invasive",
            "absent",
            m.start(),
            m.end(),
            target=target,
            certain=not ctx.gross(m.start()),
        )
    for m in _INVASIVE_WORD.finditer(text, ctx.start, ctx.end):
        if ctx.polarity(m.start(), m.end()) != PRESENT:
            continue
        subject = ctx.subject(m.start())
        if (
            subject is not None
            and subject.kind == "tissue"
            and re.match(r"(?:full|transmural|invasion\s+(?:of|into|through))", m.group(), re.I)
        ):
            subject = None  # "the bladder shows full-thickness invasion of its wall by carcinoma"
        if subject is not None and subject.kind in ("margin", "nodes", "population", "tissue"):
            continue
        target = ctx.target(subject, "tumour")
        if target.kind == "part":
            target = Target("tumour", target.part)
        ctx.add(
            "behaviour",
            "invasive",
            "present",
            m.start(),
            m.end(),
            target=target,
            certain=not ctx.gross(m.start()),
        )
    for m in _BENIGN_PREDICATE.finditer(text, ctx.start, ctx.end):
        subject = ctx.subject(m.start())
        if subject is None or subject.kind != "tumour" or subject.other or "cell" in subject.name:
            continue
        if re.search(
            r"\b(?:both|two|three|several|multiple|these|those|other|separate|smaller|additional)\b",
            ctx.text[ctx.clause(m.start()).start : m.start()],
            re.I,
        ):
            continue  # "both 0.5 cm nodules are benign": other lesions than the tumour
        if ctx.polarity(m.end() - 1, m.end()) != PRESENT:
            continue
        ctx.add(
            "behaviour",
            "",
            "benign",
            m.start(),
            m.end(),
            target=Target("tumour", ctx.part),
            certain=not ctx.gross(m.start()),
        )


#: Words before a denial that name what it is about ("Portion of X, no tumor"), when
#: pathgls does not know the thing named.
_NAMED_BEFORE = re.compile(
    r"[A-Za-z]{3,}[^.;:]*?(?:,|\bwith|\bshows?|\bshowing|\bhas|\bhave|:)\s*(?:[\w\-]+\s+){0,2}"
    r"(?:no|without|negative\s+for|free\s+of)\s+(?:\w+\s+){0,3}$",
    re.I,
)


def read_presence(ctx: Context) -> None:
    """Tumour denied in a target ("Adrenal gland, no tumor present", "Margins free of tumor").

    The target is the subject before the denial, else the place named after it ("no carcinoma
    in eight lymph nodes"), else — for a statement under a part label — the part itself; a
    denial with no target outside any part is ambiguous and dropped.
    """
    for m in _PRESENCE.finditer(ctx.text, ctx.start, ctx.end):
        if _FINDING_AFTER_TUMOUR.match(ctx.text, m.end(), ctx.end):
            continue
        if ctx.in_label(m.start()):
            continue  # "Tumor Multicentricity:", "Margins for tumor:": a label names a field
        pol = ctx.polarity(m.start(), m.end())
        if pol != ABSENT:
            continue
        subject = ctx.subject(m.start(), skip=frozenset({"tumour"}))
        margin_before = [
            s
            for s in subjects_in(ctx.text, ctx.clause(m.start()).start, m.start())
            if s.kind == "margin"
        ]
        if margin_before and (subject is None or subject.kind != "margin"):
            subject = margin_before[0]  # "margins including soft tissue and bone are free of tumor"
        if subject is None:
            subject = location_after(ctx.text, m.end(), ctx.clause(m.start()).end)
        if subject is None and ctx.unknown_label:
            continue  # "Urethral: free of neoplasm": about what the checklist names, not the part
        if subject is None and _NAMED_BEFORE.search(
            ctx.text,
            ctx.label[1] if ctx.prose_label and ctx.label else ctx.clause(m.start()).start,
            m.start(),
        ):
            continue  # "Segments of vasa deferentia, no tumor present": about what it names
        residual = "residual" in m.group().lower()
        invasive = "invasive" in m.group().lower()
        if (
            invasive
            and subject is not None
            and subject.kind == "lesion"
            and _precursor(subject.name)
            and not re.search(
                r"\b(?:without|with\s+no|lacking)\s+(?:\w+\s+){0,2}$",
                ctx.text[max(ctx.start, m.start() - 30) : m.start()],
                re.I,
            )
        ):
            subject = None  # "DCIS, no invasive carcinoma identified": a claim about the specimen
        if (
            invasive
            and subject is None
            and re.fullmatch(
                r"[\W\s]*(?:uninvolved|not\s+involved|free|clear)\s+(?:by|of|from)\s+",
                ctx.text[ctx.clause(m.start()).start : m.start()],
                re.I,
            )
        ):
            continue  # "Uninvolved by invasive carcinoma": of a margin or structure left unnamed
        if invasive and (subject is None or subject.kind in ("tumour", "part")):
            tgt = (
                ctx.target(subject, "tumour") if subject is not None else Target("tumour", ctx.part)
            )
            ctx.add(
                "behaviour",
                "invasive",
                "absent",
                m.start(),
                m.end(),
                target=Target("tumour", tgt.part),
                certain=not ctx.gross(m.start()),
            )
            continue
        if subject is None or (subject.kind == "tumour" and not subject.other):
            if not _whole_part_denial(ctx, m):
                continue
            target = Target("part", ctx.part)
        else:
            target = ctx.target(subject, "part")
        note = "residual" if residual else "invasive" if invasive else ""
        certain = not ctx.gross(m.start())
        ctx.add(
            "presence", "", "absent", m.start(), m.end(), target=target, certain=certain, note=note
        )
    if ctx.label is not None and ctx.value_start >= 0:
        value = ctx.text[ctx.value_start : ctx.end]
        if _BENIGN_VALUE.match(value):
            subject = ctx.subject(ctx.value_start)
            if subject is not None and subject.kind in ("tissue", "background", "nodes", "margin"):
                ctx.add(
                    "presence",
                    "",
                    "absent",
                    ctx.value_start,
                    ctx.end,
                    target=ctx.target(subject, "part"),
                    note="benign",
                )
