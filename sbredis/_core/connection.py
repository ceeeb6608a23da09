"""The azure-servicebus SDK's ways to connect, mapped onto a Redis URL.

An application ported from azure-servicebus changes only its connection string:

* ``Endpoint=sb://host[:port][/];SharedAccessKeyName=<user>;SharedAccessKey=<password>[;EntityPath=<entity>]``
  connects to Redis at host:port as the ACL user <user> with password <password>.
  TLS follows the endpoint: ``sb://`` is TLS (``rediss://``, default port 6380), unless the string
  says ``UseDevelopmentEmulator=true`` (plain TCP, default port 6379, as the Service Bus emulator)
  or ``UseTls=false``; ``UseTls=true`` asks for TLS explicitly. ``SharedAccessSignature=<sig>`` is
  taken as the password. ``EntityPath`` is returned beside the URL.
* ``fully_qualified_namespace`` plus a credential: the namespace is ``host[:port]`` (TLS unless the
  host is a loopback address, as the emulator is) or a ``redis://``/``rediss://`` URL, and the
  credential supplies the user and password: ``AzureNamedKeyCredential(name, key)`` the ACL user and
  password, ``AzureSasCredential(signature)`` the default user's password, and a token credential
  (``get_token``) a token used as the default user's password.
* Any ``redis://``, ``rediss://``, ``unix://``, ``redis+cluster://``, ``rediss+cluster://`` or
  ``memory://`` URL is used as it is.
"""

from __future__ import annotations

import inspect
import ipaddress
import re
from typing import Any, NamedTuple
from urllib.parse import quote

from ..exceptions import InvalidArgumentError

PLAIN_PORT, TLS_PORT = 6379, 6380
TOKEN_SCOPE = "https://servicebus.azure.net/.default"


class Connection(NamedTuple):
    url: str
    entity_path: str | None = None


def _is_azure_style(text: str) -> bool:
    return re.match(r"\s*[A-Za-z]+\s*=", text) is not None


def _fields(conn_str: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in conn_str.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise InvalidArgumentError("a connection string part has no '=': expected Key=Value pairs separated by ';'")
        fields[key.strip().lower()] = value.strip()
    return fields


def _flag(fields: dict[str, str], key: str) -> bool | None:
    value = fields.get(key)
    if value is None:
        return None
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidArgumentError(f"{key} must be true or false")


def is_loopback(host: str) -> bool:
    """Whether `host` (a name, an IPv4 or an IPv6 address, bracketed or not) is this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _url(host_port: str, tls: bool, user: str | None, password: str | None) -> str:
    host_port = host_port.strip().rstrip("/")
    if not host_port or "/" in host_port:
        raise InvalidArgumentError("the endpoint must be a host name with an optional port")
    host, _, port = host_port.rpartition(":") if host_port.count(":") == 1 else (host_port, "", "")
    if not host:
        host, port = port, ""
    port = port or str(TLS_PORT if tls else PLAIN_PORT)
    if not port.isdigit():
        raise InvalidArgumentError("the endpoint's port must be a number")
    auth = ""
    if password is not None:
        auth = f"{quote(user or '', safe='')}:{quote(password, safe='')}@"
    return f"{'rediss' if tls else 'redis'}://{auth}{host}:{port}/0"


def from_azure_connection_string(conn_str: str) -> Connection:
    fields = _fields(conn_str)
    endpoint = fields.get("endpoint")
    if not endpoint:
        raise InvalidArgumentError("the connection string has no Endpoint=sb://<host>[:<port>]")
    scheme, sep, rest = endpoint.partition("://")
    if not sep or scheme.lower() != "sb":
        raise InvalidArgumentError("the connection string's Endpoint must start with sb://")
    emulator = _flag(fields, "usedevelopmentemulator")
    tls = _flag(fields, "usetls")
    if tls is None:
        tls = not emulator
    password = fields.get("sharedaccesskey", fields.get("sharedaccesssignature"))
    user = fields.get("sharedaccesskeyname") if "sharedaccesskey" in fields else None
    return Connection(_url(rest, tls, user, password), fields.get("entitypath") or None)


def _credential(credential: Any) -> tuple[str | None, str]:
    named = getattr(credential, "named_key", None)
    if named is not None:
        return str(named[0]) or None, str(named[1])
    signature = getattr(credential, "signature", None)
    if isinstance(signature, str):
        return None, signature
    get_token = getattr(credential, "get_token", None)
    if callable(get_token):
        if inspect.iscoroutinefunction(get_token):
            raise InvalidArgumentError(
                "an async token credential cannot sign in to Redis: pass AzureNamedKeyCredential(user, password)"
            )
        return None, str(get_token(TOKEN_SCOPE).token)
    raise InvalidArgumentError(
        "credential must be an AzureNamedKeyCredential, an AzureSasCredential or a token credential"
    )


def resolve(target: str, credential: Any = None) -> Connection:
    """The Redis URL (and EntityPath) for a connection string, URL or namespace with credential."""
    if not isinstance(target, str):
        raise InvalidArgumentError("the connection string must be a str")
    if _is_azure_style(target):
        if credential is not None:
            raise InvalidArgumentError("pass either a connection string with keys or a credential, not both")
        return from_azure_connection_string(target)
    if credential is None:
        _check_database(target)
        return Connection(target)
    user, password = _credential(credential)
    if "://" in target:
        scheme, _, rest = target.partition("://")
        if scheme not in ("redis", "rediss"):
            raise InvalidArgumentError("a credential goes with a redis:// or rediss:// namespace")
        host_port = rest.split("/", 1)[0].rpartition("@")[2]
        return Connection(_url(host_port, scheme == "rediss", user, password))
    host = target.rsplit(":", 1)[0] if target.count(":") == 1 else target
    return Connection(_url(target, not is_loopback(host), user, password))


def _check_database(url: str) -> None:
    """A database path redis-py would silently ignore (``redis://h:1/x``) is refused: the client would
    otherwise work in database 0 while its user named another."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("redis", "rediss", "redis+cluster", "rediss+cluster"):
        return
    # after the userinfo, since a password may hold '/'; the path is not quoted back for the same reason
    path = rest.split("?", 1)[0].rpartition("@")[2].partition("/")[2]
    if path and not (path.isascii() and path.isdigit()):
        raise InvalidArgumentError(f"the database in a {scheme}:// URL must be a number, as in {scheme}://host:port/0")
    if path and "cluster" in scheme and int(path) != 0:
        raise InvalidArgumentError("Redis Cluster has only database 0")


def namespace_of(url: str) -> str:
    """The namespace a resolved Redis URL stands for, as the SDK's ``sb://<namespace>/`` addresses
    carry it: the host and port (the first seed's of a cluster), ``localhost`` for a socket or the
    in-process server."""
    rest = url.split("://", 1)[-1]
    netloc = rest.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1].split(",", 1)[0]
    if url.startswith(("unix:", "memory:")) or not netloc:
        return "localhost"
    return netloc
