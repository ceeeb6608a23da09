"""Names of azure-servicebus's management package that code ported from it imports.

``ApiVersion`` is the SDK's management API version: accepted as ``api_version=`` and without
effect (sbredis has no management HTTP API). ``AccessRights`` and ``AuthorizationRule`` describe
Service Bus shared access policies, whose counterpart here is a Redis ACL user (docs/security.md).
"""

from __future__ import annotations

from enum import Enum

from .._core.auth_rules import AccessRights, AuthorizationRule


class ApiVersion(str, Enum):
    V2024_05 = "2024-05"
    V2021_05 = "2021-05"
    V2017_04 = "2017-04"


__all__ = ["AccessRights", "ApiVersion", "AuthorizationRule"]
