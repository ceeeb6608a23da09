"""azure-servicebus connection strings, namespaces and credentials mapped onto Redis URLs."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from sbredis._core import memory
from sbredis._core.connection import is_loopback, resolve
from sbredis._core.redact import redact_text
from sbredis.exceptions import InvalidArgumentError


class NamedKey(NamedTuple):
    name: str
    key: str


class NamedKeyCredential:  # the shape of azure.core.credentials.AzureNamedKeyCredential
    def __init__(self, name: str, key: str) -> None:
        self.named_key = NamedKey(name, key)


class SasCredential:  # azure.core.credentials.AzureSasCredential
    def __init__(self, signature: str) -> None:
        self.signature = signature


class Token(NamedTuple):
    token: str
    expires_on: int


class TokenCredential:
    def get_token(self, *scopes: str, **_: Any) -> Token:
        assert scopes == ("https://servicebus.azure.net/.default",)
        return Token("tok/en", 0)


@pytest.mark.parametrize(
    ("conn", "url", "entity"),
    [
        (
            "Endpoint=sb://cache.example.com/;SharedAccessKeyName=app;SharedAccessKey=s3cr=t",
            "rediss://app:s3cr%3Dt@cache.example.com:6380/0",
            None,
        ),
        (
            "Endpoint=sb://localhost;SharedAccessKeyName=Root;SharedAccessKey=k;UseDevelopmentEmulator=true;",
            "redis://Root:k@localhost:6379/0",
            None,
        ),
        (
            "endpoint=sb://h:7000;sharedaccesskeyname=u;sharedaccesskey=p;usetls=false;EntityPath=orders",
            "redis://u:p@h:7000/0",
            "orders",
        ),
        ("Endpoint=sb://h:7000/;UseDevelopmentEmulator=true;UseTls=true", "rediss://h:7000/0", None),
        (
            "Endpoint=sb://h;SharedAccessSignature=SharedAccessSignature sr=x&sig=y",
            "rediss://:SharedAccessSignature%20sr%3Dx%26sig%3Dy@h:6380/0",
            None,
        ),
    ],
)
def test_azure_connection_strings(conn: str, url: str, entity: str | None) -> None:
    got = resolve(conn)
    assert got.url == url
    assert got.entity_path == entity


def test_redis_urls_pass_through() -> None:
    for url in ("redis://h:1/0", "rediss://u:p@h:2/3", "unix:///tmp/r.sock", "memory://x", "redis+cluster://h:1"):
        assert resolve(url).url == url


@pytest.mark.parametrize(
    ("namespace", "credential", "url"),
    [
        ("127.0.0.1:6390", NamedKeyCredential("user", "pw"), "redis://user:pw@127.0.0.1:6390/0"),
        ("localhost", NamedKeyCredential("user", "pw"), "redis://user:pw@localhost:6379/0"),
        ("cache.example.com", NamedKeyCredential("user", "p@ss"), "rediss://user:p%40ss@cache.example.com:6380/0"),
        ("redis://cache.example.com:7000/0", SasCredential("sig"), "redis://:sig@cache.example.com:7000/0"),
        ("rediss://cache.example.com", TokenCredential(), "rediss://:tok%2Fen@cache.example.com:6380/0"),
    ],
)
def test_namespace_and_credential(namespace: str, credential: Any, url: str) -> None:
    assert resolve(namespace, credential).url == url


@pytest.mark.parametrize(
    ("conn", "credential"),
    [
        ("Endpoint=http://h;SharedAccessKey=S3CRET-KEY", None),
        ("SharedAccessKeyName=u;SharedAccessKey=S3CRET-KEY", None),
        ("Endpoint=sb://h;UseDevelopmentEmulator=maybe;SharedAccessKey=S3CRET-KEY", None),
        ("Endpoint=sb://h:port;SharedAccessKey=S3CRET-KEY", None),
        ("Endpoint=sb://h;SharedAccessKey=S3CRET-KEY", NamedKeyCredential("u", "S3CRET-PW")),
        ("h:1", object()),
        ("memory://x", NamedKeyCredential("u", "S3CRET-PW")),
        ("redis://u:S3CRET-PW@h:1/x", None),
        ("rediss://u:S3CRET-PW@h:1/db0", None),
        ("redis+cluster://u:S3CRET-PW@h:1/3", None),
    ],
)
def test_refusals_are_typed_and_quote_no_secret(conn: str, credential: Any) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        resolve(conn, credential)
    assert "S3CRET" not in str(info.value)


def test_database_paths_redis_accepts_pass() -> None:
    for url in (
        "redis://h:1",
        "redis://h:1/",
        "redis://h:1/15",
        "rediss://h:1/2?ssl_cert_reqs=none",
        "redis+cluster://h:1/0",
    ):
        assert resolve(url).url == url


def test_shared_access_keys_are_redacted_in_text() -> None:
    text = "failed: Endpoint=sb://h/;SharedAccessKeyName=app;SharedAccessKey=s3cret;EntityPath=q"
    assert "s3cret" not in redact_text(text)
    assert "SharedAccessKeyName=app" in redact_text(text)


WITHOUT_FAKEREDIS = """
import asyncio, sys
sys.modules["{missing}"] = None  # as when the memory extra is not installed (or fakeredis without [lua])
import {api} as api
from sbredis.exceptions import InvalidArgumentError

async def make():
    return api.ServiceBusClient("memory://nofake")

try:
    client = asyncio.run(make()) if api.__name__ == "sbredis.aio" else api.ServiceBusClient("memory://nofake")
except InvalidArgumentError as e:
    print("InvalidArgumentError:", e)
else:
    print("made", client)
"""


@pytest.mark.parametrize("missing", ["fakeredis", "lupa"])
@pytest.mark.parametrize("api", ["sbredis", "sbredis.aio"])
def test_memory_url_without_fakeredis_is_a_typed_error(api: str, missing: str) -> None:
    """A user without the memory extra gets the library's typed error naming the extra, not an
    ImportError, nor (fakeredis without its Lua) "unknown command 'evalsha'" at the first send."""
    root = Path(__file__).resolve().parents[2]
    code = textwrap.dedent(WITHOUT_FAKEREDIS).format(api=api, missing=missing)
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    assert out.startswith("InvalidArgumentError: ") and "memory://nofake" in out
    assert "pip install 'sbredis[memory]'" in out
    assert out.count("TrackingId:") == 1, out  # the typed error as raised, not wrapped in another
    assert re.fullmatch(
        r"InvalidArgumentError: memory://nofake needs fakeredis with Lua: pip install 'sbredis\[memory\]' "
        r"TrackingId:[0-9a-f]{32}",
        out,
    ), out


@pytest.mark.parametrize("broken", [False, True], ids=["not-importable", "no-spec"])
@pytest.mark.parametrize("missing", ["fakeredis", "lupa"])
def test_memory_server_without_fakeredis_or_lupa_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, missing: str, broken: bool
) -> None:
    """In this process: a module that cannot be imported (None in sys.modules, as after a failed
    import) or a broken one (a module without a spec) makes memory:// the typed error naming the
    extra."""
    monkeypatch.setitem(sys.modules, missing, types.ModuleType(missing) if broken else None)
    assert not memory.available()
    with pytest.raises(InvalidArgumentError, match=r"pip install 'sbredis\[memory\]'"):
        memory.memory_server("memory://nofake")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("example.com", False),
        ("10.0.0.1", False),
        ("[fe80::1]", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, expected: bool) -> None:
    """One answer for the connection string's TLS default and the dashboard's credential check."""
    assert is_loopback(host) is expected
