"""Controlled report perturbations for sensitivity tests (PathGLS Table 1 style): a test helper.

It was ``pathgls/meta/perturb.py``; nothing in the package, the CLI or the benchmarks used it
(the Logic sensitivity benchmark scores hand-written edits), so it lives beside its tests.

Deliberately independent of the scorers: plain regular expressions and word tables, no
entity extractor, no NLI, so a scorer cannot be tuned to its own perturbations.

* control: ``identity`` and ``reword`` (harmless rewording of verbs and connectives);
* logic errors: ``swap_diagnosis`` (the main malignant diagnosis becomes its benign counterpart,
  which the report's own findings contradict), ``negate_key_finding`` (the invasion or nodal
  metastasis the diagnosis depends on is negated — or, when the report states it only inside the
  diagnosis, a sentence denying it is added), ``swap_grade`` (one grade statement flipped to the
  opposite end while another grade statement or grade-defining feature stays).

Each function returns the perturbed text, or None when the perturbation does not apply (a
grade swap needs two grade statements to contradict; a diagnosis swap needs a malignancy).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Perturbation = Callable[[str], "str | None"]

_REWORD = [
    (r"\bwas found\b", "was identified"),
    (r"\bwere found\b", "were identified"),
    (r"\bwas present\b", "was seen"),
    (r"\bwere present\b", "were seen"),
    (r"\bshowed\b", "demonstrated"),
    (r"\bshows\b", "demonstrates"),
    (r"\breveals\b", "shows"),
    (r"\brevealed\b", "showed"),
    (r"\bThe report describes\b", "The report documents"),
    (r"\bAdditionally,", "In addition,"),
    (r"\bhowever\b", "but"),
    (r"\bapproximately\b", "about"),
    (r"\bmeasuring\b", "that measures"),
]


def identity(text: str) -> str:
    """The report unchanged."""
    return text


def reword(text: str) -> str | None:
    """Harmless rewording (verbs and connectives only); None when nothing could be reworded."""
    out = text
    for pattern, repl in _REWORD:
        out = re.sub(pattern, repl, out)
    return out if out != text else None


# Malignant diagnosis phrases, most specific first; the organ picks the benign replacement.
_STOP = (
    r"(?!(?:the|a|an|of|with|and|in|case|for|to|as|is|was|by|on|at|from|or|this|that|which|"
    r"had|has|have|showing|shows|revealed|reveals|describes|report|patient|diagnosis|no|not|cm|mm|part)\b)"
)
_MALIGNANT = re.compile(
    rf"\b(?:{_STOP}[a-z]+[\s-]){{0,4}}(?:adeno)?carcinoma\b(?!\s+in\s+situ)"
    rf"|\b(?:{_STOP}[a-z]+[\s-]){{0,2}}"
    r"(?:[a-z]*sarcoma|melanoma|lymphoma|mesothelioma|glioblastoma)\b",
    re.IGNORECASE,
)
# The benign counterpart keeps the histotype words and swaps only the head noun — the minimal
# edit a model makes when it calls an adenocarcinoma an adenoma (first match wins).
_BENIGN_HEADS = [
    (r"adenocarcinoma", "adenoma"),
    (r"(?<=squamous cell )carcinoma|(?<=squamous )carcinoma", "papilloma"),
    (r"(?<=urothelial )carcinoma|(?<=transitional cell )carcinoma", "papilloma"),
    (r"carcinoma", "adenoma"),
    (r"liposarcoma", "lipoma"),
    (r"leiomyosarcoma", "leiomyoma"),
    (r"rhabdomyosarcoma", "rhabdomyoma"),
    (r"angiosarcoma", "hemangioma"),
    (r"carcinosarcoma", "adenofibroma"),
    (r"sarcoma", "fibroma"),
    (r"melanoma", "nevus"),
    (r"mesothelioma", "adenomatoid tumor"),
    (r"glioblastoma", "pilocytic astrocytoma"),
    (r"lymphoma", "reactive lymphoid hyperplasia"),
]
#: Words that make a diagnosis malignant or graded; they go with the swap.
_MALIGNANT_QUALIFIERS = re.compile(
    r"\b(?:invasive|infiltrating|metastatic|malignant|(?:poorly|moderately|well)[\s-]differentiated|"
    r"high[\s-]grade|low[\s-]grade|undifferentiated|dedifferentiated)\s*,?\s*",
    re.IGNORECASE,
)


_INVASION_SENTENCE = re.compile(
    r"(?:\b(?:tumou?r|carcinoma|it)\s+(?:has\s+)?(?:invades|invaded|invading|infiltrates|infiltrated)\b"
    r"|\b(?:stromal|myometrial|capsular|deep)\s+invasion\s+(?:is|was)\s+(?:present|identified|seen)\b)",
    re.IGNORECASE,
)
_NODE_POSITIVE = re.compile(
    r"(?<!\bno\s)(?<!\bnot\s)\bmetasta(?:tic|sis|ses)\b[^.;]*?\b(?:in|to)\b[^.;]*?\blymph\s+nodes?\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"\.(?=\s|$)")
_INVASIVE_DX = re.compile(r"\b(?:invasive|infiltrating)\b[^.;]{0,60}?\bcarcinoma\b", re.IGNORECASE)


def swap_diagnosis(text: str) -> str | None:
    """Turn the first malignant diagnosis into its benign counterpart (adenocarcinoma → adenoma,
    squamous cell carcinoma → squamous cell papilloma, liposarcoma → lipoma, ...)."""
    m = _MALIGNANT.search(text)
    if m is None:
        return None
    phrase = _MALIGNANT_QUALIFIERS.sub("", m.group(0))
    for pattern, benign in _BENIGN_HEADS:
        new, n = re.subn(pattern, benign, phrase, count=1, flags=re.IGNORECASE)
        if n:
            break
    if m.group(0)[:1].isupper():
        new = new[:1].upper() + new[1:]
    return text[: m.start()] + new + text[m.end() :]


def negate_key_finding(text: str) -> str | None:
    """Deny the invasion (or nodal metastasis) that the diagnosis depends on."""
    m = _INVASION_SENTENCE.search(text)
    if m is not None:
        verb = re.sub(r"(?i)\bhas\s+", "", m.group(0))
        if re.search(r"(?i)invasion\s+(is|was)\s+", verb):
            new = re.sub(r"(?i)\b(is|was)\s+(present|identified|seen)", r"\1 not \2", verb)
        else:
            subject = re.match(r"(?i)\s*(\w+)", verb).group(1)
            new = f"{subject} does not invade"
        return text[: m.start()] + new + text[m.end() :]
    m = _NODE_POSITIVE.search(text)
    if m is not None:
        return text[: m.start()] + "no metastasis in the lymph nodes" + text[m.end() :]
    dx = _INVASIVE_DX.search(text)
    if dx is not None:
        stop = _SENTENCE_END.search(text, dx.end())
        end = len(text) if stop is None else stop.start() + 1
        sep = "" if text[end - 1 : end] == "." else "."
        return text[:end] + sep + " No stromal invasion is identified." + text[end:]
    return None


# Grade statements and their opposite; the first group of each is "high".
_GRADE_SWAPS = [
    (r"\bpoorly[\s-]differentiated\b", "well differentiated"),
    (r"\bwell[\s-]differentiated\b", "poorly differentiated"),
    (r"\bhigh[\s-]grade\b", "low-grade"),
    (r"\blow[\s-]grade\b", "high-grade"),
    (r"\b(histologic(?:al)?\s+grade|nuclear\s+grade|grade)\s+(?:III|3)(\s+of\s+3)?\b", r"\1 1\2"),
    (r"\b(histologic(?:al)?\s+grade|nuclear\s+grade|grade)\s+(?:I|1)(\s+of\s+3)?\b", r"\1 3\2"),
    (r"\bG3\b", "G1"),
    (r"\bG1\b", "G3"),
    (
        r"\bGleason\s+(?:score|grade|pattern)?\s*(?:of\s+)?[45]\s*\+\s*[345](?:\s*=\s*\d+)?",
        "Gleason score 3+3=6",
    ),
]
_GRADE_FEATURES = re.compile(
    r"\b(?:marked|severe)\s+(?:nuclear\s+)?pleomorphism|\bnumerous\s+mitoses|\batypical\s+mitos|"
    r"\bsolid\s+growth|\bextensive\s+(?:areas\s+of\s+)?necrosis|\bgland\s+formation|\bbland\b",
    re.IGNORECASE,
)


def swap_grade(text: str) -> str | None:
    """Flip one grade statement when the report has another grade statement or grade feature."""
    found = [(m, repl) for pat, repl in _GRADE_SWAPS for m in re.finditer(pat, text, re.IGNORECASE)]
    if not found:
        return None
    others = len(found) - 1 + len(_GRADE_FEATURES.findall(text))
    if others < 1:
        return None  # a single grade statement flipped contradicts nothing in the report
    m, repl = max(found, key=lambda t: t[0].start())  # the last statement: usually the diagnosis
    return text[: m.start()] + m.expand(repl) + text[m.end() :]


@dataclass(frozen=True)
class PerturbationSet:
    """A named family of perturbations (control or logic_error)."""

    name: str
    perturbations: dict[str, Perturbation]


CONTROL = PerturbationSet("control", {"identity": identity, "reword": reword})
LOGIC_ERRORS = PerturbationSet(
    "logic_error",
    {
        "swap_diagnosis": swap_diagnosis,
        "negate_key_finding": negate_key_finding,
        "swap_grade": swap_grade,
    },
)


def apply_set(texts: list[str], pset: PerturbationSet) -> list[tuple[int, str, str]]:
    """Apply every perturbation of ``pset`` to every text: (text index, perturbation, result)."""
    out = []
    for i, t in enumerate(texts):
        for name, fn in pset.perturbations.items():
            r = fn(t)
            if r is not None:
                out.append((i, name, r))
    return out
