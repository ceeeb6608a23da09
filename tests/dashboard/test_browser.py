"""The dashboard in headless Chromium: every page loads and shows what the namespace holds (a
screenshot of each), the charts move without a reload, a resubmit and a purge clicked through and
checked against Redis, and the main actions done with the keyboard alone."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from sbredis import ServiceBusMessage, ServiceBusSubQueue

pytestmark = pytest.mark.integration


def cell(page: Any, entity: str, count: str) -> str:
    return str(page.locator(f'#entities tr[data-entity="{entity}"] [data-count="{count}"]').inner_text())


def test_every_page(page: Any, dashboard: Any, shoot: Any, namespace: Any, client: Any, admin: Any) -> None:
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(f"{r.url} {r.failure}"))
    page.goto(dashboard.url + "/")
    assert page.title() == "Overview · sbredis"
    names = page.locator("#entities tbody tr").evaluate_all("rows => rows.map(r => r.dataset.entity)")
    assert names == ["archive", "carts", "events", "events/Subscriptions/audit", "events/Subscriptions/lost", "orders"]
    assert (cell(page, "orders", "active"), cell(page, "orders", "dead_letter")) == ("13", "5")
    assert (cell(page, "orders", "scheduled"), cell(page, "orders", "deferred")) == ("2", "1")
    assert cell(page, "events/Subscriptions/lost", "transfer_dead_letter") == "3"
    assert cell(page, "events/Subscriptions/audit", "active") == "3"
    # a topic stores nothing itself: its row sums its subscriptions'
    assert (cell(page, "events", "active"), cell(page, "events", "transfer_dead_letter")) == ("3", "3")
    # size against the quota (max_size_in_megabytes per partition): a meter, and both in its title
    quota = page.locator('#entities tr[data-entity="orders"] .quota')
    title = quota.get_attribute("title") or ""
    gib = admin.get_queue("orders").max_size_in_megabytes * 4 / 1024
    assert re.fullmatch(rf"\d+(\.\d)? (B|KiB) of {gib:.1f} GiB", title), title
    assert float(quota.locator("meter").get_attribute("value") or "-1") >= 0
    assert quota.locator('[data-count="size"]').inner_text() != "0 B"
    # the charts fill from the JSON endpoint without a reload
    expect(page.locator("svg[data-chart=sent]")).to_have_attribute("data-points", re.compile(r"^([3-9]|\d\d+)$"))
    assert page.locator("svg[data-chart=sent] polyline").get_attribute("points").count(",") >= 3
    with client.get_queue_sender("archive") as s:  # traffic: the rates move on the page, no reload
        s.send_messages([ServiceBusMessage(f"a{i}") for i in range(40)])
    expect(page.locator("[data-rate-total=sent]")).not_to_have_text("0")
    expect(page.locator('#entities tr[data-entity="archive"] [data-rate="sent"]')).not_to_have_text("0")
    expect(page.locator('#entities tr[data-entity="archive"] [data-count="active"]')).to_have_text("40")
    shoot(page, "overview")
    page.get_by_role("button", name="4 partitions of orders").click()  # fetched, not in the page
    inner = page.locator("#entities tr.partitions table")
    expect(inner.locator("tbody tr")).to_have_count(4)
    assert "127.0.0.1:" in inner.locator("tbody tr").first.inner_text()
    shoot(page, "overview-partitions")
    page.get_by_role("button", name="4 partitions of orders").click()
    expect(page.locator("#entities tr.partitions")).to_have_count(0)

    page.get_by_role("link", name="orders", exact=True).click()
    assert page.locator("h1").inner_text() == "queue orders"
    partitions = page.locator("#partitions tbody tr")
    assert partitions.count() == 4
    assert "127.0.0.1:" in partitions.first.inner_text()  # the node holding each partition
    assert page.locator("#partitions tfoot [data-count=active]").inner_text() == "13"
    assert page.get_by_label("max_delivery_count").input_value() == "3"
    shoot(page, "queue")

    page.goto(dashboard.url + "/entity/events")
    subs = page.locator("#subscriptions tbody tr")
    assert subs.count() == 2
    assert subs.nth(0).inner_text().split("\t")[:5] == ["audit", "Active", "3", "0", "0"]
    assert subs.nth(1).inner_text().split("\t")[:5] == ["lost", "Active", "0", "0", "3"]
    rules = page.locator("#rules").inner_text()
    assert "eu-only" in rules and "region = 'eu'" in rules and "SET audited = 1" in rules
    assert "$Default" in rules  # lost's rule
    shoot(page, "topic")

    page.goto(dashboard.url + "/entity/events/Subscriptions/lost?view=messages&queue=transferdeadletter")
    assert page.locator("#messages tr.msg").count() == 3
    assert "MessagingEntityNotFound" in page.locator("#messages").inner_text()
    shoot(page, "transfer-dead-letter")

    page.goto(dashboard.url + "/entity/carts")
    sessions = page.locator("#sessions").inner_text()
    assert "cart-0" in sessions and '{"step": "checkout"}' in sessions and "cart-1" in sessions
    shoot(page, "sessions")

    expected = {"active": 12, "scheduled": 2, "deferred": 1, "deadletter": 5, "transferdeadletter": 0}
    for queue, n in expected.items():
        page.goto(dashboard.url + f"/entity/orders?view=messages&queue={queue}")
        assert page.locator("#found").inner_text().startswith(f"{n} message(s)"), queue
        assert page.locator("#messages tr.msg").count() == n
        shoot(page, f"messages-{queue}")
    page.goto(dashboard.url + "/entity/events/Subscriptions/audit")
    assert page.locator("h1").inner_text() == "subscription events/Subscriptions/audit"
    assert "eu-only" in page.locator("#rules").inner_text()
    assert page.locator("#partitions tfoot [data-count=active]").inner_text() == "3"
    shoot(page, "subscription")
    page.goto(dashboard.url + "/entity/no-such-queue")
    assert "was not found" in page.locator(".error").inner_text()
    shoot(page, "not-found")
    page.goto(dashboard.url + "/entity/orders?view=messages&queue=deadletter&body=json")
    row = page.locator("#messages tr.msg").first
    row.locator("summary").click()
    body = row.locator("pre.body").inner_text()
    assert re.search(r'"order": \d+,\n  "total"', body), body  # pretty JSON
    assert "BadOrder" in row.inner_text() and "region" in row.inner_text()
    system = row.locator("table.props").nth(1)  # the system properties, as the SDK names them
    assert system.locator("caption").inner_text() == "System properties"
    shown = dict(zip(system.locator("th").all_inner_texts(), system.locator("td").all_inner_texts(), strict=True))
    assert shown["dead_letter_reason"] == "BadOrder" and shown["content_type"] == "application/json"
    assert shown["message_id"].startswith("order-") and int(shown["sequence_number"]) > 0
    assert shown["delivery_count"] == "0" and shown["state"] == "active"
    shoot(page, "dead-letter")

    page.goto(dashboard.url + "/entity/orders?view=messages&queue=active&body=hex")
    page.locator("#messages summary").first.click()
    assert re.match(r"00000000  7b 22 6f 72", page.locator("pre.body").first.inner_text())  # '{"or'
    page.goto(dashboard.url + "/entity/orders?view=messages&queue=scheduled&body=text")
    page.locator("#messages summary").first.click()
    assert page.locator("pre.body").first.inner_text() == "later-0"  # as text
    page.goto(dashboard.url + "/entity/carts?view=messages&queue=active&find=cart-1")
    assert page.locator("#messages tr.msg").count() == 1 and "cart-1" in page.locator("#messages").inner_text()
    page.goto(dashboard.url + "/entity/orders?view=messages&queue=active&find=order-7")
    assert page.locator("#messages tr.msg").count() == 1
    page.get_by_label("Find").fill("region=us")
    page.get_by_role("button", name="Find").click()
    assert page.locator("#found").inner_text().startswith("6 message(s)")  # 12 active: even ones are us
    shoot(page, "find")
    # every asset came from the dashboard itself (no CDN, no font service): it works offline
    assert requested and all(u.startswith(dashboard.url + "/") for u in requested), requested
    assert {u.split("?")[0].removeprefix(dashboard.url) for u in requested} >= {
        "/static/app.js",
        "/static/style.css",
        "/api/overview",
    }
    assert [f for f in failed if "ERR_ABORTED" not in f] == []  # aborted: the test moved on to the next page


def test_resubmit_selected_then_purge(page: Any, dashboard: Any, admin: Any, client: Any, shoot: Any) -> None:
    admin.create_queue("refunds", enable_partitioning=True, partition_count=2)
    try:
        with client.get_queue_sender("refunds") as s:
            s.send_messages([ServiceBusMessage(f"refund-{i}", message_id=f"refund-{i}") for i in range(6)])
        from tests.dashboard.conftest import dead_letter

        dead_letter(client, "refunds", 6)
        page.goto(dashboard.url + "/entity/refunds?view=messages&queue=deadletter")
        boxes = page.locator('#messages input[name="seq"]')
        assert boxes.count() == 6
        chosen = [boxes.nth(i).get_attribute("value") for i in (0, 2)]
        boxes.nth(0).check()
        boxes.nth(2).check()
        page.get_by_role("button", name="Resubmit selected…").click()
        assert page.locator("#question").inner_text() == (
            "Resubmit the 2 selected dead-letter messages of refunds to refunds?"
        )
        shoot(page, "confirm")
        page.get_by_role("button", name="Yes, resubmit").click()
        assert page.locator(".notice").inner_text() == "Resubmitted 2 message(s) of refunds to refunds."
        props = admin.get_queue_runtime_properties("refunds")
        assert (props.active_message_count, props.dead_letter_message_count) == (2, 4)
        with client.get_queue_receiver("refunds", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as r:
            left = {str(m.sequence_number) for m in r.peek_messages(10, sequence_number=0)}
        assert not left & set(chosen)  # exactly the chosen ones left the dead-letter subqueue

        # one more, to another queue, with a new message id
        page.goto(dashboard.url + "/entity/refunds?view=messages&queue=deadletter")
        first = page.locator('#messages input[name="seq"]').first
        moved = first.get_attribute("value")
        first.check()
        page.locator("form#selected").get_by_label("To").select_option("archive")
        page.locator("form#selected").get_by_label("new message ids").check()
        page.get_by_role("button", name="Resubmit selected…").click()
        assert page.locator("#question").inner_text() == (
            "Resubmit the 1 selected dead-letter messages of refunds to archive, with new message ids?"
        )
        page.get_by_role("button", name="Yes, resubmit").click()
        assert page.locator(".notice").inner_text() == "Resubmitted 1 message(s) of refunds to archive."
        with client.get_queue_receiver("archive") as r:
            copies = [m for m in r.peek_messages(200, sequence_number=0) if str(m).startswith("refund-")]
        assert len(copies) == 1 and not (copies[0].message_id or "").startswith("refund-")
        with client.get_queue_receiver("refunds", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as r:
            assert moved not in {str(m.sequence_number) for m in r.peek_messages(10, sequence_number=0)}

        page.goto(dashboard.url + "/entity/refunds")
        page.locator("form.purge").get_by_label("Messages").select_option("deadletter")
        page.get_by_role("button", name="Purge…").click()
        assert "Purge every dead-letter message of refunds" in page.locator("#question").inner_text()
        page.get_by_role("button", name="Yes, purge").click()
        assert page.locator(".notice").inner_text() == "Purged 3 message(s) of refunds."
        props = admin.get_queue_runtime_properties("refunds")
        assert (props.active_message_count, props.dead_letter_message_count) == (2, 0)
    finally:
        admin.delete_queue("refunds")


def test_resubmit_to_one_subscription(page: Any, dashboard: Any, admin: Any, client: Any, shoot: Any) -> None:
    """Dead letters of one subscription resubmitted to another subscription of the topic, then back to
    itself: each time only the chosen subscription gets the copies (not the topic's other subscriptions,
    and not through the topic's rules: `held` has none, so nothing sent to the topic reaches it)."""
    t = "shipments"
    admin.create_topic(t, enable_partitioning=True, partition_count=2)
    try:
        for name in ("eu", "us", "held"):
            admin.create_subscription(t, name)
        admin.delete_rule(t, "held", "$Default")
        with client.get_topic_sender(t) as s:
            s.send_messages([ServiceBusMessage(f"parcel-{i}", message_id=f"parcel-{i}") for i in range(5)])
        with client.get_subscription_receiver(t, "eu") as r:
            got: list[Any] = []
            while len(got) < 5:
                got += r.receive_messages(5 - len(got), max_wait_time=2)
            r.dead_letter_messages(got, reason="NoCustoms")

        def counts() -> dict[str, tuple[int, int]]:
            out = {}
            for name in ("eu", "us", "held"):
                p = admin.get_subscription_runtime_properties(t, name)
                out[name] = (p.active_message_count, p.dead_letter_message_count)
            return out

        assert counts() == {"eu": (0, 5), "us": (5, 0), "held": (0, 0)}
        page.goto(dashboard.url + f"/entity/{t}/Subscriptions/eu?view=messages&queue=deadletter")
        boxes = page.locator('#messages input[name="seq"]')
        assert boxes.count() == 5
        seqs = {int(boxes.nth(i).get_attribute("value")) for i in (1, 3)}
        with client.get_subscription_receiver(t, "eu", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as r:
            chosen = {m.message_id for m in r.peek_messages(10, sequence_number=0) if m.sequence_number in seqs}
        assert len(chosen) == 2
        boxes.nth(1).check()
        boxes.nth(3).check()
        target = page.locator("form#selected").get_by_label("To")
        assert target.locator("option").all_inner_texts()[:1] == [f"{t} (origin)"]
        assert f"{t}/Subscriptions/held (this subscription only)" in target.locator("option").all_inner_texts()
        target.select_option(f"{t}/Subscriptions/held")
        page.get_by_role("button", name="Resubmit selected…").click()
        assert page.locator("#question").inner_text() == (
            f"Resubmit the 2 selected dead-letter messages of {t}/Subscriptions/eu "
            f"to the subscription {t}/Subscriptions/held alone?"
        )
        shoot(page, "confirm-resubmit-subscription")
        page.get_by_role("button", name="Yes, resubmit").click()
        assert page.locator(".notice").inner_text() == (
            f"Resubmitted 2 message(s) of {t}/Subscriptions/eu to {t}/Subscriptions/held."
        )
        shoot(page, "resubmitted-to-subscription")
        assert counts() == {"eu": (0, 3), "us": (5, 0), "held": (2, 0)}
        with client.get_subscription_receiver(t, "held") as r:
            assert {m.message_id for m in r.peek_messages(10, sequence_number=0)} == chosen

        # the rest, from the entity page's "Resubmit all", back into eu alone (not to us again)
        page.goto(dashboard.url + f"/entity/{t}/Subscriptions/eu")
        form = page.locator("form.resubmit")
        form.get_by_label("To").select_option(f"{t}/Subscriptions/eu")
        form.get_by_role("button", name="Resubmit all…").click()
        assert page.locator("#question").inner_text() == (
            f"Resubmit all the dead-letter messages of {t}/Subscriptions/eu to the subscription "
            f"{t}/Subscriptions/eu alone?"
        )
        page.get_by_role("button", name="Yes, resubmit").click()
        assert page.locator(".notice").inner_text() == (
            f"Resubmitted 3 message(s) of {t}/Subscriptions/eu to {t}/Subscriptions/eu."
        )
        assert counts() == {"eu": (3, 0), "us": (5, 0), "held": (2, 0)}
        with client.get_subscription_receiver(t, "eu") as r:
            assert {m.message_id for m in r.peek_messages(10, sequence_number=0)} == {
                f"parcel-{i}" for i in range(5)
            } - chosen
    finally:
        admin.delete_topic(t)


def focus_on(page: Any, label: str, limit: int = 300) -> None:
    """Press Tab until the focused element's text or label is `label` (keyboard only)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "() => { const el = document.activeElement;"
            " return (el.innerText || el.getAttribute('aria-label') || el.value || '').trim(); }"
        )
        if focused == label:
            return
    raise AssertionError(f"Tab never reached {label!r}")


def test_keyboard_only(page: Any, dashboard: Any, admin: Any, client: Any) -> None:
    admin.create_queue("keys")
    try:
        page.goto(dashboard.url + "/")
        focus_on(page, "keys")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/entity/keys$"))
        focus_on(page, "Send test message")
        page.keyboard.press("Enter")
        assert page.locator("#question").inner_text() == "Send a test message to keys?"
        page.keyboard.press("Enter")  # the confirmation's button has the focus
        assert page.locator(".notice").inner_text() == "Sent a test message to keys."
        assert admin.get_queue_runtime_properties("keys").active_message_count == 1

        with client.get_queue_receiver("keys") as r:
            (m,) = r.receive_messages(1, max_wait_time=2)
            r.dead_letter_message(m, reason="ByKeyboard")
        page.reload()
        focus_on(page, "Resubmit all…")
        page.keyboard.press("Enter")
        assert page.locator("#question").inner_text() == "Resubmit all the dead-letter messages of keys to keys?"
        page.keyboard.press("Enter")
        assert page.locator(".notice").inner_text() == "Resubmitted 1 message(s) of keys to keys."

        with client.get_queue_receiver("keys") as r:  # the copy, dead-lettered again: picked by keyboard
            (m,) = r.receive_messages(1, max_wait_time=2)
            r.dead_letter_message(m, reason="ByKeyboard")
        page.goto(dashboard.url + "/entity/keys?view=messages&queue=deadletter")
        seq = page.locator('#messages input[name="seq"]').first.get_attribute("value")
        focus_on(page, f"select message {seq}")
        page.keyboard.press("Space")
        focus_on(page, "Resubmit selected…")
        page.keyboard.press("Enter")
        assert page.locator("#question").inner_text() == "Resubmit the 1 selected dead-letter messages of keys to keys?"
        page.keyboard.press("Enter")
        assert page.locator(".notice").inner_text() == "Resubmitted 1 message(s) of keys to keys."

        focus_on(page, "Purge…")
        page.keyboard.press("Enter")
        assert "Purge every active message of keys" in page.locator("#question").inner_text()
        page.keyboard.press("Enter")
        assert page.locator(".notice").inner_text() == "Purged 1 message(s) of keys."
        props = admin.get_queue_runtime_properties("keys")
        assert (props.active_message_count, props.dead_letter_message_count) == (0, 0)
    finally:
        admin.delete_queue("keys")


def test_settings_cancel_and_send(page: Any, dashboard: Any, admin: Any, client: Any) -> None:
    from datetime import UTC, datetime, timedelta

    admin.create_queue("later")
    try:
        with client.get_queue_sender("later") as s:
            seqs = s.schedule_messages(
                [ServiceBusMessage(f"t{i}") for i in range(3)], datetime.now(UTC) + timedelta(hours=1)
            )
        page.goto(dashboard.url + "/entity/later?view=messages&queue=scheduled")
        assert page.locator("#messages tr.msg").count() == 3
        page.locator(f'#messages input[name="seq"][value="{seqs[1]}"]').check()
        page.get_by_role("button", name="Cancel selected…").click()
        assert page.locator("#question").inner_text() == f"Cancel the scheduled messages {seqs[1]} of later?"
        page.get_by_role("button", name="Yes, cancel").click()
        assert page.locator(".notice").inner_text() == "Cancelled 1 scheduled message(s) of later."
        assert admin.get_queue_runtime_properties("later").scheduled_message_count == 2

        page.get_by_label("max_delivery_count").fill("7")
        page.get_by_label("lock_duration").fill("12.5")
        page.get_by_role("button", name="Save settings").click()
        page.get_by_role("button", name="Yes, save").click()
        assert page.locator(".notice").inner_text() == "Saved the settings of later."
        q = admin.get_queue("later")
        assert (q.max_delivery_count, q.lock_duration) == (7, timedelta(seconds=12.5))
        page.get_by_label("max_delivery_count").fill("lots")
        page.get_by_role("button", name="Save settings").click()
        page.get_by_role("button", name="Yes, save").click()
        assert "max_delivery_count: cannot use 'lots'" in page.locator(".error").inner_text()

        page.locator("form.send").get_by_label("Body").fill('{"ping": 1}')
        page.locator("form.send").get_by_label("Properties (NAME=VALUE per line)").fill("kind=test\nn=2")
        page.get_by_role("button", name="Send test message").click()
        page.get_by_role("button", name="Yes, send").click()
        with client.get_queue_receiver("later") as r:
            (m,) = r.receive_messages(1, max_wait_time=2)
        assert str(m) == '{"ping": 1}' and m.sent_application_properties == {"kind": "test", "n": 2}
    finally:
        admin.delete_queue("later")


def test_purge_a_session_queue(page: Any, dashboard: Any, admin: Any, client: Any) -> None:
    """A session-enabled queue's active messages are purged session by session; its dead letters too."""
    admin.create_queue("baskets", requires_session=True, enable_partitioning=True, partition_count=2)
    try:
        with client.get_queue_sender("baskets") as s:
            s.send_messages([ServiceBusMessage(f"b{i}", session_id=f"basket-{i % 3}") for i in range(9)])
        with client.get_queue_receiver("baskets", session_id="basket-0") as r:
            r.dead_letter_messages(r.receive_messages(3, max_wait_time=2), reason="Abandoned")
        page.goto(dashboard.url + "/entity/baskets")
        page.get_by_role("button", name="Purge…").click()
        assert "Purge every active message of baskets" in page.locator("#question").inner_text()
        page.get_by_role("button", name="Yes, purge").click()
        assert page.locator(".notice").inner_text() == "Purged 6 message(s) of baskets."
        props = admin.get_queue_runtime_properties("baskets")
        assert (props.active_message_count, props.dead_letter_message_count) == (0, 3)
        page.locator("form.purge").get_by_label("Messages").select_option("deadletter")
        page.get_by_role("button", name="Purge…").click()
        page.get_by_role("button", name="Yes, purge").click()
        assert page.locator(".notice").inner_text() == "Purged 3 message(s) of baskets."
        assert admin.get_queue_runtime_properties("baskets").dead_letter_message_count == 0
    finally:
        admin.delete_queue("baskets")


def test_transfer_dead_letters_resubmitted_and_a_topic_schedule_cancelled(
    page: Any, dashboard: Any, admin: Any, client: Any
) -> None:
    """Messages a subscription could not forward (its destination was deleted) are resubmitted from
    the transfer dead-letter list to a queue; a message scheduled on a topic is cancelled from the
    topic's page, and its subscriptions' copies go with it."""
    from datetime import UTC, datetime, timedelta

    admin.create_topic("parcels", enable_partitioning=True, partition_count=2)
    admin.create_queue("depot")
    admin.create_queue("returns")
    try:
        admin.create_subscription("parcels", "route", forward_to="depot")
        admin.create_subscription("parcels", "audit")
        admin.delete_queue("depot")
        with client.get_topic_sender("parcels") as s:
            s.send_messages([ServiceBusMessage(f"parcel-{i}") for i in range(4)])
            (later,) = s.schedule_messages([ServiceBusMessage("later")], datetime.now(UTC) + timedelta(hours=1))
        route = "parcels/Subscriptions/route"
        page.goto(dashboard.url + f"/entity/{route}?view=messages&queue=transferdeadletter")
        boxes = page.locator('#messages input[name="seq"]')
        assert boxes.count() == 4
        boxes.nth(0).check()
        boxes.nth(1).check()
        page.locator("form#selected").get_by_label("To").select_option("returns")
        page.get_by_role("button", name="Resubmit selected…").click()
        assert page.locator("#question").inner_text() == (
            f"Resubmit the 2 selected transfer dead-letter messages of {route} to returns?"
        )
        page.get_by_role("button", name="Yes, resubmit").click()
        assert page.locator(".notice").inner_text() == f"Resubmitted 2 message(s) of {route} to returns."
        assert admin.get_queue_runtime_properties("returns").active_message_count == 2
        assert admin.get_subscription_runtime_properties("parcels", "route").transfer_dead_letter_message_count == 2

        page.goto(dashboard.url + "/")  # the overview: the scheduled copy in audit, and in the topic's sums
        assert (cell(page, "parcels/Subscriptions/audit", "active"), cell(page, "parcels", "active")) == ("4", "4")
        assert cell(page, "parcels/Subscriptions/audit", "scheduled") == "1"
        assert cell(page, "parcels", "scheduled") == "2"  # a copy in each subscription, route's to forward
        page.goto(dashboard.url + "/entity/parcels")
        form = page.locator("form.cancel")
        form.get_by_label("Sequence numbers (comma-separated)").fill(str(later))
        form.get_by_role("button", name="Cancel scheduled").click()
        assert page.locator("#question").inner_text() == f"Cancel the scheduled messages {later} of parcels?"
        page.get_by_role("button", name="Yes, cancel").click()
        assert page.locator(".notice").inner_text() == "Cancelled 1 scheduled message(s) of parcels."
        page.goto(dashboard.url + "/")
        assert cell(page, "parcels/Subscriptions/audit", "scheduled") == cell(page, "parcels", "scheduled") == "0"
        assert cell(page, "parcels/Subscriptions/audit", "active") == "4"
        # the subscription's scheduled list offers nothing to select: its copies are cancelled by the topic
        page.goto(dashboard.url + "/entity/parcels/Subscriptions/audit?view=messages&queue=scheduled")
        assert page.locator('#messages input[name="seq"]').count() == 0
    finally:
        admin.delete_topic("parcels")
        admin.delete_queue("returns")
