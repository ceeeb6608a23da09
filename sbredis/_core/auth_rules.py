"""Shared access policies as the SDK models them (``authorization_rules`` of queues and topics).

Service Bus enforces them; here access is a Redis ACL user (docs/security.md), so the rules are
kept with the entity and returned as given, never enforced. Stored in the registry record as plain
JSON (datetimes as ISO 8601 text)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from ..exceptions import InvalidArgumentError

MAX_RULES = 12  # Service Bus allows at most 12 shared access policies per entity


class AccessRights(str, Enum):
    MANAGE = "Manage"
    SEND = "Send"
    LISTEN = "Listen"


_FIELDS = (
    "type",
    "claim_type",
    "claim_value",
    "rights",
    "created_at_utc",
    "modified_at_utc",
    "key_name",
    "primary_key",
    "secondary_key",
)
_TEXT = ("type", "claim_type", "claim_value", "key_name", "primary_key", "secondary_key")


class AuthorizationRule:
    """A shared access policy as the SDK models it (key name, keys and rights); readable as a
    mapping of its fields, as the SDK's models are."""

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

    def keys(self) -> list[str]:
        return list(_FIELDS)

    def __getitem__(self, key: str) -> Any:
        if key not in _FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AuthorizationRule):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the SDK's

    def __repr__(self) -> str:  # no keys in reprs
        return f"AuthorizationRule(key_name={self.key_name!r}, rights={self.rights!r})"


def check_rules(value: Any) -> list[AuthorizationRule]:
    """authorization_rules: a list of AuthorizationRule (or mappings of its fields), checked so that
    the registry can store them.

    Raises:
        InvalidArgumentError: not such a list, too many rules, or a field of the wrong type.
    """
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        what = type(value).__name__
        raise InvalidArgumentError(f"authorization_rules must be a list of AuthorizationRule, not {what}")
    if len(value) > MAX_RULES:
        raise InvalidArgumentError(f"authorization_rules holds at most {MAX_RULES} rules")
    rules = []
    for item in value:
        if isinstance(item, Mapping) and not isinstance(item, AuthorizationRule):
            unknown = sorted(set(item) - set(_FIELDS))
            if unknown:
                raise InvalidArgumentError(f"unknown AuthorizationRule fields: {unknown}")
            item = AuthorizationRule(**item)
        if not isinstance(item, AuthorizationRule):
            raise InvalidArgumentError(f"authorization_rules takes AuthorizationRule items, not {type(item).__name__}")
        for f in _TEXT:
            v = getattr(item, f)
            if v is not None and not isinstance(v, str):
                raise InvalidArgumentError(f"AuthorizationRule.{f} must be a str, not {type(v).__name__}")
        for f in ("created_at_utc", "modified_at_utc"):
            v = getattr(item, f)
            if v is not None and not isinstance(v, datetime):
                raise InvalidArgumentError(f"AuthorizationRule.{f} must be a datetime, not {type(v).__name__}")
        rights = item.rights
        if rights is not None:
            if not isinstance(rights, (list, tuple)):
                raise InvalidArgumentError("AuthorizationRule.rights must be a list of AccessRights")
            try:
                [AccessRights(r) for r in rights]
            except ValueError:
                raise InvalidArgumentError(
                    f"AuthorizationRule.rights takes {[r.value for r in AccessRights]}, not {list(rights)!r}"
                ) from None
        rules.append(item)
    return rules


def rules_to_json(rules: list[Any]) -> list[dict[str, Any]]:
    """The registry's form of checked rules."""
    out = []
    for rule in rules:
        raw: dict[str, Any] = {}
        for f in _FIELDS:
            v = getattr(rule, f)
            if isinstance(v, datetime):
                v = v.isoformat()
            elif f == "rights" and v is not None:
                v = [AccessRights(r).value for r in v]
            raw[f] = v
        out.append(raw)
    return out


def rules_from_json(raw: Any) -> list[AuthorizationRule]:
    """Rules from the registry's form (records written before rules were stored hold [])."""
    rules = []
    for item in raw or ():
        kwargs = {f: item.get(f) for f in _FIELDS}
        for f in ("created_at_utc", "modified_at_utc"):
            if kwargs[f]:
                kwargs[f] = datetime.fromisoformat(kwargs[f])
        if kwargs["rights"] is not None:
            kwargs["rights"] = [AccessRights(r) for r in kwargs["rights"]]
        rules.append(AuthorizationRule(**kwargs))
    return rules
