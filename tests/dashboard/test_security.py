"""The dashboard's guards, checked over HTTP against a real server (and in the browser where the
user's view matters): read-only refuses every action on the server, a non-loopback address needs
a token or basic auth, every action needs the CSRF token of the browser that loaded the form, and
the Redis password never appears."""

from __future__ import annotations

import base64
import http.client
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from sbredis.dashboard.app import Settings, SettingsError
from sbredis.dashboard.server import Running, start
from tests.cli.conftest import ROOT, run_cli
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
PASSWORD = "dash-Pa55-w0rd-secret"


class Reply:
    def __init__(self, r: http.client.HTTPResponse) -> None:
        self.status = r.status
        self.headers = {k.lower(): v for k, v in r.getheaders()}
        self.text = r.read().decode()

    def cookie(self, name: str) -> str | None:
        m = re.search(rf"{name}=([^;]+)", self.headers.get("set-cookie", ""))
        return m.group(1) if m else None


def call(base: str, method: str, path: str, form: dict[str, Any] | None = None, **headers: str) -> Reply:
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    body = urlencode(form) if form is not None else None
    if body is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, path, body=body, headers=headers)
    try:
        return Reply(conn.getresponse())
    finally:
        conn.close()


def csrf_and_cookie(base: str, **headers: str) -> tuple[str, str]:
    first = call(base, "GET", "/", **headers)
    token = first.cookie("sbredis_csrf")
    assert token, first.headers
    return token, f"sbredis_csrf={token}"


@pytest.fixture()
def read_only(redis_url: str, namespace: Any) -> Iterator[Running]:
    running = start(Settings.make(redis_url, read_only=True))
    yield running
    running.stop()


def test_read_only_refuses_every_action(read_only: Running, admin: Any, page: Any, shoot: Any) -> None:
    before = admin.get_queue_runtime_properties("orders")
    page.goto(read_only.url + "/entity/orders")
    shoot(page, "read-only")
    assert page.locator("header .badge").inner_text() == "read-only"
    assert page.get_by_role("button").count() == 0  # no forms at all
    assert page.get_by_label("max_delivery_count").count() == 0  # settings shown as text
    page.goto(read_only.url + "/entity/orders?view=messages&queue=deadletter")
    assert page.locator('input[name="seq"]').count() == 0
    token, cookie = csrf_and_cookie(read_only.url)
    for verb, form in [
        ("purge", {"entity": "orders", "queue": "active"}),
        ("resubmit", {"entity": "orders", "queue": "deadletter", "all": "1", "target": "orders"}),
        ("send", {"entity": "orders", "body": "x"}),
        ("cancel", {"entity": "orders", "seq_list": "1"}),
        ("settings", {"entity": "orders", "kind": "queue", "set:max_delivery_count": "9"}),
    ]:
        r = call(read_only.url, "POST", f"/action/{verb}", {**form, "csrf": token, "confirmed": "yes"}, Cookie=cookie)
        assert r.status == 403 and "read-only" in r.text, (verb, r.status)
    after = admin.get_queue_runtime_properties("orders")
    assert (after.active_message_count, after.dead_letter_message_count) == (
        before.active_message_count,
        before.dead_letter_message_count,
    )
    assert admin.get_queue("orders").max_delivery_count == 3


def test_csrf_refused(dashboard: Running, admin: Any) -> None:
    token, cookie = csrf_and_cookie(dashboard.url)
    form = {"entity": "orders", "queue": "active", "confirmed": "yes"}
    no_field = call(dashboard.url, "POST", "/action/purge", form, Cookie=cookie)
    wrong = call(dashboard.url, "POST", "/action/purge", {**form, "csrf": "not-" + token}, Cookie=cookie)
    no_cookie = call(dashboard.url, "POST", "/action/purge", {**form, "csrf": token})  # another site's form
    for r in (no_field, wrong, no_cookie):
        assert r.status == 403 and "CSRF token does not match" in r.text
    for verb, fields in [  # every action, each with a wrong token
        ("resubmit", {"queue": "deadletter", "all": "1", "target": "orders"}),
        ("send", {"body": "x"}),
        ("cancel", {"seq_list": "1"}),
        ("settings", {"kind": "queue", "set:max_delivery_count": "9"}),
    ]:
        r = call(dashboard.url, "POST", f"/action/{verb}", {**form, **fields, "csrf": "x" + token}, Cookie=cookie)
        assert r.status == 403 and "CSRF token does not match" in r.text, verb
    assert admin.get_queue_runtime_properties("orders").dead_letter_message_count == 5
    assert admin.get_queue("orders").max_delivery_count == 3
    assert admin.get_queue_runtime_properties("orders").active_message_count == 13
    ok = call(dashboard.url, "POST", "/action/send", {"entity": "archive", "body": "x", "csrf": token}, Cookie=cookie)
    assert ok.status == 200 and "Send a test message to archive?" in ok.text  # the confirmation, nothing sent yet
    assert "SameSite=strict" in call(dashboard.url, "GET", "/").headers["set-cookie"]


def test_only_loopback_host_names_without_credentials(dashboard: Running, redis_url: str) -> None:
    assert call(dashboard.url, "GET", "/", Host=f"localhost:{dashboard.port}").status == 200
    rebound = call(dashboard.url, "GET", "/api/overview", Host=f"attacker.example:{dashboard.port}")
    assert rebound.status == 403 and "loopback host names only" in rebound.text
    assert call(dashboard.url, "POST", "/action/purge", {"entity": "orders"}, Host="attacker.example").status == 403
    running = start(Settings.make(redis_url, host="127.0.0.2", token="tok"))
    try:  # with credentials required, any host name may reach the sign-in
        r = call(running.url, "GET", "/", Host="dashboard.internal", Authorization="Bearer tok")
        assert r.status == 200
    finally:
        running.stop()


def test_non_loopback_needs_credentials(redis_url: str, namespace: Any, page: Any, shoot: Any) -> None:
    with pytest.raises(SettingsError, match="needs --token"):
        Settings.make(redis_url, host="0.0.0.0")
    with pytest.raises(SettingsError, match="needs --token"):
        Settings.make(redis_url, host="192.168.1.10")
    refused = run_cli("dashboard", "--host", "0.0.0.0", "--port", "0", url=redis_url)
    assert refused.code == 2 and "needs --token" in refused.err, refused

    # 127.0.0.2 is loopback to the kernel but stands in for "another address" through the settings:
    # a token set means it is required, whatever the address
    running = start(Settings.make(redis_url, host="127.0.0.2", token="t0k3n-for-tests"))
    try:
        assert call(running.url, "GET", "/").status == 401
        assert call(running.url, "GET", "/api/overview").status == 401
        assert call(running.url, "GET", "/static/app.js").status == 401
        assert call(running.url, "GET", "/", Authorization="Bearer wrong").status == 401
        assert call(running.url, "GET", "/api/overview", Authorization="Bearer t0k3n-for-tests").status == 200
        page.goto(running.url + "/entity/orders")
        assert page.locator("h1").inner_text() == "Unauthorized"
        shoot(page, "unauthorized")
        page.goto(running.url + "/entity/orders?token=t0k3n-for-tests")
        assert page.url == running.url + "/entity/orders"  # the token left the address bar for a cookie
        assert page.locator("h1").inner_text() == "queue orders"
        page.goto(running.url + "/")
        assert page.title() == "Overview · sbredis"
    finally:
        running.stop()

    running = start(Settings.make(redis_url, host="127.0.0.2", basic_auth="ops:s3cret"))
    try:
        r = call(running.url, "GET", "/")
        assert r.status == 401 and r.headers["www-authenticate"].startswith("Basic")
        good = "Basic " + base64.b64encode(b"ops:s3cret").decode()
        bad = "Basic " + base64.b64encode(b"ops:nope").decode()
        assert call(running.url, "GET", "/", Authorization=bad).status == 401
        assert call(running.url, "GET", "/", Authorization=good).status == 200
    finally:
        running.stop()


@pytest.fixture(scope="module")
def locked() -> Iterator[RedisServer]:
    srv = RedisServer("--requirepass", PASSWORD).start()
    yield srv
    srv.stop()


def test_password_never_shown(locked: RedisServer, page: Any) -> None:
    url = f"redis://default:{PASSWORD}@127.0.0.1:{locked.port}/0"
    from sbredis.management import ServiceBusAdministrationClient

    with ServiceBusAdministrationClient.from_connection_string(url) as a:
        a.create_queue("secretq")
    running = start(Settings.make(url))
    try:
        seen = []
        for path in ["/", "/entity/secretq", "/entity/secretq?view=messages&queue=deadletter", "/api/overview",
                     "/entity/missing"]:  # fmt: skip
            page.goto(running.url + path)
            seen.append(page.content())
        seen.append(call(running.url, "GET", "/api/overview").text)
        assert all(PASSWORD not in text for text in seen)
        assert "was not found" in seen[4]
    finally:
        running.stop()
    bad = f"redis://default:{PASSWORD}@127.0.0.1:1/0"  # nothing listens: the error page must not quote it
    running = start(Settings.make(bad))
    try:
        r = call(running.url, "GET", "/")
        assert r.status == 502 and PASSWORD not in r.text and "Error" in r.text
    finally:
        running.stop()


def test_cli_serves_until_interrupted(redis_url: str, namespace: Any) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SBREDIS_URL=redis_url)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sbredis", "dashboard", "--port", "0", "--read-only"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.match(r"serving (http://127\.0\.0\.1:\d+)/ \(Ctrl-C stops\)", line)
        assert m, line
        deadline = time.monotonic() + 20
        while True:
            try:
                r = call(m.group(1), "GET", "/")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert r.status == 200 and "orders" in r.text and "read-only" in r.text
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read()
