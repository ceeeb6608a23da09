"""The azure-servicebus client keywords that have no Redis counterpart, or another name here.

Every keyword the SDK documents for ``ServiceBusClient`` and ``ServiceBusAdministrationClient`` is
accepted, so code ported from it runs unchanged; an unknown keyword is still refused (redis-py
names it). What each one does here:

=========================== =========================================================================
``try_timeout``             bounds one attempt: the socket timeout of each Redis call
``connection_verify``       the CA bundle for TLS: ``ssl_ca_certs`` (no meaning without TLS)
``logging_enable``          accepted; sbredis logs through the ``sbredis`` logger (set its level)
``transport_type``          accepted, no meaning: Redis has one protocol (no AMQP over websockets)
``http_proxy``              accepted, no meaning: Redis connections do not go through HTTP proxies
``custom_endpoint_address`` accepted, no meaning: the connection string names the Redis endpoint
``uamqp_transport``         accepted, no meaning: there is no AMQP library underneath
``user_agent``              accepted, no meaning: Redis has no user agent
``ssl_context``             accepted, no meaning: TLS is configured with ``ssl_ca_certs``,
                            ``ssl_certfile`` and ``ssl_keyfile``
``api_version``             (administration client) accepted, no meaning
``socket_timeout``,         (senders and receivers) accepted, no meaning: each Redis call is
``client_identifier``       bounded by the client's ``socket_timeout``
=========================== =========================================================================
"""

from __future__ import annotations

from typing import Any

NO_OP = frozenset(
    {
        "logging_enable",
        "transport_type",
        "http_proxy",
        "custom_endpoint_address",
        "uamqp_transport",
        "user_agent",
        "ssl_context",
        "api_version",
    }
)
# get_*_sender / get_*_receiver keywords of the SDK: per-link AMQP settings, no meaning here
# (each Redis call is bounded by the client's socket_timeout)
HANDLER_NO_OP = frozenset({"socket_timeout", "client_identifier", "logging_enable"})
RENAMED = {"try_timeout": "socket_timeout", "connection_verify": "ssl_ca_certs"}


def client_options(options: dict[str, Any], tls: bool) -> dict[str, Any]:
    """`options` without the SDK's no-op keywords and with the renamed ones under their Redis names."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key in NO_OP or (key == "connection_verify" and not tls):
            continue
        name = RENAMED.get(key, key)
        if name == key or name not in options:  # an explicit Redis option wins over the SDK's
            out[name] = value
    return out


def handler_options(options: dict[str, Any]) -> dict[str, Any]:
    """A sender's or receiver's keywords without the SDK's per-link ones that mean nothing here."""
    return {k: v for k, v in options.items() if k not in HANDLER_NO_OP}
