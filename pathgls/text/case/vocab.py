"""The case model's vocabulary: what a statement can be about and which slot a phrase fills.

Regular expressions over the words pathologists write (and their OCR and all-caps variants),
with the canonical key each one gives:

* **subjects** — the thing a clause is about: the tumour, a margin (by name), a lymph-node
  group (by station), background or another tissue, a second lesion;
* **invasion kinds** — lymphovascular, lymphatic (small vessel), venous (large vessel), vascular,
  perineural: each its own key, never merged;
* **structures** — what a tumour may involve (renal sinus, perinephric fat, seminal vesicle,
  muscularis propria, visceral pleura, myometrium, …), so "invades X", "X: involved" and "X: no
  tumour" fill the same ``extent:X`` slot;
* **findings** — necrosis, microvascular proliferation, …

Diagnosis names and IHC markers come from the project's lexicon
(:mod:`pathgls.text.lexicon`); their compatibility families from ``histotypes.tsv``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from types import MappingProxyType

from pathgls.io.resources import resource
from pathgls.text.lexicon import Term, load_lexicon


def _alt(*forms: str) -> str:
    return "(?:" + "|".join(forms) + ")"


# --- invasion kinds ---------------------------------------------------------------------------

#: Invasion kind → pattern. Lymphovascular, lymphatic, venous, vascular and perineural invasion
#: are different properties (a report may state venous invasion present and lymphatic absent).
INVASION_PATTERNS: MappingProxyType[str, str] = MappingProxyType(
    {
        "lymphovascular": _alt(
            r"lympho?[\s\-/]*vascular(?:\s*(?:space|channel))?(?:\s*(?:invasion|involvement|"
            r"permeation|infiltration|emboli|spread|tumou?r\s+emboli))?",
            r"lymph[\s\-]vascular(?:\s*(?:space))?(?:\s*(?:invasion|involvement))?",
            r"ang[il1]o-?\s?lymphatic(?:\s*(?:space))?(?:\s*(?:invasion|involvement|permeation))?",
            r"lymphatic\s*/\s*vascular(?:\s*invasion)?",
            r"vascular\s*/\s*lymphatic(?:\s*invasion)?",
            r"LVSI",
            r"LVI",
            r"(?<![A-Za-z])LV\s+invasion",
        ),
        "lymphatic": _alt(
            r"lymphatic(?:\s*\(\s*small\s+vessels?\s*\))?\s*(?:vessel\s*|space\s*)?(?:invasion|"
            r"involvement|permeation|emboli|tumou?r\s+emboli)",
            r"small[\s\-]vessel(?:\s*\(\s*lymphatic\s*\))?\s*(?:invasion|involvement)",
            r"invasion\s+of\s+(?:small\s+)?lymphatic(?:s|\s+vessels|\s+channels|\s+spaces)",
            # "no lymphatic or venous invasion": the noun is shared
            r"lymphatic(?=\s*(?:,|or|and|nor|/)\s*(?:venous|vascular|blood\s+vessel|perineural)\s+"
            r"(?:invasion|involvement))",
        ),
        "venous": _alt(
            r"venous(?=\s*(?:,|or|and|nor|/)\s*(?:lymphatic|perineural)\s+(?:invasion|involvement))",
            r"venous(?:\s*\(\s*large\s+vessels?\s*\))?\s*(?:invasion|involvement|emboli|"
            r"tumou?r\s+thrombus)",
            r"large[\s\-]vessel(?:\s*\(\s*venous\s*\))?\s*(?:invasion|involvement)",
            r"vein\s+invasion",
            r"invasion\s+of\s+(?:small\s+|large\s+)?(?:non-?\s?muscularized\s+|muscularized\s+|"
            r"intramural\s+|extramural\s+)?(?:veins?|venous\s+(?:branches|channels|vessels))",
            r"intravascular\s+tumou?r\s+thrombus",
        ),
        "vascular": _alt(
            r"(?:blood\s+)?vascular(?:\s*space)?\s*(?:invasion|involvement|permeation)",
            r"vessel\s+invasion",
            r"angio-?\s?invasion",
            r"invasion\s+of\s+(?:blood\s+)?vessels",
            r"tumou?r\s+emboli",
        ),
        "perineural": _alt(
            r"peri-?\s?neural(?:\s*(?:invasion|involvement|infiltration|spread|extension))?",
            r"(?<![A-Za-z])PNI(?![A-Za-z])",
            r"(?:intra)?neural\s+invasion",
            r"nerve\s+invasion",
            r"invasion\s+of\s+nerves?",
            r"(?:tracks?|tracking|infiltrat\w*|spread\w*|grow\w*|extend\w*)\s+along\s+(?:the\s+)?"
            r"(?:nerves?|nerve\s+(?:twigs|fibers|fibres|bundles|branches|sheaths?))",
            r"(?:surround\w*|encircl\w*|wrap\w*)\s+(?:the\s+|small\s+)?nerves?",
            r"neurotropic\s+(?:spread|invasion|growth)",
        ),
    }
)

# --- structures a tumour can involve -----------------------------------------------------------

#: Structure → pattern (the key of the ``extent`` slot). Written as they are named in reports.
STRUCTURE_PATTERNS: MappingProxyType[str, str] = MappingProxyType(
    {
        "perinephric fat": r"(?:peri-?\s?nephric|peri-?\s?renal)(?:\s+(?:fat|adipose(?:\s+tissue)?|"
        r"soft\s+tissue|tissue))?|capsule\s*/\s*perinephric\s+fat",
        "renal sinus": r"(?:renal\s+)?sinus(?:\s+(?:fat|adipose(?:\s+tissue)?|soft\s+tissue))?",
        "renal vein": r"renal\s+vein",
        "renal pelvis": r"renal\s+pelvis|pelvicalyceal(?:\s+system)?|collecting\s+system",
        "adrenal gland": r"adrenal(?:\s+gland)?",
        "gerota's fascia": r"gerota'?s?\s+fascia",
        "extraprostatic tissue": r"extra-?\s?prostatic(?:\s+(?:extension|tissue|fat|soft\s+tissue|"
        r"spread))?|periprostatic(?:\s+(?:fat|tissue|soft\s+tissue))?|(?<![A-Za-z])EPE(?![A-Za-z])",
        "seminal vesicle": r"seminal\s+vesicles?",
        "bladder neck": r"bladder\s+neck",
        "muscularis propria": r"muscularis\s+propria|muscle\s+propria|detrusor(?:\s+muscle)?|"
        r"muscularis(?!\s+mucosae)",
        "lamina propria": r"lamina\s+propria|subepithelial\s+connective\s+tissue",
        "submucosa": r"sub-?\s?mucosa",
        "subserosa": r"sub-?\s?serosa(?:l\s+(?:fat|tissue))?",
        "serosal surface": r"serosal\s+surface|visceral\s+peritoneum|peritoneal\s+surface",
        "serosa": r"serosa",
        "pericolorectal tissue": r"peri-?\s?(?:colonic|colic|rectal|colorectal)(?:\s+(?:fat|adipose"
        r"(?:\s+tissue)?|soft\s+tissue|tissue))?",
        "perivesical tissue": r"peri-?\s?vesical(?:\s+(?:fat|adipose(?:\s+tissue)?|soft\s+tissue|"
        r"tissue))?",
        "visceral pleura": r"(?:visceral\s+)?pleura(?:l\s+surface)?|pleural(?=\s+invasion)",
        "chest wall": r"chest\s+wall|parietal\s+pleura",
        "main bronchus": r"main(?:stem)?\s+bronchus",
        "myometrium": r"myometri(?:um|al)",
        "cervical stroma": r"cervical\s+stroma(?:l)?|endocervical\s+stroma|cervix|endocervix",
        "parametrium": r"parametri(?:um|al\s+(?:tissue|soft\s+tissue))",
        "ovarian surface": r"ovarian\s+(?:(?:external|exterior|outer)\s+)?surface|(?:external\s+|"
        r"exterior\s+|outer\s+)?surface\s+of\s+(?:the\s+)?(?:(?:left|right)\s+)?ovary",
        "fallopian tube": r"fallopian\s+tubes?",
        "omentum": r"omentum",
        "peripancreatic tissue": r"peri-?\s?pancreatic(?:\s+(?:fat|adipose(?:\s+tissue)?|soft\s+"
        r"tissue|tissue))?",
        "duodenum": r"duodenum|duodenal\s+wall",
        "ampulla": r"ampulla(?:\s+of\s+vater)?",
        "common bile duct": r"(?:common\s+)?bile\s+duct",
        "stomach": r"stomach",
        "spleen": r"spleen",
        "liver": r"liver",
        "skin": r"skin|dermis|epidermis",
        "nipple": r"nipple",
        "dura": r"dura(?:\s+mater)?",
        "bone": r"bone",
        "urethra": r"urethra",
        "ureter": r"ureter",
        "prostatic stroma": r"prostatic\s+stroma(?:l)?|prostate",
        "vagina": r"vagina",
        "uterine serosa": r"uterine\s+serosa",
    }
)

#: Organ → structures it is confined within ("organ-confined" denies involving these).
CONFINED: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "prostate": ("extraprostatic tissue", "seminal vesicle"),
        "kidney": ("perinephric fat", "renal sinus"),
        "urinary bladder": ("perivesical tissue",),
        "uterus": ("uterine serosa", "parametrium"),
    }
)
_CONFINED_ORGAN = {
    "prostate": r"prostate|prostatic\s+gland|gland|organ",
    "kidney": r"kidney|renal\s+parenchyma",
    "urinary bladder": r"bladder(?:\s+wall)?",
    "uterus": r"uterus|uterine\s+corpus|corpus",
}

# --- other findings ------------------------------------------------------------------------------

#: Finding → pattern: present/absent properties of a tumour besides invasion and extent.
FINDING_PATTERNS: MappingProxyType[str, str] = MappingProxyType(
    {
        "necrosis": r"(?<!fat\s)(?<!fibrinoid\s)(?<!comedo\s)(?<!comedo-type\s)(?<!cell\s)"
        r"(?<!hyaline\s)(?<!infarct-type\s)(?:(?:tumou?r(?:\s+cell)?|coagulative|confluent)\s+)?"
        r"necrosis|"
        r"necrotic\s+(?:areas?|foci|tumou?r)",
        "geographic necrosis": r"(?:geographic|pseudo-?\s?palisading|palisading)\s+"
        r"(?:\w+\s+){0,2}?necrosis",
        "microvascular proliferation": r"micro-?\s?vascular(?:\s*\([^)]{0,20}\))?"
        r"(?:\s+cellular)?\s+proliferation|"
        r"endothelial\s+(?:cell\s+)?proliferation|glomeruloid\s+(?:vessels|proliferation)",
        "comedo necrosis": r"comedo(?:-type)?\s+necrosis",
        "sarcomatoid features": r"sarcomatoid(?:\s+(?:features|differentiation|component|change))?",
        "rhabdoid features": r"rhabdoid(?:\s+(?:features|differentiation|component))?",
        "calcifications": r"(?:micro)?calcifications?",
        "extranodal extension": r"extra-?\s?nodal\s+(?:extension|spread|tumou?r\s+(?:growth|"
        r"extension)|invasion)|(?<![A-Za-z])ENE(?![A-Za-z])|perinodal\s+(?:extension|spread|fat\s+"
        r"invasion)",
        "extracapsular extension": r"extra-?\s?capsular\s+(?:extension|spread|invasion|growth)",
        "tumour budding": r"tumou?r\s+budding",
        "treatment effect": r"treatment\s+effect",
    }
)

# --- subjects -----------------------------------------------------------------------------------

#: Words naming the tumour itself (not a particular type): "the tumor", "the mass".
TUMOUR_WORDS = (
    r"tumou?rs?|neoplasms?|carcinomas?|malignan(?:cy|cies)|masse?s?|lesions?|cancers?|nodules?"
)
#: A mention of a tumour: one of :data:`TUMOUR_WORDS`, a named "-oma" or a "primary" ("three
#: foci of adenocarcinoma", "a second primary").
TUMOUR_MENTION = re.compile(rf"\b(?:{TUMOUR_WORDS})\b|\b\w+omas?\b|\bprimar\w*", re.I)
#: Words that make a clause about non-tumour tissue ("background", "adjacent").
BACKGROUND_WORDS = (
    r"background|adjacent|non-?\s?neoplastic|non-?\s?tumou?rous|non-?\s?lesional|uninvolved|"
    r"surrounding|remaining|residual\s+(?:normal\s+)?(?:parenchyma|tissue)|normal|benign|"
    r"non-?\s?carcinomatous|intervening|unremarkable"
)
#: Cell populations other than the tumour cells (for IHC results).
OTHER_POPULATIONS = (
    r"lymphocytes?|b[\s\-]cells?|t[\s\-]cells?|histiocytes?|macrophages?|plasma\s+cells?|"
    r"inflammatory\s+cells?|stromal?\s+cells?|stroma|myoepithelial\s+(?:cells?|layer)|"
    r"basal\s+(?:cells?|layer)|endothelial\s+cells?|endothelium|internal\s+(?:positive\s+)?"
    r"control|(?:positive|negative|external)\s+controls?|controls?|normal\s+(?:cells|glands|"
    r"tissue|epithelium|ducts|mucosa)|benign\s+(?:glands|ducts|epithelium|tissue)|"
    r"non-?\s?neoplastic\s+(?:cells|tissue|epithelium|glands)|background|adjacent|"
    r"entrapped|residual\s+normal|germinal\s+cent(?:er|re)s?|dendritic\s+cells?|"
    r"mast\s+cells?|neutrophils|eosinophils|reactive\s+\w+|gemistocytes|astrocytes|"
    r"neurons?|axons|hepatocytes|urothelium|surface\s+epithelium|squamous\s+epithelium|"
    r"(?:tumou?ral\s+)?(?:lymphocytic|lymphoid)\s+(?:proliferation|component|infiltrate|population|cells?)"
)
#: Ordinal words that point to another lesion than "the" tumour.
_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = (
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
#: Number words a count is written in ("eighteen lymph nodes", "no tumour", "twenty");
#: "twenty-one" is a tens word and a unit (see ``read_staging._count``).
UNIT_WORDS: MappingProxyType[str, int] = MappingProxyType({w: i + 1 for i, w in enumerate(_UNITS)})
TENS_WORDS: MappingProxyType[str, int] = MappingProxyType(
    {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60}
)
NUMBER_WORDS: MappingProxyType[str, int] = MappingProxyType(
    {
        "zero": 0,
        "none": 0,
        **UNIT_WORDS,
        **{w: 10 + i for i, w in enumerate(_TEENS)},
        **TENS_WORDS,
    }
)

OTHER_LESION = (
    r"second|another|additional|separate|smaller|satellite|other|distinct|third|two|multiple|"
    r"several"
)

#: Words that say a part (or report) holds several tumours ("two nodules", "a separate
#: focus of …", "tumor #2", "multifocal").
MULTIPLE_TUMOURS = re.compile(
    r"\b(?:(?:two|three|four|five|multiple|several|separate|second|synchronous|additional|"
    r"another|satellite|smaller|other|distinct|bilateral|independent|2|3)\s+(?:[\w\-]+\s+){0,4}"
    r"(?:tumou?rs?|nodules?|masses|mass|lesions?|foci|focus|carcinomas?|neoplasms?|primar(?:y|ies)|"
    r"tumou?r\s+nodules?)|(?:separate|second|synchronous|distinct)\s+(?:[\w\-]+,?\s+){0,5}?"
    r"(?:carcinoma|tumou?r|neoplasm|mass|nodule)|multifocal|multicentric|tumou?r\s*(?:#|no\.?|number)\s*\d|"
    r"(?:nodule|lesion|mass|focus)\s*#?\s*[2-9]|collision|incidental|(?:largest|larger|smaller)\s+"
    r"(?:\w+\s+){0,2}(?:nodules?|foci|focus|tumou?rs?|lesions?|masses))\b",
    re.I,
)

_LAB = re.compile


@dataclass(frozen=True)
class Vocabulary:
    """Compiled patterns of the case model (built once per process)."""

    invasion: tuple[tuple[str, re.Pattern[str]], ...]
    structures: tuple[tuple[str, re.Pattern[str]], ...]
    findings: tuple[tuple[str, re.Pattern[str]], ...]
    confined: tuple[tuple[str, re.Pattern[str]], ...]
    diagnoses: re.Pattern[str]
    diagnosis_terms: MappingProxyType[str, Term]
    markers: re.Pattern[str]
    marker_terms: MappingProxyType[str, Term]
    histotypes: MappingProxyType[str, str]

    def diagnosis(self, form: str) -> Term | None:
        """The diagnosis term a matched surface form names."""
        return self.diagnosis_terms.get(form) or self.diagnosis_terms.get(_key(form))

    def marker(self, form: str) -> Term | None:
        """The marker term a matched surface form names."""
        return self.marker_terms.get(form) or self.marker_terms.get(_key(form))

    def family(self, concept: str) -> str | None:
        """The histotype family path of a diagnosis concept ("carcinoma/adeno/endometrioid")."""
        return self.histotypes.get(concept)


def _key(form: str) -> str:
    return " ".join(form.lower().replace("-", " ").split())


def _compile(pairs: MappingProxyType[str, str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple(
        (k, re.compile(rf"(?<![A-Za-z])(?:{p})(?![A-Za-z])", re.I)) for k, p in pairs.items()
    )


def _terms_regex(terms: list[Term]) -> tuple[re.Pattern[str], dict[str, Term]]:
    """One alternation of every surface form (longest first), and form → term."""
    table: dict[str, Term] = {}
    exact: dict[str, Term] = {}
    for t in terms:
        for f in t.forms:
            table.setdefault(_key(f), t)
        for f in t.exact_forms:
            exact.setdefault(f, t)
    forms = sorted(table, key=len, reverse=True)
    parts = [r"\s*[\-\s]\s*".join(re.escape(w) for w in f.split()) for f in forms]
    ci = "|".join(parts)
    cs = "|".join(re.escape(f) for f in sorted(exact, key=len, reverse=True))
    pattern = (
        rf"(?<![A-Za-z0-9])(?:(?i:{ci})|{cs})(?![A-Za-z0-9])"
        if cs
        else (rf"(?<![A-Za-z0-9])(?i:{ci})(?![A-Za-z0-9])")
    )
    return re.compile(pattern), {**table, **exact}


def _histotypes() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in resource("histotypes.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        concept, family = line.split("\t")[:2]
        out[concept.strip()] = family.strip()
    return out


@functools.cache
def vocabulary() -> Vocabulary:
    """The compiled vocabulary (the lexicon is read once per process)."""
    lex = load_lexicon()
    dx = [t for t in lex.terms if t.type == "pathological_diagnosis"]
    mk = [t for t in lex.terms if t.type == "ihc_marker"]
    dx_re, dx_terms = _terms_regex(dx)
    mk_re, mk_terms = _terms_regex(mk)
    confined = tuple(
        (organ, re.compile(rf"(?<![A-Za-z])(?:{p})(?![A-Za-z])", re.I))
        for organ, p in _CONFINED_ORGAN.items()
    )
    return Vocabulary(
        invasion=_compile(INVASION_PATTERNS),
        structures=_compile(STRUCTURE_PATTERNS),
        findings=_compile(FINDING_PATTERNS),
        confined=confined,
        diagnoses=dx_re,
        diagnosis_terms=MappingProxyType(dx_terms),
        markers=mk_re,
        marker_terms=MappingProxyType(mk_terms),
        histotypes=MappingProxyType(_histotypes()),
    )
