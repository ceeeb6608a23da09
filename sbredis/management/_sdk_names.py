"""Names of azure-servicebus's management package that code ported from it imports.

``ApiVersion`` is the SDK's management API version: accepted as ``api_version=`` and without
effect (sbredis has no management HTTP API). ``AccessRights`` and ``AuthorizationRule`` describe
Service Bus shared access policies, whose counterpart here is a Redis ACL user (docs/security.md).
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum


class ApiVersion(str, Enum):
    V2024_05 = "2024-05"
    V2021_05 = "2021-05"
    V2017_04 = "2017-04"


class AccessRights(str, Enum):
    MANAGE = "Manage"
    SEND = "Send"
    LISTEN = "Listen"


class AuthorizationRule:
    """A shared access policy as the SDK models it (key name, keys and rights)."""

    def __init__(
        self,
        *,
        type: str | None = None,
        claim_type: str | None = None,
        claim_value: str | None = None,
        rights: list[str | AccessRights] | None = None,
        created_at_utc: datetime | None = None,
        modified_at_utc: datetime | None = None,
        key_name: str | None = None,
        primary_key: str | None = None,
        secondary_key: str | None = None,
    ) -> None:
        self.type = type
        self.claim_type = claim_type
        self.claim_value = claim_value
        self.rights = rights
        self.created_at_utc = created_at_utc
        self.modified_at_utc = modified_at_utc
        self.key_name = key_name
        self.primary_key = primary_key
        self.secondary_key = secondary_key

    def __repr__(self) -> str:  # no keys in reprs
        return f"AuthorizationRule(key_name={self.key_name!r}, rights={self.rights!r})"
