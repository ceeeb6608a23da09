"""The mechanical port of azure-servicebus code to sbredis: the same rules for every file.

Only two things change: the imports (``azure.servicebus`` -> ``sbredis``) and the connection
(Azure AD credentials -> tests/compat/identity.py, which signs in as the test server's ACL user).
azure-core's own modules (``azure.core``) are used as they are.
"""

from __future__ import annotations

import re

RULES: list[tuple[str, str]] = [
    (r"\bazure\.identity\.aio\b", "tests.compat.identity"),
    (r"\bazure\.identity\b", "tests.compat.identity"),
    (r"\bazure\.servicebus\b", "sbredis"),
]


def port_source(text: str) -> str:
    for pattern, replacement in RULES:
        text = re.sub(pattern, replacement, text)
    return text
