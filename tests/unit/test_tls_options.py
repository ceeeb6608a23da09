"""TLS connection options: sbredis checks the server's host name on rediss:// URLs by default,
whatever redis-py's own default (off before redis-py 6). No connection is made here."""

from __future__ import annotations

from typing import Any

import pytest

from sbredis import ServiceBusClient


def _kwargs(url: str, **options: Any) -> dict[str, Any]:
    client = ServiceBusClient.from_connection_string(url, **options)
    try:
        transport = client._transport
        pool = transport.redis.connection_pool
        return dict(pool.connection_kwargs)
    finally:
        client.close()


@pytest.mark.parametrize("url", ["rediss://127.0.0.1:1/0", "rediss+cluster://127.0.0.1:1"])
def test_host_name_checks_are_on_by_default(url: str) -> None:
    assert _kwargs(url)["ssl_check_hostname"] is True


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"ssl_check_hostname": False}, False),  # the caller's choice wins
        ({"ssl_cert_reqs": "none"}, False),  # no certificate check: no host name check either
        ({"ssl_cert_reqs": "required"}, True),
    ],
)
def test_host_name_checks_follow_the_callers_options(options: dict[str, Any], expected: bool) -> None:
    assert _kwargs("rediss://127.0.0.1:1/0", **options)["ssl_check_hostname"] is expected


def test_plain_urls_get_no_tls_options() -> None:
    assert "ssl_check_hostname" not in _kwargs("redis://127.0.0.1:1/0")
