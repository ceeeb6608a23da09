"""Recording sanitizers: nothing is recorded against a local redis-server."""

from tests.compat.devtools import (  # noqa: F401
    add_general_regex_sanitizer,
    add_oauth_response_sanitizer,
    add_remove_header_sanitizer,
)
