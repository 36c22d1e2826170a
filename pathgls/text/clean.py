"""Cleaning a raw report into the text that every offset refers to.

:func:`clean_report` turns whatever a subject model or a data file produced (``str`` or
``bytes``, possibly HTML, Windows newlines, control characters, megabytes long, not English)
into plain text plus a list of warnings. It never raises on odd content: each problem has a
defined result and a warning. Markdown is kept as is, because the section parser reads it.
"""

from __future__ import annotations

import codecs
import html
import re
from html.parser import HTMLParser


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


#: Legacy encodings tried, in order, for bytes without a single valid UTF-8 multi-byte character.
#: latin-1 decodes any byte, so it is the last resort.
LEGACY_ENCODINGS = ("cp1252", "latin-1")

#: Tags whose presence makes a report count as HTML (``<1mm`` or ``a < b`` do not).
HTML_TAGS = _wordset(
    "a abbr b big blockquote body br caption center code col colgroup dd div dl dt em font "
    "footer h1 h2 h3 h4 h5 h6 head header hr html i img li link mark meta ol p pre s section "
    "small span strike strong style sub sup table tbody td tfoot th thead title tr tt u ul "
    "article aside main nav figure figcaption label"
)
#: Tags that end a line of text (their content starts on a new line).
_BLOCK_TAGS = _wordset(
    "address article aside blockquote body caption dd div dl dt figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr html li main nav ol p pre section table tbody tfoot thead "
    "title tr ul"
)
_CELL_TAGS = frozenset({"td", "th"})
_SKIP_TAGS = frozenset({"script", "style", "head"})
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

#: Common English function words and English-only pathology vocabulary (no Latin cognates such
#: as "carcinoma", so that a Latin or Spanish diagnosis line does not count as English).
ENGLISH_WORDS = _wordset(
    "a about above after all also an and any are as at be been below between both but by can "
    "could did do does each either few for from had has have if in into is it its may more "
    "most much no nor not of on only or other over per should some such than that the their "
    "there these this those through to under up was were what when where which while who "
    "will with within without would "
    "absence abnormal appear appears area areas associated background biopsy cell cells "
    "change changes consistent containing dermis description diagnosis evidence features "
    "final finding findings focal found grade high identified including inflammatory large "
    "left likely low lymph margin margins mild moderate negative node nodes noted observed "
    "positive present presence right seen severe shape show showing shows significant size "
    "small specimen surrounding tissue tumor tumour well"
)
#: Below this share of English words among the Latin-script words, a report is flagged.
MIN_ENGLISH_SHARE = 0.15
#: Above this share of non-Latin letters among all letters, a report is flagged.
MAX_NON_LATIN_SHARE = 0.3
#: Reports with fewer words than this are not judged (a one-word diagnosis is not a language).
MIN_WORDS_FOR_LANGUAGE = 6
#: The language is judged on the first this many characters (a report has one language).
LANGUAGE_SAMPLE_CHARS = 20_000

_CR = re.compile(r"_x000[dD]_\r?\n?|\r\n?|[\x0b\x0c\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\ufeff\u200b-\u200d\u2060\xad]")
_VALID_NON_ASCII = re.compile(r"[^\x00-\x7f\ufffd]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SPACES = re.compile(r"[\xa0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_HTML_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)\b[^<>]*>")
_TAG_LIKE = re.compile(r"<[^<>]*>")
_HTML_ENTITY = re.compile(r"&(?:[A-Za-z]{2,8}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_WORD = re.compile(r"[^\W\d_]+")
_LETTER = re.compile(r"[^\W\d_]")
_NON_LATIN_LETTER = re.compile(r"[^\W\d_\x00-\u024f\u1e00-\u1eff]")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)|[。！？]")


class _TextExtractor(HTMLParser):
    """HTML → text: block elements become line breaks, headings Markdown headings."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag == "br":
            self.parts.append("\n")
        elif tag in _HEADING_TAGS:
            self.parts.append("\n## ")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
        elif tag in _CELL_TAGS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def clean_report(raw: str | bytes, *, max_chars: int = 200_000) -> tuple[str, list[str]]:
    """Clean a raw report into plain text.

    Args:
        raw: The report as text or bytes. Bytes are decoded as UTF-8 (with or without BOM);
            UTF-8 with some invalid bytes keeps its valid characters and gets U+FFFD for the
            rest; bytes with no valid multi-byte UTF-8 character are read as cp1252, else
            latin-1; a UTF-16 byte order mark means UTF-16. Each fallback adds a warning.
        max_chars: Longer reports are cut at the last line or sentence end before this length.

    Returns:
        The cleaned text and the warnings cleaning produced (empty when there was nothing to say).
        Newlines are ``\\n``; control characters (except ``\\n`` and ``\\t``) are dropped;
        non-breaking and other Unicode spaces are plain spaces; HTML tags are removed with block
        elements kept as line breaks; Markdown is kept as is. A non-English report only gets a
        warning.

    Raises:
        TypeError: ``raw`` is neither ``str`` nor bytes-like.
        ValueError: ``max_chars`` is smaller than 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    warnings: list[str] = []
    if isinstance(raw, bytes | bytearray | memoryview):
        text = _decode(bytes(raw), warnings)
    elif isinstance(raw, str):
        text = raw
    else:
        raise TypeError(f"a report must be str or bytes, got {type(raw).__name__}")
    text = text.removeprefix("\ufeff")  # a byte order mark read as text is no finding
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
        warnings.append("unpaired surrogate characters replaced with U+FFFD")
    text = _CR.sub("\n", text)
    text = _strip_html(text, max_chars=max_chars, warnings=warnings)
    text, n_control = _CONTROL.subn("", text)
    if n_control:
        warnings.append(f"{n_control} control character(s) removed")
    text = _SPACES.sub(" ", text)
    if len(text) > max_chars:
        original = len(text)
        text = _truncate(text, max_chars)
        warnings.append(
            f"report truncated from {original:,} to {len(text):,} characters (limit {max_chars:,})"
        )
    text = text.strip()
    if not text:
        warnings.append("empty report")
        return "", warnings
    language = _language_problem(text)
    if language:
        warnings.append(f"report does not look like English ({language})")
    return text, warnings


def _decode(raw: bytes, warnings: list[str]) -> str:
    """Decode bytes, appending a warning whenever it was not plain UTF-8."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        warnings.append("report is UTF-16 (byte order mark); decoded as utf-16")
        return raw.decode("utf-16", errors="replace")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    lenient = raw.decode("utf-8-sig", errors="replace")
    if _VALID_NON_ASCII.search(lenient):
        # Valid multi-byte characters next to invalid bytes: UTF-8 with damage, not a legacy code.
        n_bad = lenient.count("\ufffd")
        warnings.append(f"invalid UTF-8 byte sequences replaced with U+FFFD ({n_bad})")
        return lenient
    for encoding in LEGACY_ENCODINGS:
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        warnings.append(f"report is not valid UTF-8; decoded as {encoding}")
        return text
    raise AssertionError("latin-1 decodes every byte")  # pragma: no cover


def _strip_html(text: str, *, max_chars: int, warnings: list[str]) -> str:
    """Remove HTML markup when there is some; unescape entities in any case."""
    if not any(m.group(1).lower() in HTML_TAGS for m in _HTML_TAG.finditer(text)):
        if _HTML_ENTITY.search(text):
            unescaped = html.unescape(text)
            if unescaped != text:
                warnings.append("HTML entities unescaped")
            return unescaped
        return text
    limit = 2 * max_chars  # markup shrinks; parse no more than can survive truncation
    if len(text) > limit:
        cut = text.rfind(">", 0, limit)
        text = text[: cut + 1 if cut > 0 else limit]
    parser = _TextExtractor()
    parser.feed(_self_contained_tags(text))
    parser.close()
    warnings.append("HTML markup removed")
    out = "".join(parser.parts)
    out = re.sub(r"[ \t]+\n", "\n", out)
    return re.sub(r"\n{3,}", "\n\n", out)


def _self_contained_tags(text: str) -> str:
    """``text`` with every tag closed and quoted within itself, so that parsing stays linear.

    ``html.parser`` rescans to the end of its buffer for an unclosed tag, quote or comment, which
    is quadratic on broken markup. Here comments are removed, a ``<`` that starts no complete
    tag becomes ``&lt;`` (the parser turns it back into ``<``), and tags with unbalanced quotes
    and declarations (``<!...>``, ``<?...>``) become a space.
    """
    parts: list[str] = []
    pos = 0
    while (i := text.find("<!--", pos)) >= 0:
        j = text.find("-->", i + 4)
        if j < 0:
            break
        parts.append(text[pos:i])
        pos = j + 3
    parts.append(text[pos:])
    text = "".join(parts)
    out: list[str] = []
    pos = 0
    for m in _TAG_LIKE.finditer(text):
        out.append(text[pos : m.start()].replace("<", "&lt;"))
        tag = m.group()
        balanced = tag.count('"') % 2 == 0 and tag.count("'") % 2 == 0
        out.append(tag if balanced and tag[1] not in "!?" else " ")
        pos = m.end()
    out.append(text[pos:].replace("<", "&lt;"))
    return "".join(out)


def _truncate(text: str, max_chars: int) -> str:
    """Cut ``text`` to at most ``max_chars`` at a line end, else a sentence end, else a space."""
    window = text[:max_chars]
    floor = max_chars // 2  # a boundary in the first half would throw away too much
    cut = window.rfind("\n", floor)
    if cut < 0:
        ends = [m.end() for m in _SENTENCE_END.finditer(window, floor)]
        cut = ends[-1] if ends else window.rfind(" ", floor)
    return window[:cut] if cut > 0 else window


def _language_problem(text: str) -> str:
    """Why ``text`` does not look like English ("" when it does or is too short to tell)."""
    text = text[:LANGUAGE_SAMPLE_CHARS]
    letters = len(_LETTER.findall(text))
    if not letters:
        return ""
    non_latin = len(_NON_LATIN_LETTER.findall(text))
    if non_latin / letters > MAX_NON_LATIN_SHARE:
        return f"{non_latin / letters:.0%} of letters are not Latin"
    words = [w.lower() for w in _WORD.findall(text) if not _NON_LATIN_LETTER.search(w)]
    if len(words) < MIN_WORDS_FOR_LANGUAGE:
        return ""
    share = sum(w in ENGLISH_WORDS for w in words) / len(words)
    if share < MIN_ENGLISH_SHARE:
        return f"only {share:.0%} of {len(words)} words are common English words"
    return ""
