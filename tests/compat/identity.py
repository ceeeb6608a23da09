"""Stand-ins for azure-identity's credentials in the ported samples and tests (the connection).

Service Bus authenticates an Azure AD token; sbredis authenticates a Redis ACL user. These
credentials carry the test server's ACL user and password ($SBREDIS_COMPAT_USER,
$SBREDIS_COMPAT_PASSWORD) in the shape of azure-core's AzureNamedKeyCredential (``.named_key``),
the credential sbredis maps onto Redis AUTH.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple


class _NamedKey(NamedTuple):
    name: str
    key: str


class DefaultAzureCredential:
    def __init__(self, **_: Any) -> None:
        self.named_key = _NamedKey(
            os.environ.get("SBREDIS_COMPAT_USER", ""), os.environ.get("SBREDIS_COMPAT_PASSWORD", "")
        )

    def close(self) -> None:
        pass

    def __enter__(self) -> DefaultAzureCredential:
        return self

    def __exit__(self, *_: Any) -> None:
        pass

    async def __aenter__(self) -> DefaultAzureCredential:
        return self

    async def __aexit__(self, *_: Any) -> None:
        pass


EnvironmentCredential = DefaultAzureCredential
