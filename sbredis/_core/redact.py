"""Credentials out of text: the one helper for URLs in reprs, log lines and error messages.

``redact(url)`` masks the password of one connection string; ``redact_text(text)`` masks every
URL's password inside free text (an exception message from a library that quotes the URL it was
given). Both work on the text, not a parse, so a password with unescaped '/', '#', '?' or '@' is
hidden too, and a string that is not a URL passes through unchanged.
"""

from __future__ import annotations

import re

MASK = "***"
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^:@/]*):(.*)@")
# inside text: scheme://user:secret@ up to the last '@' before the next whitespace or quote
_USERINFO_IN_TEXT = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^:@/\s'\"]*):([^\s'\"]*)@")
# a password in a URL's query, or a key in an azure-servicebus style "Key=Value;..." connection string
_SECRET_KEYS = "password|pass|pwd|sharedaccesskey|sharedaccesssignature"
_QUERY_SECRET = re.compile(rf"(?i)((?:^|[?&;])\s*(?:{_SECRET_KEYS})=)[^&;\s'\"]*")


def redact(url: str) -> str:
    """The URL without its password (``redis://user:***@host:6379/0``)."""
    url = _USERINFO.sub(rf"\1\2:{MASK}@", url)
    return _QUERY_SECRET.sub(rf"\1{MASK}", url)


def redact_text(text: str) -> str:
    """`text` with the password of every URL in it masked (``...://user:***@...``, ``?password=***``)."""
    if "@" not in text and "=" not in text:
        return text
    text = _USERINFO_IN_TEXT.sub(rf"\1\2:{MASK}@", text)
    return _QUERY_SECRET.sub(rf"\1{MASK}", text)
