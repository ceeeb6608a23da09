"""The mechanical port of azure-servicebus code to sbredis: the same rules for every file.

Only two things change: the imports (``azure.servicebus`` -> ``sbredis``; its private modules ->
tests/compat/sdk_internals.py) and the connection (Azure AD credentials -> tests/compat/identity.py,
Azure's test tooling and resource preparers -> tests/compat/devtools and preparers.py, which point at
the test server). azure-core's own modules (``azure.core``) are used as they are.
"""

from __future__ import annotations

import re

RULES: list[tuple[str, str]] = [
    # the SDK's private modules: tests/compat/sdk_internals.py (public names, utc_now, placeholders)
    (r"\bfrom azure\.servicebus(?:\.aio|\.management)?\._[\w.]* import", "from tests.compat.sdk_internals import"),
    # Azure's test tooling and resource preparers: tests/compat/devtools, tests/compat/preparers.py
    (r"\bdevtools_testutils\b", "tests.compat.devtools"),
    (r"\bfrom servicebus_preparer import", "from tests.compat.preparers import"),
    (r"\bazure\.identity\.aio\b", "tests.compat.identity"),
    (r"\bazure\.identity\b", "tests.compat.identity"),
    (r"\bazure\.servicebus\b", "sbredis"),
]


def port_source(text: str) -> str:
    for pattern, replacement in RULES:
        text = re.sub(pattern, replacement, text)
    return text
