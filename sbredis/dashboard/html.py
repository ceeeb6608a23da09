"""The pages, as plain functions returning HTML (no template engine: every value goes through
``e()``, so nothing read from Redis can inject markup). Forms post to /action/<verb>; the server
answers with a confirmation page first, then does it."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from enum import Enum
from typing import Any
from urllib.parse import quote, urlencode

from .counts import COUNTS, Entity

LABELS = {
    "active": "Active",
    "scheduled": "Scheduled",
    "deferred": "Deferred",
    "locked": "Locked",
    "dead_letter": "Dead-letter",
    "transfer": "Transfer",
    "transfer_dead_letter": "Transfer DL",
    "size": "Size",
}
QUEUE_LABELS = {
    "active": "Active",
    "scheduled": "Scheduled",
    "deferred": "Deferred",
    "deadletter": "Dead-letter",
    "transferdeadletter": "Transfer dead-letter",
}


def e(value: Any) -> str:
    """A value as escaped text ("-" for nothing)."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return html.escape(value.strftime("%Y-%m-%d %H:%M:%S"))
    if isinstance(value, timedelta):
        return "never" if value >= timedelta(days=36500) else html.escape(f"{value.total_seconds():g}s")
    if isinstance(value, Enum):
        return html.escape(str(value.value))
    return html.escape(str(value))


def href(path: str, **query: Any) -> str:
    url = "/entity/" + quote(path, safe="/")
    q = {k: v for k, v in query.items() if v not in (None, "")}
    return url + ("?" + urlencode(q) if q else "")


def size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


def layout(
    title: str, body: str, *, read_only: bool, poll: str = "", poll_ms: int = 2000, notice: str = "", error: str = ""
) -> str:
    badge = '<span class="badge" title="every action is refused">read-only</span>' if read_only else ""
    flash = f'<p class="notice" role="status">{e(notice)}</p>' if notice else ""
    flash += f'<p class="error" role="alert">{e(error)}</p>' if error else ""
    poll_attr = f' data-poll="{e(poll)}" data-poll-ms="{poll_ms}"' if poll else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} · sbredis</title><link rel="stylesheet" href="/static/style.css">
<link rel="icon" href="/static/favicon.svg"><script src="/static/app.js" defer></script></head>
<body{poll_attr}><header><a class="brand" href="/">sbredis</a> <span class="crumb">{e(title)}</span> {badge}</header>
<main>{flash}{body}</main></body></html>"""


def hidden(fields: Mapping[str, Any]) -> str:
    out = []
    for k, v in fields.items():
        for item in v if isinstance(v, list) else [v]:
            out.append(f'<input type="hidden" name="{e(k)}" value="{html.escape(str(item))}">')
    return "".join(out)


def action_form(verb: str, label: str, csrf: str, fields: Mapping[str, Any], extra: str = "", cls: str = "") -> str:
    return (
        f'<form method="post" action="/action/{e(verb)}" class="action {e(cls)}">'
        f'{hidden({"csrf": csrf, **fields})}{extra}<button type="submit">{e(label)}</button></form>'
    )


# ----------------------------------------------------------------------------------- overview
def chart(name: str, label: str) -> str:
    return (
        f'<figure class="chart"><figcaption>{e(label)} <b data-rate-total="{e(name)}">0</b>/s</figcaption>'
        f'<svg data-chart="{e(name)}" viewBox="0 0 200 40" preserveAspectRatio="none" role="img" '
        f'aria-label="{e(label)} per second, last two minutes"><polyline points=""/></svg></figure>'
    )


def charts() -> str:
    return (
        '<section class="charts">'
        + chart("sent", "Sent")
        + chart("completed", "Completed")
        + chart("dead_lettered", "Dead-lettered")
        + "</section>"
    )


def quota(ent: Entity) -> str:
    """Size against quota: a meter of the share used. A topic's size is its subscriptions' and each
    of them has the topic's quota, so its meter shows the fullest subscription."""
    used = ent.total("size")
    if ent.kind == "topic":
        title = f"{size(used)} in its subscriptions; the fullest at {100 * ent.fill:.1f}% of its quota"
    else:
        title = f"{size(used)} of {size(ent.max_size_bytes)}"
    pct = f"{100 * ent.fill:.1f}"
    return (
        f'<span class="quota" title="{e(title)}"><meter min="0" max="100" value="{pct}" '
        f'aria-label="{pct}% of the quota"></meter> <span data-count="size">{e(size(used))}</span></span>'
    )


def overview(entities: Sequence[Entity], rates: Mapping[str, Mapping[str, float]]) -> str:
    rows = []
    for ent in entities:
        c = ent.counts
        indent = ' class="sub"' if ent.kind == "subscription" else ""
        name = ent.name.split("/Subscriptions/", 1)[1] if ent.kind == "subscription" else ent.name
        status = e(ent.status) + (
            f' <span class="warn">{len(ent.unreachable)} partitions unreachable</span>' if ent.unreachable else ""
        )
        cells = "".join(f'<td class="n" data-count="{k}">{c[k]}</td>' for k in COUNTS if k != "size")
        r = rates.get(ent.name, {})
        rate = "".join(
            f'<td class="n" data-rate="{k}">{r.get(k, 0):g}</td>' for k in ("sent", "completed", "dead_lettered")
        )
        rows.append(
            f'<tr data-entity="{e(ent.name)}"><td{indent}><a href="{e(href(ent.name))}">{e(name)}</a></td>'
            f"<td>{e(ent.kind)}</td><td>{status}</td><td class=n><button type=button class=parts "
            f'aria-expanded="false" data-partitions="{e(ent.name)}" '
            f'aria-label="{ent.partition_count} partitions of {e(ent.name)}">{ent.partition_count}</button></td>'
            f"{cells}"
            f"<td>{quota(ent)}</td>{rate}</tr>"
        )
    head = "".join(f'<th scope="col" class="n">{e(LABELS[k])}</th>' for k in COUNTS if k != "size")
    table = (
        '<table class="grid" id="entities"><thead><tr><th scope="col">Entity</th><th scope="col">Kind</th>'
        f'<th scope="col">Status</th><th scope="col" class="n">Partitions</th>{head}<th scope="col">Size / quota</th>'
        '<th scope="col" class="n">Sent/s</th><th scope="col" class="n">Completed/s</th>'
        f'<th scope="col" class="n">Dead-lettered/s</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    empty = "<p>No entities yet.</p>" if not entities else ""
    return f"<h1>Overview</h1>{charts()}<p class=meta>{len(entities)} entities</p>{empty}{table}"


# ------------------------------------------------------------------------------------- entity
def counts_table(ent: Entity) -> str:
    head = "".join(f'<th scope="col" class="n">{e(LABELS[k])}</th>' for k in COUNTS)
    body = []
    for p in ent.partitions:
        cells = "".join(f'<td class="n">{e(size(p.counts[k]) if k == "size" else p.counts[k])}</td>' for k in COUNTS)
        state = "" if p.reachable else ' <span class="warn">unreachable</span>'
        body.append(f"<tr><td>{p.partition_id}{state}</td><td>{e(p.node)}</td>{cells}</tr>")
    c = ent.counts
    total = "".join(f'<td class="n" data-count="{k}">{e(size(c[k]) if k == "size" else c[k])}</td>' for k in COUNTS)
    return (
        f'<table class="grid" id="partitions" data-entity="{e(ent.name)}"><thead><tr><th scope="col">Partition</th>'
        f'<th scope="col">Node</th>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
        f'<tfoot><tr><th scope="row">all</th><td></td>{total}</tr></tfoot></table>'
    )


def settings_form(path: str, kind: str, props: Any, csrf: str, read_only: bool, editable: Iterable[str]) -> str:
    rows = []
    names = set(editable)
    for f in props.__dataclass_fields__:
        if f in ("name", "authorization_rules"):
            continue
        value = getattr(props, f)
        shown = "never" if isinstance(value, timedelta) and value >= timedelta(days=36500) else value
        if isinstance(shown, timedelta):
            shown = f"{shown.total_seconds():g}"
        if isinstance(shown, Enum):
            shown = shown.value
        if read_only or f not in names:
            cell = e(value)
        else:
            cell = (
                f'<input id="set-{e(f)}" name="set:{e(f)}" value="{html.escape("" if shown is None else str(shown))}">'
            )
        rows.append(f'<tr><th scope="row"><label for="set-{e(f)}">{e(f)}</label></th><td>{cell}</td></tr>')
    table = f'<table class="props">{"".join(rows)}</table>'
    if read_only:
        return f"<h2>Settings</h2>{table}"
    return (
        f'<h2>Settings</h2><form method="post" action="/action/settings" class="settings">'
        f"{hidden({'csrf': csrf, 'entity': path, 'kind': kind})}{table}"
        '<p class=hint>Durations in seconds ("never" for none); booleans true/false.</p>'
        '<button type="submit">Save settings</button></form>'
    )


def subscriptions_table(subs: Sequence[Entity]) -> str:
    shown = ("active", "dead_letter", "transfer_dead_letter")
    head = "".join(f'<th scope="col" class="n">{e(LABELS[k])}</th>' for k in shown)
    rows = []
    for s in subs:
        name = s.name.split("/Subscriptions/", 1)[1]
        cells = "".join(f'<td class="n">{s.total(k)}</td>' for k in shown)
        links = " ".join(
            f'<a href="{e(href(s.name, view="messages", queue=q))}">{e(QUEUE_LABELS[q])}</a>'
            for q in ("active", "deadletter", "transferdeadletter")
        )
        rows.append(
            f'<tr><td><a href="{e(href(s.name))}">{e(name)}</a></td><td>{e(s.status)}</td>{cells}<td>{links}</td></tr>'
        )
    return (
        '<h2>Subscriptions</h2><table class="grid" id="subscriptions"><thead><tr><th scope="col">Subscription</th>'
        f'<th scope="col">Status</th>{head}<th scope="col">Messages</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def rules_table(topic: str, subs: Sequence[tuple[Any, Sequence[Any]]]) -> str:
    rows = []
    for s, rules in subs:
        path = f"{topic}/Subscriptions/{s.name}"
        for i, r in enumerate(rules or [None]):
            first = (
                f'<td rowspan="{max(len(rules), 1)}"><a href="{e(href(path))}">{e(s.name)}</a></td>' if i == 0 else ""
            )
            if r is None:
                rows.append(f"<tr>{first}<td colspan=3>no rules: receives nothing</td></tr>")
                continue
            f = r.filter
            what = getattr(f, "sql_expression", None)
            if what is None:
                fields = {k: v for k, v in vars(f).items() if v not in (None, {}, "")} if hasattr(f, "__dict__") else {}
                what = type(f).__name__ + (" " + ", ".join(f"{k}={v}" for k, v in fields.items()) if fields else "")
            action = getattr(r.action, "sql_expression", None) if r.action is not None else None
            rows.append(
                f"<tr>{first}<td>{e(r.name)}</td><td><code>{e(what)}</code></td><td><code>{e(action)}</code></td></tr>"
            )
    return (
        '<h2>Rules</h2><table class="grid" id="rules"><thead><tr><th scope="col">Subscription</th>'
        '<th scope="col">Rule</th><th scope="col">Filter</th><th scope="col">Action</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def sessions_table(sessions: Sequence[Mapping[str, Any]]) -> str:
    if not sessions:
        return "<h2>Sessions</h2><p>No sessions with messages, a holder or state.</p>"
    rows = "".join(
        f"<tr><td>{e(s['session_id'])}</td><td>{'held by a receiver' if s['held'] else ''}"
        f"<pre class=state>{e(s['state'])}</pre></td></tr>"
        for s in sessions
    )
    return (
        '<h2>Sessions</h2><table class="grid" id="sessions"><thead><tr><th scope="col">Session</th>'
        f'<th scope="col">State</th></tr></thead><tbody>{rows}</tbody></table>'
    )


def actions_panel(ent: Entity, csrf: str, read_only: bool, targets: Sequence[str]) -> str:
    if read_only:
        return ""
    parts = ['<h2>Actions</h2><div class="actions">']
    if ent.kind in ("queue", "topic"):
        form = (
            '<label>Body <textarea name="body" rows="3">{"hello": "from the dashboard"}</textarea></label>'
            '<label>Properties (NAME=VALUE per line) <textarea name="properties" rows="2"></textarea></label>'
            '<label>Subject <input name="subject"></label><label>Session id <input name="session_id"></label>'
        )
        parts.append(action_form("send", "Send test message", csrf, {"entity": ent.name}, form, "send"))
    if ent.kind != "topic":
        options = "".join(
            f'<option value="{q}">{e(QUEUE_LABELS[q])}</option>' for q in ("active", "deadletter", "transferdeadletter")
        )
        select = f'<label>Messages <select name="queue">{options}</select></label>'
        parts.append(action_form("purge", "Purge…", csrf, {"entity": ent.name}, select, "purge"))
        parts.append(resubmit_fields(ent, csrf, targets))
    if ent.kind in ("queue", "topic"):
        extra = '<label>Sequence numbers (comma-separated) <input name="seq_list" inputmode="numeric"></label>'
        parts.append(action_form("cancel", "Cancel scheduled", csrf, {"entity": ent.name}, extra, "cancel"))
    parts.append("</div>")
    return "".join(parts)


def target_select(ent: Entity, targets: Sequence[str]) -> str:
    origin = ent.topic if ent.kind == "subscription" else ent.name
    opts = [f'<option value="{e(origin)}">{e(origin)} (origin)</option>']
    opts += [
        f'<option value="{e(t)}">{e(t)}{" (this subscription only)" if "/Subscriptions/" in t else ""}</option>'
        for t in targets
        if t != origin
    ]
    return f'<label>To <select name="target">{"".join(opts)}</select></label>'


def resubmit_fields(ent: Entity, csrf: str, targets: Sequence[str]) -> str:
    """The form that resubmits every dead letter of a list (the message browser resubmits a selection)."""
    options = "".join(
        f'<option value="{q}">{e(QUEUE_LABELS[q])}</option>' for q in ("deadletter", "transferdeadletter")
    )
    extra = (
        f'<label>From <select name="queue">{options}</select></label>{target_select(ent, targets)}'
        '<label class="check"><input type="checkbox" name="new_ids" value="1"> new message ids</label>'
    )
    return action_form("resubmit", "Resubmit all…", csrf, {"entity": ent.name, "all": "1"}, extra, "resubmit")


def entity_page(
    ent: Entity,
    csrf: str,
    read_only: bool,
    settings: str,
    rules: str,
    sessions: str,
    targets: Sequence[str],
) -> str:
    links = ""
    if ent.kind != "topic":
        links = (
            '<nav class="queues" aria-label="messages">Messages: '
            + " ".join(
                f'<a href="{e(href(ent.name, view="messages", queue=q))}">{e(QUEUE_LABELS[q])}</a>'
                for q in QUEUE_LABELS
            )
            + "</nav>"
        )
    return (
        f"<h1>{e(ent.kind)} {e(ent.name)}</h1><p class=meta>status {e(ent.status)} · {ent.partition_count} "
        f"partition(s) · {quota(ent)}</p>{links}{charts()}{counts_table(ent)}"
        f"{actions_panel(ent, csrf, read_only, targets)}{rules}{sessions}{settings}"
    )


# ----------------------------------------------------------------------------------- messages
def messages_page(
    ent: Entity,
    queue: str,
    found: Any,
    find: str,
    view: str,
    csrf: str,
    read_only: bool,
    targets: Sequence[str],
    body_of: Any,
    system_of: Any,
) -> str:
    tabs = " ".join(
        f'<a href="{e(href(ent.name, view="messages", queue=q, find=find))}"'
        f"{' aria-current=page' if q == queue else ''}>{e(QUEUE_LABELS[q])}</a>"
        for q in QUEUE_LABELS
    )
    views = "".join(
        f'<option value="{v}"{" selected" if v == view else ""}>{v}</option>' for v in ("text", "json", "hex")
    )
    search = (
        f'<form method="get" class="find" role="search"><input type="hidden" name="view" value="messages">'
        f'<input type="hidden" name="queue" value="{e(queue)}">'
        f'<label>Find <input name="find" value="{html.escape(find)}" '
        'placeholder="message id, session id or NAME=VALUE"></label>'
        f'<label>Body as <select name="body">{views}</select></label><button type="submit">Find</button></form>'
    )
    rows = []
    for m in found.messages:
        sysprops = "".join(f"<tr><th scope=row>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in system_of(m).items())
        app = m.sent_application_properties or {}
        appprops = (
            "".join(
                f"<tr><th scope=row>{e(k.decode() if isinstance(k, bytes) else k)}</th><td>{e(v)}</td></tr>"
                for k, v in app.items()
            )
            or "<tr><td colspan=2>none</td></tr>"
        )
        check = (
            f'<td><input type="checkbox" name="seq" value="{m.sequence_number}" form="selected" '
            f'aria-label="select message {m.sequence_number}"></td>'
            if not read_only
            and (queue in ("deadletter", "transferdeadletter") or (queue == "scheduled" and ent.kind == "queue"))
            else ""  # a subscription's scheduled copies are cancelled through their topic's sequence numbers
        )
        preview = body_of(m.body_bytes or b"", view)
        short = preview if len(preview) <= 80 else preview[:79] + "…"
        rows.append(
            f'<tr class="msg">{check}<td>{m.sequence_number}</td><td>{e(m.message_id)}</td><td>{e(m.session_id)}</td>'
            f"<td>{e(m.enqueued_time_utc)}</td><td>{e(m.dead_letter_reason)}</td>"
            f"<td><details><summary><code>{e(short)}</code></summary><pre class=body>{e(preview)}</pre>"
            f'<div class="props2"><table class=props><caption>Application properties</caption>{appprops}</table>'
            f"<table class=props><caption>System properties</caption>{sysprops}</table></div></details></td></tr>"
        )
    head_check = (
        '<th scope="col"><input type="checkbox" data-select-all aria-label="select all"></th>'
        if any("checkbox" in r for r in rows)
        else ""
    )
    table = (
        f'<table class="grid" id="messages"><thead><tr>{head_check}<th scope="col">Seq</th>'
        '<th scope="col">Message id</th>'
        '<th scope="col">Session</th><th scope="col">Enqueued</th><th scope="col">Dead-letter reason</th>'
        f'<th scope="col">Body</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    more = f" (scanned {found.scanned}; more not shown)" if found.more else ""
    summary = f'<p class=meta id="found">{len(found.messages)} message(s){html.escape(more)}</p>'
    selected = ""
    if not read_only and queue in ("deadletter", "transferdeadletter") and found.messages:
        extra = target_select(ent, targets) + (
            '<label class="check"><input type="checkbox" name="new_ids" value="1"> new message ids</label>'
        )
        selected = (
            f'<form method="post" action="/action/resubmit" id="selected" class="action resubmit">'
            f"{hidden({'csrf': csrf, 'entity': ent.name, 'queue': queue})}{extra}"
            '<button type="submit">Resubmit selected…</button></form>'
        )
    elif not read_only and queue == "scheduled" and found.messages and ent.kind == "queue":
        selected = (
            f'<form method="post" action="/action/cancel" id="selected" class="action cancel">'
            f'{hidden({"csrf": csrf, "entity": ent.name})}<button type="submit">Cancel selected…</button></form>'
        )
    return (
        f'<h1>{e(QUEUE_LABELS[queue])} messages of <a href="{e(href(ent.name))}">{e(ent.name)}</a></h1>'
        f'<nav class="queues" aria-label="message lists">{tabs}</nav>{search}{summary}{selected}{table}'
    )


VERBS = {"settings": "save"}


def confirm_page(question: str, verb: str, fields: Mapping[str, Any], back: str) -> str:
    return (
        f'<h1>Confirm</h1><form method="post" action="/action/{e(verb)}" class="confirm">'
        f'<p id="question">{e(question)}</p>{hidden({**fields, "confirmed": "yes"})}'
        f'<button type="submit" autofocus>Yes, {e(VERBS.get(verb, verb))}</button> '
        f'<a href="{e(back)}">Cancel</a></form>'
    )
