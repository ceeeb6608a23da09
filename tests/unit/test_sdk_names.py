"""Names code ported from azure-servicebus imports: the management package's shared-access-policy
model (keys never in its repr) and ``sbredis.App`` (docs/cli.md), loaded on first use."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest


def test_authorization_rule_keeps_its_fields_and_hides_its_keys() -> None:
    from sbredis.management import AccessRights, ApiVersion, AuthorizationRule

    when = datetime(2024, 5, 1, tzinfo=UTC)
    rule = AuthorizationRule(
        type="SharedAccessAuthorizationRule",
        claim_type="SharedAccessKey",
        claim_value="None",
        rights=[AccessRights.SEND, "Listen"],
        created_at_utc=when,
        modified_at_utc=when,
        key_name="app",
        primary_key="primary-secret",
        secondary_key="secondary-secret",
    )
    assert (rule.key_name, rule.primary_key, rule.secondary_key) == ("app", "primary-secret", "secondary-secret")
    assert rule.rights == ["Send", "Listen"] and rule.created_at_utc == rule.modified_at_utc == when
    assert repr(rule) == "AuthorizationRule(key_name='app', rights=[<AccessRights.SEND: 'Send'>, 'Listen'])"
    assert "secret" not in repr(rule)
    assert AuthorizationRule().rights is None
    assert ApiVersion("2021-05") is ApiVersion.V2021_05


def test_sbredis_app_is_the_workers_app_and_other_names_are_attribute_errors() -> None:
    import sbredis
    from sbredis.worker import App

    assert sbredis.App is App
    with pytest.raises(AttributeError, match="no attribute 'Apps'"):
        sbredis.Apps  # noqa: B018
