"""The dashboard's web application: ``create_app(Settings.make(url, ...))`` is a Starlette app.

Security, all enforced on the server:

* Bound to a loopback address it needs no credentials; bound elsewhere ``Settings.make`` refuses
  to start without a token or basic-auth credentials. With a token, a request carries
  ``Authorization: Bearer TOKEN``, or the browser opens ``/?token=TOKEN`` once and gets an
  HttpOnly cookie holding a hash of it; with basic auth the browser asks for user and password.
* Every change is a POST that must carry the per-browser CSRF token: a random value in a
  ``SameSite=Strict`` cookie, repeated in a hidden form field; a POST whose field does not match
  its cookie is refused (403). A page from another site can neither read the cookie nor set it.
* In read-only mode every POST is refused (403) before anything else is looked at; the pages
  also leave the forms out, but that is for the eye, not the guard.
* Without credentials it answers only requests whose Host header is a loopback name, so a web page
  whose host name was re-pointed at 127.0.0.1 (DNS rebinding) cannot use it.
* The Redis URL is never shown: pages show entity names and counts only, and error messages go
  through the same password masking as the command line.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import ServiceBusClient
from .._core.connection import is_loopback
from .._core.redact import redact_text
from .._sync._transport import Transport
from ..exceptions import MessagingEntityNotFoundError, ServiceBusError
from ..management import (
    QueueProperties,
    ServiceBusAdministrationClient,
    SubscriptionProperties,
    TopicProperties,
)
from . import actions, html
from .counts import Entity, Rates, Reader
from .counts import totals as rate_totals

STATIC = Path(__file__).with_name("static")
CSRF_COOKIE, AUTH_COOKIE = "sbredis_csrf", "sbredis_auth"
MODELS: dict[str, type[Any]] = {
    "queue": QueueProperties,
    "topic": TopicProperties,
    "subscription": SubscriptionProperties,
}
# fields a settings form may change (the rest are fixed at creation or read-only)
FIXED = {"name", "enable_partitioning", "partition_count", "requires_session", "availability_status",
         "authorization_rules", "size_in_bytes", "topic_name"}  # fmt: skip


class SettingsError(ValueError):
    """Settings the dashboard refuses to start with."""


@dataclass(frozen=True)
class Settings:
    url: str
    host: str = "127.0.0.1"
    read_only: bool = False
    token: str | None = None
    basic_auth: tuple[str, str] | None = None
    poll_seconds: float = 2.0

    @property
    def needs_auth(self) -> bool:
        return bool(self.token or self.basic_auth) or not is_loopback(self.host)

    @classmethod
    def make(
        cls,
        url: str,
        *,
        host: str = "127.0.0.1",
        read_only: bool = False,
        token: str | None = None,
        basic_auth: str | None = None,
        poll_seconds: float = 2.0,
    ) -> Settings:
        """Raises SettingsError: a non-loopback host without a token or basic auth, or a bad basic auth."""
        pair = None
        if basic_auth:
            user, sep, password = basic_auth.partition(":")
            if not sep or not user or not password:
                raise SettingsError("--basic-auth takes USER:PASSWORD")
            pair = (user, password)
        if not is_loopback(host) and not token and pair is None:
            raise SettingsError(
                f"listening on {host} (not a loopback address) needs --token (or $SBREDIS_DASHBOARD_TOKEN) "
                "or --basic-auth USER:PASSWORD"
            )
        return cls(url, host, read_only, token or None, pair, poll_seconds)


def _local_host(header: str) -> bool:
    """The Host header names a loopback address (with or without a port)."""
    host = header[1 : header.find("]")] if header.startswith("[") else header.partition(":")[0]
    return bool(host) and is_loopback(host)


def _digest(token: str) -> str:
    return hashlib.sha256(b"sbredis-dashboard:" + token.encode()).hexdigest()


def _authorized(settings: Settings, request: Request) -> bool:
    header = request.headers.get("authorization", "")
    if settings.token:
        if header.startswith("Bearer ") and hmac.compare_digest(header[7:].encode(), settings.token.encode()):
            return True
        cookie = request.cookies.get(AUTH_COOKIE, "")
        if cookie and hmac.compare_digest(cookie.encode(), _digest(settings.token).encode()):
            return True
    if settings.basic_auth and header.startswith("Basic "):
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        want_user, want_password = settings.basic_auth
        return hmac.compare_digest(user.encode(), want_user.encode()) & hmac.compare_digest(
            password.encode(), want_password.encode()
        )
    return False


class Guard(BaseHTTPMiddleware):
    """Authentication (when needed) and the read-only refusal, before any route; the CSRF check is
    the action route's first step (it needs the form, and a request body can be read once)."""

    def __init__(self, app: Any, settings: Settings) -> None:
        super().__init__(app)
        self.settings = settings

    async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        s = self.settings
        if not s.needs_auth and not _local_host(request.headers.get("host", "")):
            # without credentials only a loopback name may address us: a page whose own host name was
            # re-pointed at 127.0.0.1 (DNS rebinding) would otherwise be same-origin with the dashboard
            return _refused("This dashboard answers to loopback host names only (127.0.0.1, localhost, [::1]).", s)
        if s.needs_auth and not _authorized(s, request):
            given = request.query_params.get("token")
            if s.token and given and hmac.compare_digest(given.encode(), s.token.encode()):
                query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
                back = RedirectResponse(request.url.path + ("?" + query if query else ""), status_code=303)
                back.set_cookie(AUTH_COOKIE, _digest(s.token), httponly=True, samesite="strict")
                return back
            headers = {"WWW-Authenticate": 'Basic realm="sbredis dashboard"'} if s.basic_auth else {}
            return HTMLResponse(
                html.layout(
                    "Sign in needed",
                    "<h1>Unauthorized</h1><p>This dashboard needs a token (open it with <code>?token=…</code> "
                    "or send <code>Authorization: Bearer …</code>) or basic authentication.</p>",
                    read_only=s.read_only,
                ),
                status_code=401,
                headers=headers,
            )
        if request.method not in ("GET", "HEAD") and s.read_only:
            return _refused("This dashboard is read-only: no action is allowed.", s)
        response = await call_next(request)
        if CSRF_COOKIE not in request.cookies and "csrf" in request.scope.get("state", {}):
            response.set_cookie(CSRF_COOKIE, request.scope["state"]["csrf"], httponly=True, samesite="strict")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault(
            "Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'"
        )
        return response


def _refused(message: str, s: Settings) -> Response:
    page = html.layout("Refused", f"<h1>Refused</h1><p id=refused>{html.e(message)}</p>", read_only=s.read_only)
    return HTMLResponse(page, status_code=403)


def csrf_ok(request: Request, form: Any) -> bool:
    """The form's CSRF field matches this browser's cookie."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    field = str(form.get("csrf", ""))
    return bool(cookie and field) and hmac.compare_digest(cookie.encode(), field.encode())


def csrf_of(request: Request) -> str:
    """This browser's CSRF token (a new one is set as a cookie with the response)."""
    token = request.cookies.get(CSRF_COOKIE)
    if not token:
        token = request.state.csrf = secrets.token_urlsafe(24)
    return token


class Dashboard:
    """The clients and the counts one app serves from (created at startup, closed at shutdown)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.transport = Transport(settings.url, socket_timeout=10.0)
        self.reader = Reader(self.transport)
        self.rates = Rates()
        self.client = ServiceBusClient.from_connection_string(settings.url)
        self.admin = ServiceBusAdministrationClient.from_connection_string(settings.url)
        self.lock = threading.Lock()  # one change at a time: the clients' receivers are not shared

    def close(self) -> None:
        self.client.close()
        self.admin.close()
        self.transport.close()

    def entities(self, only: str | list[str] | None = None) -> tuple[list[Entity], dict[str, dict[str, float]]]:
        """The entities (all, or those named in `only`) and the rates; with `only`, the subscriptions
        read for a topic's counts follow the entities named (the caller shows the first len(only))."""
        found = self.reader.read(only, helpers=True)
        return found, self.rates.update(found)

    def entity(self, name: str) -> tuple[Entity, dict[str, dict[str, float]]]:
        found, rates = self.entities(name)
        if not found:
            raise MessagingEntityNotFoundError(f"The messaging entity '{name}' was not found.")
        return found[0], rates

    def targets(self) -> list[str]:
        """Where messages can be resubmitted: queues, topics (through their rules, to every
        subscription that matches) and subscriptions (to that one alone)."""
        return [name for name, kind in self.reader.names() if kind in ("queue", "topic", "subscription")]


def create_app(settings: Settings) -> Starlette:
    """The dashboard app for `settings` (serve it with uvicorn: sbredis/dashboard/server.py)."""
    state: dict[str, Dashboard] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        state["d"] = await run_in_threadpool(Dashboard, settings)
        try:
            yield
        finally:
            await run_in_threadpool(state["d"].close)

    def page(request: Request, title: str, body: str, status: int = 200, poll: str = "") -> HTMLResponse:
        notice = request.query_params.get("done", "")
        error = request.query_params.get("error", "")
        text = html.layout(
            title,
            body,
            read_only=settings.read_only,
            poll=poll,
            poll_ms=int(settings.poll_seconds * 1000),
            notice=notice,
            error=error,
        )
        return HTMLResponse(text, status_code=status)

    def failed(request: Request, err: Exception, status: int) -> HTMLResponse:
        message = redact_text(err.message if isinstance(err, ServiceBusError) else str(err))
        return page(request, "Error", f"<h1>Error</h1><p class=error role=alert>{html.e(message)}</p>", status)

    def overview(request: Request) -> Response:
        d = state["d"]
        csrf_of(request)
        try:
            found, rates = d.entities()
        except ServiceBusError as err:
            return failed(request, err, 502)
        return page(request, "Overview", html.overview(found, rates), poll="/api/overview")

    def api_overview(request: Request) -> Response:
        d = state["d"]
        only = request.query_params.get("entity")
        try:
            found, rates = d.entities(only or None)
        except ServiceBusError as err:
            return JSONResponse({"error": redact_text(err.message)}, status_code=502)
        totals = rate_totals(found, rates)
        out = []
        for ent in found[:1] if only else found:
            row = {**ent.as_json(), "rates": rates.get(ent.name, {})}
            if only:
                row["partitions"] = ent.partitions_json()
            out.append(row)
        return JSONResponse({"time": time.time(), "totals": totals, "entities": out})

    def entity(request: Request) -> Response:
        d = state["d"]
        name = request.path_params["name"]
        csrf = csrf_of(request)
        try:
            ent, _ = d.entity(name)
            if request.query_params.get("view") == "messages":
                return messages(request, d, ent, csrf)
            topic, sub = actions.split(name)
            props: Any
            rules = sessions = ""
            if ent.kind == "queue":
                props = d.admin.get_queue(name)
            elif ent.kind == "topic":
                props = d.admin.get_topic(name)
                subs = [(s, list(d.admin.list_rules(name, s.name))) for s in d.admin.list_subscriptions(name)]
                counted, _ = d.entities([f"{name}/Subscriptions/{s.name}" for s, _ in subs])
                counted = counted[: len(subs)]
                rules = html.subscriptions_table(counted) + html.rules_table(name, subs)
            else:
                assert sub is not None
                props = d.admin.get_subscription(topic, sub)
                rules = html.rules_table(topic, [(props, list(d.admin.list_rules(topic, sub)))])
            if ent.requires_session:
                with d.lock:
                    sessions = html.sessions_table(actions.session_states(d.client, name))
            editable = [f.name for f in fields(MODELS[ent.kind]) if f.name not in FIXED]
            settings_html = html.settings_form(name, ent.kind, props, csrf, settings.read_only, editable)
            body = html.entity_page(ent, csrf, settings.read_only, settings_html, rules, sessions, d.targets())
        except MessagingEntityNotFoundError as err:
            return failed(request, err, 404)
        except ServiceBusError as err:
            return failed(request, err, 502)
        return page(request, f"{ent.kind} {name}", body, poll="/api/overview?" + urlencode({"entity": name}))

    def messages(request: Request, d: Dashboard, ent: Entity, csrf: str) -> Response:
        queue = request.query_params.get("queue", "active")
        find = request.query_params.get("find", "")
        view = request.query_params.get("body", "text")
        if ent.kind == "topic":
            return failed(request, actions.ActionError("a topic keeps no messages: browse its subscriptions"), 400)
        try:
            found = actions.browse(d.client, ent.name, queue, find)
        except actions.ActionError as err:
            return failed(request, err, 400)
        body = html.messages_page(
            ent,
            queue,
            found,
            find,
            view,
            csrf,
            settings.read_only,
            d.targets(),
            actions.body_view,
            actions.system_properties,
        )
        return page(request, f"messages of {ent.name}", body)

    async def action(request: Request) -> Response:
        form = await request.form()
        if settings.read_only:  # the middleware refused already; a second guard costs nothing
            return _refused("This dashboard is read-only: no action is allowed.", settings)
        if not csrf_ok(request, form):
            return _refused("The form's CSRF token does not match this browser's: reload the page and retry.", settings)
        verb = request.path_params["verb"]
        values: dict[str, Any] = {k: form.getlist(k) if k in ("seq",) else form.get(k) for k in form}
        return await run_in_threadpool(do_action, request, verb, values)

    def do_action(request: Request, verb: str, v: dict[str, Any]) -> Response:
        d = state["d"]
        name = str(v.get("entity") or "")
        back = html.href(name) if name else "/"
        if verb not in ("purge", "resubmit", "cancel", "send", "settings"):
            return failed(request, actions.ActionError(f"no action {verb!r}"), 404)
        seqs = [int(x) for x in v.get("seq") or [] if str(x).isdigit()]
        seqs += [int(x) for x in str(v.get("seq_list") or "").replace(" ", "").split(",") if x.isdigit()]
        queue = str(v.get("queue") or "")
        question = _question(verb, name, v, seqs, queue)
        if v.get("confirmed") != "yes":
            fields_ = {k: x for k, x in v.items() if k != "confirmed" and x is not None}
            return page(request, "Confirm", html.confirm_page(question, verb, fields_, back))
        try:
            with d.lock:
                outcome = _run(d, verb, name, v, seqs, queue)
        except (actions.ActionError, ServiceBusError) as err:
            message = redact_text(err.message if isinstance(err, ServiceBusError) else str(err))
            return RedirectResponse(back + ("&" if "?" in back else "?") + urlencode({"error": message}), 303)
        done = _said(verb, name, v, outcome)
        return RedirectResponse(back + ("&" if "?" in back else "?") + urlencode({"done": done}), 303)

    routes = [
        Route("/", overview),
        Route("/api/overview", api_overview),
        Route("/entity/{name:path}", entity),
        Route("/action/{verb}", action, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(Guard, settings=settings)])


def _question(verb: str, name: str, v: dict[str, Any], seqs: list[int], queue: str) -> str:
    what = html.QUEUE_LABELS.get(queue, queue).lower()
    if verb == "purge":
        return f"Purge every {what} message of {name} (there now)? They are deleted for good."
    if verb == "resubmit":
        which = f"the {len(seqs)} selected" if not v.get("all") else "all the"
        ids = ", with new message ids" if v.get("new_ids") else ""
        target = str(v.get("target") or "")
        to = f"the subscription {target} alone" if actions.split(target)[1] is not None else target
        return f"Resubmit {which} {what} messages of {name} to {to}{ids}?"
    if verb == "cancel":
        return f"Cancel the scheduled messages {', '.join(map(str, seqs)) or '(none given)'} of {name}?"
    if verb == "send":
        return f"Send a test message to {name}?"
    return f"Save the settings of {name}?"


def _run(d: Dashboard, verb: str, name: str, v: dict[str, Any], seqs: list[int], queue: str) -> actions.Outcome:
    if verb == "purge":
        found = d.reader.read(name)
        return actions.purge(d.client, d.admin, name, queue, sessions=bool(found) and found[0].requires_session)
    if verb == "resubmit":
        selected = None if v.get("all") else seqs
        target = str(v.get("target") or "")
        return actions.resubmit(d.client, d.admin, name, queue, target, selected, bool(v.get("new_ids")))
    if verb == "cancel":
        return actions.cancel_scheduled(d.client, d.admin, name, seqs)
    if verb == "send":
        return actions.send_test(
            d.client,
            d.admin,
            name,
            str(v.get("body") or ""),
            str(v.get("properties") or ""),
            str(v.get("session_id") or ""),
            str(v.get("subject") or ""),
        )
    return _update_settings(d, name, str(v.get("kind") or ""), v)


def _update_settings(d: Dashboard, name: str, kind: str, v: dict[str, Any]) -> actions.Outcome:
    from ..cli._registry import UsageError
    from ..cli.entities import setting_value

    model = MODELS.get(kind)
    if model is None:
        raise actions.ActionError(f"no such kind {kind!r}")
    changes: dict[str, Any] = {}
    try:
        for key, text in v.items():
            if key.startswith("set:") and key[4:] not in FIXED:
                changes[key[4:]] = setting_value(model, key[4:], str(text))
    except UsageError as err:
        raise actions.ActionError(str(err)) from None
    topic, sub = actions.split(name)
    if kind == "queue":
        d.admin.update_queue(d.admin.get_queue(name), **changes)
    elif kind == "topic":
        d.admin.update_topic(d.admin.get_topic(name), **changes)
    else:
        assert sub is not None
        d.admin.update_subscription(topic, d.admin.get_subscription(topic, sub), **changes)
    return actions.Outcome(done=len(changes))


def _said(verb: str, name: str, v: dict[str, Any], o: actions.Outcome) -> str:
    text = {
        "purge": f"Purged {o.done} message(s) of {name}.",
        "resubmit": f"Resubmitted {o.done} message(s) of {name} to {v.get('target')}.",
        "cancel": f"Cancelled {o.done} scheduled message(s) of {name}.",
        "send": f"Sent a test message to {name}.",
        "settings": f"Saved the settings of {name}.",
    }[verb]
    return " ".join([text, *o.notes])
