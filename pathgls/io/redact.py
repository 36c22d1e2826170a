"""Secrets out of everything pathgls shows or stores: one parser of URL credentials, one masker.

A subject spec such as ``openai:http://user:PASS@host/v1?api_key=KEY#model`` carries
credentials in the URL's userinfo and in its query string. :func:`split_credentials` is the one
place that finds them in a URL — ``ChatClient`` sends what it finds as HTTP Basic auth, and
:func:`redact` masks the same spans wherever a URL appears in a text (an error message, a log
line, a JSON document). The run directory's ScoreCards, errors log, manifest, summary, run log
and folder names, and what the CLI prints, all go through :func:`redact`.

Passwords are often written without percent-encoding. The userinfo of a URL is therefore
everything between ``scheme://`` and the **last** ``@`` before the first ``/`` or ``?`` that
follows it, so a password may hold ``@``, ``#``, ``:``, spaces and percent-escapes
(``http://u:p@ss w#rd@host/v1``). A raw ``/`` or ``?`` in a password cannot be told from the
URL's path or query: write it as ``%2F`` / ``%3F``.

A model may repeat a secret it was sent (an API key, the Basic-auth password) in its answer, or
a server may echo it in an error; :class:`Secrets` holds the known secrets of one client and
masks each of them — raw, percent-encoded, JSON-escaped and as the Basic-auth token — in any
text before it is stored or shown.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: What replaces a secret.
MASK = "***"
#: Shortest secret value masked (shorter ones would mask ordinary words).
MIN_SECRET_CHARS = 4

# Where a URL starts: scheme "://" (finding URLs in free text; the URL itself is parsed below).
_SCHEME = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://")
# Characters that end a URL written in free text (the authority may still hold spaces).
_TEXT_END = "\n\r\"'<>`"
# Query parameter names whose values are secrets.
_SECRET_NAME = re.compile(
    r"(?i)[a-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|pwd|auth|signature|sig|credential|session)"
    r"[a-z0-9_.-]*"
)
# Authorization header values that found their way into a message.
_AUTH = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{8,})")


def _authority_end(text: str, start: int, end: int) -> int:
    """Where the authority of the URL whose host part starts at ``start`` ends (``/``, ``?``)."""
    cut = end
    for ch in "/?":
        i = text.find(ch, start, end)
        if 0 <= i < cut:
            cut = i
    return cut


def userinfo_span(url: str) -> tuple[int, int] | None:
    """``(start, end)`` of the userinfo in ``url`` (``url[end]`` is its ``@``), or None."""
    m = _SCHEME.match(url)
    if m is None:
        return None
    start = m.end()
    at = url.rfind("@", start, _authority_end(url, start, len(url)))
    return (start, at) if at >= 0 else None


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``(url without its userinfo, user, password)``; user and password percent-decoded.

    The one parser of URL credentials (see the module docstring for the rule); ``user`` and
    ``password`` are None when the URL has none. Leading and trailing whitespace is dropped.
    """
    url = url.strip()
    span = userinfo_span(url)
    if span is None:
        return url, None, None
    start, at = span
    user, password = _user_password(url[start:at])
    decoded = None if password is None else urllib.parse.unquote(password)
    return url[:start] + url[at + 1 :], urllib.parse.unquote(user), decoded


def _user_password(userinfo: str) -> tuple[str, str | None]:
    """``(user, password)`` of a userinfo, as written (percent-escapes kept).

    Every character but ``:`` is escaped first (``%`` too), so ``urllib.parse`` splits at the
    first ``:`` whatever the password holds, and unescaping once gives the text as written.
    """
    parts = urllib.parse.urlsplit(f"http://{urllib.parse.quote(userinfo, safe=':')}@host")
    user = urllib.parse.unquote(parts.username or "")
    return user, None if parts.password is None else urllib.parse.unquote(parts.password)


def _mask_query(query: str) -> str:
    """``query`` (``a=1&api_key=X``) with the values of secret-looking names masked."""
    out = []
    for part in re.split(r"([&;])", query):
        name, sep, value = part.partition("=")
        if sep and value and _SECRET_NAME.fullmatch(urllib.parse.unquote_plus(name).strip()):
            part = f"{name}={MASK}"
        out.append(part)
    return "".join(out)


def _mask_url(url: str, *, free_text: bool) -> str:
    """One URL (starting with its scheme) with its userinfo and secret query values masked."""
    m = _SCHEME.match(url)
    assert m is not None
    host = m.end()
    authority_end = _authority_end(url, host, len(url))
    at = url.rfind("@", host, authority_end)
    if at >= 0:
        url = url[:host] + MASK + url[at:]
        authority_end += len(MASK) - (at - host)
    end = len(url)  # of path?query#fragment; in free text they end at whitespace
    if free_text:
        gap = re.search(r"\s", url[authority_end:])
        end = authority_end + gap.start() if gap else end
    q = url.find("?", authority_end, end)
    if q >= 0:
        fragment = url.find("#", q, end)
        stop = fragment if fragment >= 0 else end
        url = url[: q + 1] + _mask_query(url[q + 1 : stop]) + url[stop:]
    return url


def redact(text: str) -> str:
    """``text`` with URL userinfo, secret-looking query values and auth headers masked.

    Every URL in ``text`` (``scheme://...``) is masked by the rule of :func:`split_credentials`;
    in free text a URL ends at a line break or a quote, and its path and query at whitespace.
    """
    if not text:
        return text
    out: list[str] = []
    pos = 0
    for m in _SCHEME.finditer(text):
        if m.start() < pos:
            continue  # inside a URL already masked
        end = len(text)
        for ch in _TEXT_END:
            i = text.find(ch, m.end())
            if 0 <= i < end:
                end = i
        out.append(text[pos : m.start()])
        out.append(_mask_url(text[m.start() : end], free_text=True))
        pos = end
    out.append(text[pos:])
    return _AUTH.sub(_mask_auth, "".join(out))


def _mask_auth(m: re.Match[str]) -> str:
    token = m.group(3)
    # a token, not a word ("Basic cytoplasmic staining" stays): a digit, a symbol, or a
    # capital letter after the first character (base64 of "user:pass" is "dXNlcjpwYXNz")
    looks_like_token = any(c.isdigit() or c in "._~+/=-" for c in token) or any(
        c.isupper() for c in token[1:]
    )
    return f"{m.group(1)}{m.group(2)}{MASK}" if looks_like_token else m.group(0)


def url_secrets(url: str) -> list[str]:
    """The secret values a URL carries: its password and secret-looking query values.

    For masking them where a server echoes them back without their URL around them.
    """
    bare, _, password = split_credentials(url)
    found = [password] if password else []
    span = userinfo_span(url.strip())
    if span is not None:  # the password as written too (percent-escapes and all)
        written = _user_password(url.strip()[span[0] : span[1]])[1]
        found += [written] if written else []
    query = urllib.parse.urlsplit(bare.replace(" ", "%20")).query
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=False):
        if value and _SECRET_NAME.fullmatch(name):
            found.append(value)
    return sorted({v for v in found if len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True)


def holds_masked_secret(text: str) -> bool:
    """Whether ``text`` holds :data:`MASK` where :func:`redact` puts a secret: a spec read back
    from a stored (redacted) config, whose credentials were never recorded.

    A literal ``***`` elsewhere (a model name, a path) is not one.
    """
    if MASK not in text:
        return False
    probe = "pathglsMaskedSecretProbe"
    return redact(text.replace(MASK, probe)).count(probe) < text.count(MASK)


def refuse_masked_secrets(*, subjects: Iterable[str], address: str | None = None) -> None:
    """Stop a run whose subject specs (or Ray address) were read back from a stored config with
    their credentials masked: it would score another, unauthenticated, subject.

    Raises:
        ConfigError: a spec holds :data:`MASK` where a secret goes (the message says how to
            give it again).
    """
    from pathgls.errors import ConfigError

    for i, spec in enumerate(subjects):
        if holds_masked_secret(spec):
            raise ConfigError(
                f"run.subjects[{i}] {spec!r} holds a secret that a stored config never records "
                f"(masked as {MASK}): give the subject again with --subject SPEC (its URL with "
                "the credentials), or keep an API key in the environment (subject.api_key_env) "
                "and leave it out of the URL"
            )
    if address is not None and holds_masked_secret(address):
        raise ConfigError(
            f"run.address {address!r} holds a secret that a stored config never records "
            f"(masked as {MASK}): give it again with --address"
        )


def redact_data(obj: Any) -> Any:
    """:func:`redact` on every string (keys too) of a JSON-like value."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, Mapping):
        return {redact(str(k)): redact_data(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_data(v) for v in obj]
    return obj


def _forms(secret: str) -> set[str]:
    """The ways ``secret`` can be written in a text: raw, percent-encoded, JSON-escaped."""
    forms = {
        secret,
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


@dataclass(frozen=True)
class Secrets:
    """The known secrets of one client, masked in any text by :meth:`scrub`.

    Build it with :meth:`of` from the client's URL (password, secret query values, the Basic
    token) and its API key. Secrets shorter than :data:`MIN_SECRET_CHARS` are not masked.
    """

    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, *, url: str = "", keys: Iterable[str | None] = ()) -> Secrets:
        """The secrets of ``url`` and the API ``keys`` (None and empty keys skipped)."""
        found: set[str] = set()
        for secret in [*url_secrets(url), *(k for k in keys if k)]:
            found |= _forms(secret.strip())
        _, user, password = split_credentials(url)
        if user and password is not None:
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            found |= _forms(token)
        return cls(tuple(sorted(found, key=lambda s: (-len(s), s))))

    def __add__(self, other: Secrets) -> Secrets:
        merged = set(self.values) | set(other.values)
        return Secrets(tuple(sorted(merged, key=lambda s: (-len(s), s))))

    def scrub(self, text: str) -> str:
        """``text`` with every known secret (in each of its forms) replaced by :data:`MASK`."""
        for secret in self.values:  # longest first: a secret containing another goes whole
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __repr__(self) -> str:  # never show the values
        return f"Secrets({len(self.values)} values)"
