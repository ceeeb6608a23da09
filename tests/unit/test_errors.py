"""Error mapping (redis-py -> sbredis exceptions) and password redaction."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
import redis.exceptions as rx
from redis._parsers import BaseParser

from sbredis import exceptions as ex
from sbredis._core.errors import LUA_ERRORS, map_error
from sbredis._core.redact import redact, redact_text
from sbredis._sync._transport import Transport as SyncTransport
from sbredis.aio._transport import Transport as AsyncTransport

PASSWORD = "s3cret"
URL = f"redis://user:{PASSWORD}@host:1/0"


def from_server(reply: str) -> Exception:
    """The exception redis-py raises for the error reply `reply` (its parser strips known codes)."""
    return BaseParser.parse_error(reply)


def check_error(err: ex.ServiceBusError, cls: type[ex.ServiceBusError], retryable: bool) -> None:
    assert type(err) is cls, f"{type(err).__name__} is not {cls.__name__}"
    assert err.retryable is retryable
    assert isinstance(err.tracking_id, str) and re.fullmatch(r"[0-9a-f]{32}", err.tracking_id)
    assert f"TrackingId:{err.tracking_id}" in str(err)


# --------------------------------------------------------------------------- Lua error codes
@pytest.mark.parametrize(
    ("code", "cls"),
    [
        ("NOTFOUND", ex.MessagingEntityNotFoundError),
        ("STALE", ex.MessagingEntityNotFoundError),
        ("DISABLED", ex.MessagingEntityDisabledError),
        ("SIZE", ex.MessageSizeExceededError),
        ("QUOTA", ex.ServiceBusQuotaExceededError),
        ("NOMSG", ex.MessageNotFoundError),
        ("INVALID", ex.InvalidOperationError),
        ("NOSESSION", ex.InvalidOperationError),
        ("SESSIONREQ", ex.InvalidOperationError),
        ("NOTSESSIONFUL", ex.InvalidOperationError),
        ("HELD", ex.SessionCannotBeLockedError),
        ("UNSETTLED", ex.ServiceBusQuotaExceededError),
        ("LOST", ex.SessionLockLostError),
    ],
)
def test_lua_error_codes(code: str, cls: type[ex.ServiceBusError]) -> None:
    for raw in (rx.ResponseError(f"SBERR {code}"), from_server(f"SBERR {code}")):
        err = map_error(raw, "orders")
        check_error(err, cls, retryable=False)
        assert "orders" in err.message


def test_every_lua_code_is_tested() -> None:
    assert set(LUA_ERRORS) == {
        "NOTFOUND",
        "STALE",
        "DISABLED",
        "SIZE",
        "QUOTA",
        "NOMSG",
        "INVALID",
        "NOSESSION",
        "SESSIONREQ",
        "NOTSESSIONFUL",
        "HELD",
        "UNSETTLED",
        "LOST",
    }


def test_unknown_lua_code_is_a_plain_service_bus_error() -> None:
    err = map_error(rx.ResponseError("SBERR WHATEVER extra words"), "q")
    check_error(err, ex.ServiceBusError, retryable=False)
    assert "WHATEVER" in err.message


# ------------------------------------------------------------------------ redis-py exceptions
@pytest.mark.parametrize(
    ("raw", "cls", "retryable"),
    [
        (
            rx.ConnectionError("Error 111 connecting to localhost:6379. Connection refused."),
            ex.ServiceBusConnectionError,
            True,
        ),
        (ConnectionRefusedError(111, "Connection refused"), ex.ServiceBusConnectionError, True),
        (OSError("network unreachable"), ex.ServiceBusConnectionError, True),
        (rx.TimeoutError("Timeout reading from socket"), ex.OperationTimeoutError, True),
        (rx.AuthenticationError("invalid username-password pair"), ex.ServiceBusAuthenticationError, False),
        (rx.NoPermissionError("this user has no permissions"), ex.ServiceBusAuthorizationError, False),
        (rx.BusyLoadingError("Redis is loading"), ex.ServiceBusServerBusyError, True),
        (rx.ReadOnlyError("You can't write against a read only replica."), ex.ServiceBusConnectionError, True),
        (
            rx.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"),
            ex.ServiceBusError,
            False,
        ),
        (
            rx.ResponseError("OOM command not allowed when used memory > 'maxmemory'."),
            ex.ServiceBusQuotaExceededError,
            False,
        ),
        (
            rx.ResponseError(
                "Error running script (call to f_0123abcd): @user_script:270: @user_script: 270: "
                "-OOM command not allowed when used memory > 'maxmemory'."
            ),
            ex.ServiceBusQuotaExceededError,
            False,
        ),
        (
            rx.ResponseError(
                "Error running script (call to f_0123abcd): @user_script:9: @user_script: 9: "
                "-READONLY You can't write against a read only replica."
            ),
            ex.ServiceBusConnectionError,
            True,
        ),
        (rx.ResponseError("BUSY Redis is busy running a script."), ex.ServiceBusServerBusyError, True),
        (rx.ResponseError("ERR something odd"), ex.ServiceBusError, False),
        (rx.DataError("Invalid input"), ex.ServiceBusError, False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else None,
)
def test_redis_exceptions(raw: Exception, cls: type[ex.ServiceBusError], retryable: bool) -> None:
    err = map_error(raw, "q")
    check_error(err, cls, retryable)
    assert err.error is type(raw)


def _server_case(reply: str, cls: type[ex.ServiceBusError], retryable: bool) -> Any:
    return pytest.param(reply, cls, retryable, id=reply.split(" ")[0])


@pytest.mark.parametrize(
    ("reply", "cls", "retryable"),
    [
        _server_case(
            "WRONGPASS invalid username-password pair or user is disabled.", ex.ServiceBusAuthenticationError, False
        ),
        _server_case("NOAUTH Authentication required.", ex.ServiceBusAuthenticationError, False),
        _server_case(
            "NOPERM this user has no permissions to run the 'evalsha' command", ex.ServiceBusAuthorizationError, False
        ),
        _server_case("LOADING Redis is loading the dataset in memory", ex.ServiceBusServerBusyError, True),
        _server_case(
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
            ex.ServiceBusServerBusyError,
            True,
        ),
        _server_case("READONLY You can't write against a read only replica.", ex.ServiceBusConnectionError, True),
        _server_case("WRONGTYPE Operation against a key holding the wrong kind of value", ex.ServiceBusError, False),
        _server_case(
            "OOM command not allowed when used memory > 'maxmemory'.",
            ex.ServiceBusQuotaExceededError,
            False,
        ),
        _server_case(
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            ex.ServiceBusConnectionError,
            True,
        ),
        _server_case(
            "TRYAGAIN Multiple keys request during rehashing of slot",
            ex.ServiceBusServerBusyError,
            True,
        ),
    ],
)
def test_error_replies_as_redis_py_raises_them(reply: str, cls: type[ex.ServiceBusError], retryable: bool) -> None:
    """The same mapping for the exceptions redis-py really raises for these server replies."""
    err = map_error(from_server(reply), "q")
    check_error(err, cls, retryable)


def test_wrongtype_names_the_entity() -> None:
    err = map_error(rx.ResponseError("WRONGTYPE Operation against a key"), "orders")
    assert "orders" in err.message


def test_service_bus_errors_pass_through() -> None:
    original = ex.MessageLockLostError("gone")
    assert map_error(original) is original


def test_tracking_ids_are_unique_and_can_be_given() -> None:
    ids = {map_error(rx.ConnectionError("x")).tracking_id for _ in range(100)}
    assert len(ids) == 100
    assert ex.ServiceBusError("m", tracking_id="abc").tracking_id == "abc"
    assert ex.ServiceBusError("m", retryable=True).retryable is True


@pytest.mark.parametrize(
    ("text", "tls"),
    [
        # as redis-py words TLS failures (a refused client certificate, an unverifiable server)
        ("Error while reading from h:1 : (1, '[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert')", True),
        ("Error 1 connecting to h:1. [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", True),
        ("Error 8 while writing to socket. EOF occurred in violation of protocol (_ssl.c:2427).", True),
        ("Error 111 connecting to localhost:6379. Connection refused.", False),
    ],
)
def test_tls_failures_say_which_options_to_check(text: str, tls: bool) -> None:
    err = map_error(rx.ConnectionError(text))
    assert isinstance(err, ex.ServiceBusConnectionError)
    assert ("ssl_ca_certs" in err.message and "ssl_certfile" in err.message) is tls


def test_only_the_first_line_of_a_redis_message_is_kept() -> None:
    err = map_error(rx.ResponseError("ERR first line\nsecond line " + "x" * 500))
    assert "first line" in str(err) and "second line" not in str(err)
    long = map_error(rx.ResponseError("ERR " + "y" * 1000))
    assert len(long.message) < 300


# ------------------------------------------------------------------------------- redaction
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (URL, "redis://user:***@host:1/0"),
        ("redis://:s3cret@host:6379", "redis://:***@host:6379"),
        ("rediss://user:s3cret@host/0?ssl_cert_reqs=none", "rediss://user:***@host/0?ssl_cert_reqs=none"),
        ("unix://user:s3cret@/tmp/redis.sock?db=1", "unix://user:***@/tmp/redis.sock?db=1"),
        ("redis://user:s3cret%2Fx%40y@host:1/0", "redis://user:***@host:1/0"),
        ("redis://user:p@ss@host:1/0", "redis://user:***@host:1/0"),
        ("redis://host:6379/0", "redis://host:6379/0"),
        ("redis://user@host:6379/0", "redis://user@host:6379/0"),
    ],
)
def test_redact(url: str, expected: str) -> None:
    assert redact(url) == expected
    assert "s3cret" not in redact(url) and "p@ss" not in redact(url)


def test_redact_keeps_ipv6_brackets() -> None:
    assert redact("redis://user:s3cret@[::1]:6379/0") == "redis://user:***@[::1]:6379/0"


@pytest.mark.parametrize("cls", [SyncTransport, AsyncTransport])
def test_transport_and_client_reprs_hide_the_password(cls: type[Any]) -> None:
    t = cls(URL)
    assert PASSWORD not in repr(t) and PASSWORD not in t.url
    assert "user:***@host:1" in repr(t)


def test_clients_hide_the_password() -> None:
    import sbredis
    import sbredis.aio
    from sbredis.management import ServiceBusAdministrationClient

    for client in (
        sbredis.ServiceBusClient.from_connection_string(URL),
        sbredis.aio.ServiceBusClient.from_connection_string(URL),
    ):
        assert PASSWORD not in repr(client)
        assert PASSWORD not in client.fully_qualified_namespace
    admin = ServiceBusAdministrationClient.from_connection_string(URL)
    assert PASSWORD not in repr(admin) and PASSWORD not in repr(admin._transport)


@pytest.mark.parametrize(
    "url",
    ["http://user:s3cret@host:1/0", "user:s3cret@host:1", "", "s3cret"],
)
def test_bad_scheme_is_an_argument_error_without_the_password(url: str) -> None:
    with pytest.raises(ex.InvalidArgumentError) as ei:
        SyncTransport(url)
    assert PASSWORD not in str(ei.value)


def test_non_str_url_is_an_argument_error() -> None:
    with pytest.raises(ex.InvalidArgumentError):
        SyncTransport(b"redis://host")  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [SyncTransport, AsyncTransport])
@pytest.mark.parametrize(
    "url",
    [
        "redis://user:s3cret/x@host:1/0",  # an unescaped '/' (base64-style generated passwords have them)
        "redis://user:s3cret#x@host:1/0",
        "redis://user:s3cret?x@host:1/0",
    ],
)
def test_malformed_url_errors_do_not_leak_the_password(cls: type[Any], url: str) -> None:
    try:
        t = cls(url)
    except ex.ServiceBusError as e:
        assert PASSWORD not in str(e)
    else:
        assert PASSWORD not in repr(t)


def test_bad_port_is_an_argument_error() -> None:
    with pytest.raises(ex.InvalidArgumentError) as ei:
        SyncTransport("redis://user:s3cret@host:notaport/0")
    assert PASSWORD not in str(ei.value)


def test_unknown_connection_option_is_an_argument_error() -> None:
    with pytest.raises(ex.InvalidArgumentError):
        SyncTransport("redis://127.0.0.1:1/0", no_such_option=1)


def _refused_url() -> str:
    return f"redis://user:{PASSWORD}@127.0.0.1:1/0"  # port 1: nothing listens, the connect is refused


def test_connection_failure_sync_hides_the_password() -> None:
    t = SyncTransport(_refused_url(), socket_timeout=2)
    try:
        with pytest.raises(ex.ServiceBusConnectionError) as ei:
            t.execute("PING", entity="q")
    finally:
        t.close()
    err = ei.value
    check_error(err, ex.ServiceBusConnectionError, retryable=True)
    texts = [str(err), repr(err), err.message, str(err.__cause__), repr(err.__cause__)]
    assert all(PASSWORD not in s for s in texts), texts


def test_connection_failure_async_hides_the_password() -> None:
    async def go() -> ex.ServiceBusError:
        t = AsyncTransport(_refused_url(), socket_timeout=2)
        try:
            with pytest.raises(ex.ServiceBusConnectionError) as ei:
                await t.execute("PING", entity="q")
            return ei.value
        finally:
            await t.close()

    err = asyncio.run(go())
    assert err.retryable
    assert PASSWORD not in str(err) and PASSWORD not in str(err.__cause__)


@pytest.mark.parametrize(
    "text",
    [
        f"Error connecting to redis://user:{PASSWORD}@host:1/0: refused",
        f"cannot use 'rediss://:{PASSWORD}@h:2' (timeout)",
        f"bad url redis+cluster://u:{PASSWORD}@a:1,b:2/0?x=1 and unix://:{PASSWORD}@/tmp/s.sock",
        f"options ?db=0&password={PASSWORD}&x=1",
    ],
)
def test_redact_text_masks_every_url_in_free_text(text: str) -> None:
    masked = redact_text(text)
    assert PASSWORD not in masked and "***" in masked
    assert masked.split("***")[0] == text.split(PASSWORD)[0][: len(masked.split("***")[0])]


def test_redact_text_leaves_text_without_credentials_alone() -> None:
    for text in ["Error 111 connecting to 127.0.0.1:6379. Connection refused.", "a@b c=d", "redis://host:1/0"]:
        assert redact_text(text) == text


def test_mapped_redis_errors_never_quote_a_password() -> None:
    for err in (
        rx.ConnectionError(f"Error connecting to redis://u:{PASSWORD}@h:1"),
        rx.ResponseError(f"ERR something about redis://:{PASSWORD}@h:1/0"),
        rx.ResponseError(f"ERR ?password={PASSWORD}"),
    ):
        assert PASSWORD not in str(map_error(err))
