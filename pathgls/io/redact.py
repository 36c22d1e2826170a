"""Secrets out of everything pathgls shows or stores: one function, used by every writer.

A subject spec such as ``openai:http://user:PASS@host/v1?api_key=KEY#model`` carries
credentials in the URL's userinfo and in its query string. :func:`redact` replaces both with
``***`` wherever they appear in a text (an error message, a log line, a JSON document); the run
directory's ScoreCards, errors log, manifest, summary, run log and directory names, and what the
CLI prints, all go through it.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

#: What replaces a secret.
MASK = "***"

# scheme://userinfo@ — userinfo stops at the first '/', '@', space or quote
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/@\s\"'<>]+)@")
# ?name=value / &name=value where the name looks like a secret
_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|pwd|auth|signature|sig|credential|session)"
    r"[A-Za-z0-9_.-]*"
)
_QUERY = re.compile(rf"(?i)([?&;]{_SECRET_NAME}=)([^&#\s\"'<>]*)")
# Authorization header values that found their way into a message
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")


def redact(text: str) -> str:
    """``text`` with URL userinfo, secret-looking query values and auth headers masked."""
    if not text:
        return text
    out = _USERINFO.sub(rf"\g<1>{MASK}@", text)
    out = _QUERY.sub(rf"\g<1>{MASK}", out)
    return _BEARER.sub(rf"\g<1> {MASK}", out)


def url_secrets(url: str) -> list[str]:
    """The secret values a URL carries: its password and secret-looking query values.

    For masking them where a server echoes them back without their URL around them.
    """
    parts = urllib.parse.urlsplit(url)
    found = [parts.password] if parts.password else []
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=False):
        if value and re.fullmatch(_SECRET_NAME, name, flags=re.IGNORECASE):
            found.append(value)
    found += [urllib.parse.unquote(v) for v in found]
    return sorted({v for v in found if len(v) >= 3}, key=len, reverse=True)


def redact_data(obj: Any) -> Any:
    """:func:`redact` on every string (keys too) of a JSON-like value."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, Mapping):
        return {redact(str(k)): redact_data(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_data(v) for v in obj]
    return obj
