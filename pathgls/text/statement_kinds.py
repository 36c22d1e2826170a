"""What kind of statement a report line is: an assertion, or a legend, form field, history,
preliminary (frozen section) finding, general comment, recommendation, differential, hypothesis,
hedge. Only assertions enter Logic's checks (see :mod:`pathgls.text.document`).
"""

from __future__ import annotations

import re

STATEMENT_KINDS = (
    "assertion",
    "legend",
    "form",
    "not_specified",
    "history",
    "preliminary",
    "general",
    "recommendation",
    "differential",
    "hypothetical",
    "uncertain",
    "fragment",
)
#: Region kinds: the report section a statement stands in.
REGION_KINDS = {
    "history": "history",
    "preliminary": "preliminary",
    "specimen": "form",
    "admin": "form",
    "method": "general",
}


# -------------------------------------------------------------------------

_NOT_SPECIFIED = re.compile(
    r"^\W*(?:not\s+(?:specified|applicable|stated|given|reported|provided|assessed|evaluated|"
    r"assessable|evaluable|determined|submitted|sampled|indicated|available|known|"
    r"entirely\s+submitted)|n/?a|unknown|indeterminate|cannot\s+be\s+(?:assessed|determined|"
    r"evaluated|established)|can\s*not\s+be\s+(?:assessed|determined|evaluated)|"
    r"pending|see\s+(?:comment|note|below|above|text|addendum|report)|none\s+submitted|"
    r"no\s+(?:lymph\s+nodes?|nodes?|regional\s+lymph\s+nodes?)\s+(?:submitted|received|present|"
    r"found|identified|sampled)|pn?x\b|tx\b|mx\b|nx\b)",
    re.I,
)
_CATEGORY = (
    r"(?:\(?[ypr]{0,2}p?(?:T(?:is|[0-4]|X)[a-d]?|N[0-3X][a-c]?|M[01X][a-c]?)\)?|"
    r"FIGO\s+[IV]{1,3}[A-C]?\d?)"
)
LEGEND = re.compile(
    rf"^[ \t_\[\]\(\)xX✓\-]*{_CATEGORY}\s*(?:\([^)]{{0,40}}\))?\s*[:=\-–]\s*"
    r"(?:no\b|tumou?r|regional|distant|metastas|invasion|invades|carcinoma|primary|"
    r"cannot|not|more\s+than|less\s+than|greater|limited|confined|extends|involvement|organ|"
    r"extra\w+|seminal|extension|bilateral|unilateral|involves|invasion|"
    r"[<>≤≥]|\d)",
    re.I,
)
_LEGEND_INLINE = re.compile(
    rf"(?:^|[\s(:])p?{_CATEGORY}\s*(?::|\s(?=tumou?r\s*(?:invades|extends|limited|confined|"
    r"greater|more|less|involves|with|of|>|<|≤|≥)))\s*(?:single|multiple|no\b|tumou?r|regional|distant|"
    r"metastas|invasion|invades|carcinoma|primary|cannot|more\s+than|less\s+than|greater|"
    r"limited|confined|extends|involvement)",
    re.I,
)
_LEGEND_LIST = re.compile(rf"{_CATEGORY}\b.{{3,80}}?\b{_CATEGORY}\b.{{3,80}}?\b{_CATEGORY}\b", re.I)
#: "(pT4 for seminal vesicle involvement)": what would stage the tumour, not what it is.
_LEGEND_IF = re.compile(
    rf"\W*\(\s*{_CATEGORY}\s+(?:for|if|when|would|requires?)\b[^)]*\)\W*$", re.I
)
_TEMPLATE = re.compile(r"(?:_{2,}|\[\s\]|\(\s\))\s*\w+.{0,40}?(?:_{2,}|\[\s\]|\(\s\))\s*\w+")
FORM = re.compile(
    r"\b(?:discrepancy|disqualified|qualified|reviewer|initials|hipaa|date\s+reviewed|"
    r"(?:prior|prim\w*)\s+mali\w*\s+history|mali\w*ncy\s+history|dual/synchronous|synchronous\s+primary\s+noted|"
    r"case\s+is\s*\(circle\)|electronically\s+signed|signed\s+out|page\s+\d+\s+of\s+\d+|"
    r"continued\s+on\s+next\s+page|confidential|unauthorized|accession|uuid|tcga-[a-z0-9]{2}-|"
    r"redacted|printed|print\s+date|run\s+date|icd-?\s?\d|cpt|snomed|billing|fee\s+code|"
    r"blocks?\s+submitted|sections?\s+submitted|cassettes?|representative\s+sections|"
    r"submitted\s+(?:in|as)|block\s+key|summary\s+of\s+sections|provide\s+the|"
    r"quality\s+control\s+form|qc\s+form|tcga\s+case|"
    # instructions of a data-collection form: "If the histology for this case is mixed, …"
    r"documented\s+on\s+the\s+(?:initial|original)|if\s+the\s+histology|check\s+(?:all|one)\s+"
    r"that\s+appl(?:y|ies))\b",
    re.I,
)
#: A block-key line ("TM - tumor with deep margin", "TAM -tumor with anterior margin", "CS -cyst
#: and renal parenchyma"): an abbreviation for a cassette's content, not a finding.
_BLOCK_KEY = re.compile(
    r"\s*[A-Z]{2,4}\d{0,2}\s*[-–=]\s*(?:(?:representative\s+)?sections?\s+of\s+)?(?:tumou?r|"
    r"cyst|normal|unremarkable|random|renal|kidney|uninvolved|adjacent)\b"
    r"(?!.{0,60}\b(?:positive|negative|present|absent|identified|involved|free)\b)"
)
#: Words of a microscopic finding (stains, cells), and a verb that makes a line a sentence.
_MICROSCOPY = re.compile(
    r"\b(?:immuno\w*|stain(?:s|ing|ed)?|positiv\w*|reactiv\w*|nuclei|nuclear|cytoplasm|"
    r"mito\w+|pleomorph\w*|tumou?r\s+cells|neoplastic\s+cells)\b",
    re.I,
)
_SENTENCE_VERB = re.compile(
    r"\b(?:is|are|was|were|shows?|stains?|demonstrates?|reveals?|expresses?)\b", re.I
)
_HISTORY = re.compile(
    r"\b(?:history\s+of|hx\s+of|h/o|status\s+post|s/p|previously\s+(?:diagnosed|treated|resected|"
    r"excised)|prior\s+(?:diagnosis|history|resection|biopsy|excision|surgery|mastectomy|"
    r"lumpectomy|nephrectomy|treatment|chemotherapy|radiation)|previous\s+(?:diagnosis|biopsy|"
    r"resection|excision|surgery)|pre-?op(?:erative)?\s+diagnosis|clinical\s+(?:diagnosis|"
    r"impression|history)|referred\s+for|presented\s+with|presents\s+with|(?:known|recurrent)\s+"
    r"history|in\s+(?:19|20)\d\d\b|the\s+patient\s+(?:had|has|was|underwent|is)|"
    # clinical data: a serum PSA value, a clinical T category ("PSA 8.9, cT1c, Gleason 3+3")
    r"psa\s*(?:level|value|of|was|:|=)?\s*\d|c[tT][0-4][a-c]?\b)",
    re.I,
)
_GENERAL = re.compile(
    r"\b(?:patients\s+with|in\s+patients|studies\s+(?:have|show|suggest|indicate)|"
    r"has\s+been\s+(?:shown|reported|associated|described)|have\s+been\s+(?:shown|reported|"
    r"associated|described)|(?:is|are)\s+(?:associated|correlated)\s+with|(?:is|are)\s+"
    r"(?:predictive|prognostic)|predicts?\b|prognosis|this\s+(?:test|assay|method|stain)|the\s+"
    r"(?:test|assay)\s+(?:was|is|has)|has\s+not\s+been\s+cleared|fda|according\s+to|is\s+defined"
    r"\s+as|are\s+defined\s+as|literature|in\s+general|typically|usually|often|is\s+known\s+to|"
    r"are\s+known\s+to|reference\s+range|performance\s+characteristics|clia|interpreted\s+only|"
    r"sensitivity\s+of|specificity\s+of|guidelines?|sometimes|in\s+most\s+(?:cases|tumou?rs|"
    r"patients|series|instances|studies)|most\s+(?:tumou?rs|cases)|"
    r"generally|can\s+(?:retract|mimic|cause|"
    r"lead|result|be\s+seen|occur)|occasionally|protocol\s+for\s+(?:the\s+)?examination|"
    r"based\s+on\s+ajcc|ajcc/uicc|tnm,?\s+\d+(?:th|st|nd|rd)\s+edition|classification\s+should)\b",
    re.I,
)
_RECOMMENDATION = re.compile(
    r"\b(?:recommend(?:ed|s|ation)?|suggest(?:ed|s)?|consider(?:ed|ation)?|advised?|advisable|"
    r"correlat(?:e|ion)\s+with|clinical\s+correlation|follow-?\s?up|further\s+(?:evaluation|"
    r"studies|testing|work-?up|sampling)|(?:would|should|could)\s+be\s+(?:performed|considered|"
    r"obtained|helpful|useful)|to\s+be\s+followed|repeat\s+(?:biopsy|testing)|will\s+be\s+"
    r"(?:reported|issued|performed|sent))\b",
    re.I,
)
_DIFFERENTIAL = re.compile(
    r"\b(?:rule\s+out|r/o|differential(?:\s+diagnosis)?|versus|vs\.?|cannot\s+(?:be\s+)?"
    r"(?:entirely\s+|completely\s+)?(?:excluded?|ruled\s+out|rule\s+out)|can\s*not\s+(?:be\s+)?"
    r"(?:entirely\s+|completely\s+)?(?:excluded?|ruled\s+out|rule\s+out)|is\s+not\s+excluded|"
    r"not\s+(?:entirely\s+)?excluded|or\s+possibly|either\b.{1,60}\bor\b|raises?\s+the\s+"
    r"(?:possibility|question)|rais(?:ed|ing)\s+the\s+(?:possibility|question)|to\s+exclude|exclude\s+the\s+possibility|include[sd]?\s+.{1,40}\s+"
    r"and\s+.{1,40}\s+among)\b",
    re.I,
)
_HYPOTHETICAL = re.compile(
    r"(?:^|[\s,;(])(?:must\s+have|insufficient\s+to|not\s+sufficient|to\s+qualify|criteria\s+for|if|unless|in\s+the\s+event|whether|should\s+(?:the|there|this|it)|would\s+"
    r"(?:be|have|favor|favour|suggest|support|indicate|qualify)|could\s+(?:be|represent)|may\s+"
    r"(?:be|represent|indicate|reflect)|might)\b",
    re.I,
)
_PRELIMINARY = re.compile(
    r"\b(?:frozen\s+section|intra-?\s?operative(?:ly)?|touch\s+prep\w*|on\s+frozen|"
    r"at\s+the\s+time\s+of\s+(?:frozen|surgery))\b|"
    # frozen-section block codes: "FSA-FSD:", "FS1:"
    r"(?<![A-Za-z])FS[A-Z0-9](?:\s*-\s*FS[A-Z0-9])?\s*:",
    re.I,
)
#: A list of sections by block code ("1A-1B, tumour including resection margin; 1C-D, …").
_BLOCK_LIST = re.compile(
    r"(?:(?:^|[\[(;,]\s*)\d{1,2}[A-Z]{0,2}(?:\s*-\s*\d{0,2}[A-Z]{1,2})?\s*[,:]\s*[A-Za-z][^;\]]{1,120}"
    r"){3,}"
)
GROSS_SENTENCE = re.compile(
    r"\W*(?:(?:on\s+)?(?:serial\s+)?section(?:ing|ed)\b|sectioning|cut\s+(?:surface|section)|"
    r"the\s+specimen\s+(?:is|was|consists)|received\s+(?:fresh|in\s+formalin)|(?:it|specimen)\s+"
    r"consists\s+of|the\s+(?:kidney|lung|specimen|prostate|uterus|colon)\s+(?:is|was)\s+"
    r"(?:received|opened|bivalved|serially|sectioned|inked)|representative\s+sections|"
    r"on\s+opening|opening\s+the)",
    re.I,
)
_FAVOUR = re.compile(
    r"\b(?:we|i)\s+(?:favou?r|believe|suspect|think)|\bfavou?red\b|\bis\s+favou?red", re.I
)
_UNCERTAIN_START = re.compile(
    r"^\W*(?:[A-Za-z ]{0,40}:\s*)?(?:suspicious|suspect|suspected|possibl[ey]|probabl[ey]|"
    r"likely|favou?r(?:ed|s)?|suggestive|questionable|presumed|presumptive|consistent\s+with\s+"
    r"either|cannot\s+exclude|compatible\s+with\s+either|indeterminate|equivocal\s+for)\b",
    re.I,
)


def microscopy_in_block_list(text: str, a: int, b: int) -> bool:
    """A sentence of microscopic findings (stains, cells) inside a block summary or specimen
    list: OCR'd columns interleave the microscopic description with the section list."""
    s = text[a:b]
    return bool(_MICROSCOPY.search(s) and _SENTENCE_VERB.search(s))


#: An OCR'd page header glued to the end of a line ("… :Not identified.QUID:44480086-…").
_PAGE_HEADER_GLUED = re.compile(r"[.;]\s*(?:[QU]UID\s*:|TCGA-\w\w-\w{4}-\d\d\w?-PR)", re.I)


def _before_page_header(s: str) -> str:
    """A statement without the page header OCR glued to its end."""
    m = _PAGE_HEADER_GLUED.search(s)
    return s[: m.start() + 1] if m and m.start() > 0 else s


def statement_kind(
    text: str, a: int, b: int, region: str, label: str | None, vs: int
) -> tuple[str, str]:
    """The kind of statement ``text[a:b]`` and, for a non-assertion, why."""
    s = text[a:b]
    if region in REGION_KINDS:
        return REGION_KINDS[region], f"{region} section"
    if FORM.search(_before_page_header(s)):
        return "form", "form or QC field"
    if _BLOCK_KEY.match(s) or _BLOCK_LIST.search(s):
        return "form", "block key"
    if LEGEND.match(s) or _LEGEND_LIST.search(s) or _LEGEND_INLINE.search(s) or _LEGEND_IF.match(s):
        return "legend", "staging legend"
    if _TEMPLATE.search(s):
        return "legend", "template options"
    if _PRELIMINARY.search(s):
        return "preliminary", "frozen section or intraoperative"
    value = text[vs:b] if label is not None and vs >= 0 else ""
    if label is not None:
        if not value.strip():
            return "form", "label without a value"
        if _NOT_SPECIFIED.match(value):
            return "not_specified", "value not specified"
        if _HISTORY.search(label):
            return "history", "history field"
    elif _NOT_SPECIFIED.match(s):
        return "not_specified", "not specified"
    if _GENERAL.search(s):
        return "general", "general comment"
    if _RECOMMENDATION.search(s):
        return "recommendation", "recommendation"
    if _DIFFERENTIAL.search(s):
        return "differential", "differential diagnosis"
    if _HISTORY.search(s):
        return "history", "history"
    if _HYPOTHETICAL.search(value if label is not None and value.strip() else s):
        return "hypothetical", "hypothetical"  # "Histologic grade (if applicable): 1" asserts 1
    if _UNCERTAIN_START.match(value or s) or _FAVOUR.search(s):
        return "uncertain", "hedged"
    return "assertion", ""
