"""`sbredis dlq resubmit | purge` as a subprocess: dry runs change nothing, --yes is required without
a terminal, copies keep body, properties and message id, duplicates detected stay dead-lettered."""

from __future__ import annotations

from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue

pytestmark = pytest.mark.integration


def dead_letter(client: Any, q: str, n: int, **message: Any) -> None:
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}", **message) for i in range(n)])
    with client.get_queue_receiver(q) as r:
        got: list[Any] = []
        while len(got) < n:
            got += r.receive_messages(n - len(got), max_wait_time=2)
        r.dead_letter_messages(got, reason="Bad", error_description="test")


def counts(admin: Any, q: str) -> tuple[int, int]:
    p = admin.get_queue_runtime_properties(q)
    return p.active_message_count, p.dead_letter_message_count


def test_resubmit(sb: Any, make_queue: Any, admin: Any, client: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    dead_letter(client, q, 30, application_properties={"k": "v"}, subject="s", message_id=None)
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        ids = {m.message_id for m in dlq.peek_messages(50, sequence_number=0)}

    dry = sb("dlq", "resubmit", q, "--dry-run", "--json")
    assert dry.code == 0, dry
    assert dry.json()["would_resubmit"] == 30 and len(dry.json()["messages"]) == 30
    assert counts(admin, q) == (0, 30)
    human = sb("dlq", "resubmit", q, "--dry-run", "--count", "5")
    assert "would resubmit 5" in human.out and "Bad" in human.out

    refused = sb("dlq", "resubmit", q)
    assert refused.code == 2 and "--yes" in refused.err
    assert counts(admin, q) == (0, 30)

    part = sb("dlq", "resubmit", q, "--count", "10", "--batch", "4", "--yes", "--json")
    assert part.code == 0 and part.json()["resubmitted"] == 10, part
    assert counts(admin, q) == (10, 20)
    rest = sb("dlq", "resubmit", q, "--yes", "--progress")
    assert rest.code == 0 and "resubmitted 20 message(s)" in rest.out and "20/20" in rest.err
    assert counts(admin, q) == (30, 0)
    with client.get_queue_receiver(q) as r:
        back = r.peek_messages(50, sequence_number=0)
    assert {m.message_id for m in back} == ids
    assert all(m.sent_application_properties == {"k": "v"} and m.subject == "s" for m in back)
    assert sorted(str(m) for m in back) == sorted(f"m{i}" for i in range(30))

    empty = sb("dlq", "resubmit", q, "--yes")
    assert empty.code == 3 and "is empty" in empty.err


def test_resubmit_keeps_duplicates_dead_lettered(sb: Any, make_queue: Any, admin: Any, client: Any) -> None:
    q = make_queue(requires_duplicate_detection=True)
    dead_letter(client, q, 3, message_id=None)
    r = sb("dlq", "resubmit", q, "--yes", "--json")  # same message ids within the window: dropped
    assert r.code == 0 and r.json()["resubmitted"] == 0 and r.json()["kept_as_duplicates"] == 3, r
    assert "duplicate detection" in r.err
    assert counts(admin, q) == (0, 3)  # nothing lost
    r = sb("dlq", "resubmit", q, "--yes", "--new-message-id", "--json")
    assert r.json()["resubmitted"] == 3
    assert counts(admin, q) == (3, 0)


def test_purge(sb: Any, make_queue: Any, admin: Any, client: Any) -> None:
    q = make_queue()
    dead_letter(client, q, 12)
    dry = sb("dlq", "purge", q, "--dry-run")
    assert dry.code == 0 and "would purge 12" in dry.out
    assert counts(admin, q) == (0, 12)
    assert sb("dlq", "purge", q).code == 2  # no --yes, stdin not a terminal
    r = sb("dlq", "purge", q, "--count", "5", "--yes", "--json")
    assert r.code == 0 and r.json() == {"entity": q, "purged": 5}
    assert counts(admin, q) == (0, 7)
    assert sb("dlq", "purge", q, "--yes").code == 0
    assert counts(admin, q) == (0, 0)
    assert sb("dlq", "purge", q, "--yes").code == 3


def test_subscription_resubmit_needs_to(sb: Any, admin: Any, client: Any) -> None:
    t = "clidlqtopic"
    admin.create_topic(t)
    try:
        admin.create_subscription(t, "a")
        with client.get_topic_sender(t) as s:
            s.send_messages(ServiceBusMessage("x"))
        with client.get_subscription_receiver(t, "a") as r:
            (m,) = r.receive_messages(1, max_wait_time=2)
            r.dead_letter_message(m, reason="Bad")
        no_to = sb("dlq", "resubmit", f"{t}:a", "--yes")
        assert no_to.code == 2 and f"--to {t}" in no_to.err
        r = sb("dlq", "resubmit", f"{t}:a", "--to", t, "--yes", "--json")
        assert r.code == 0 and r.json()["resubmitted"] == 1, r
        sr = admin.get_subscription_runtime_properties(t, "a")
        assert (sr.active_message_count, sr.dead_letter_message_count) == (1, 0)
    finally:
        admin.delete_topic(t)


def test_resubmit_killed_midway_loses_nothing(url: str, make_queue: Any, admin: Any, client: Any) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tests.cli.conftest import ROOT
    from tests.conftest import eventually

    q = make_queue(lock_duration=1)
    n = 3000
    dead_letter(client, q, n)
    env = dict(os.environ, SBREDIS_URL=url, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sbredis", "dlq", "resubmit", q, "--yes", "--batch", "5", "--progress"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        eventually(lambda: counts(admin, q)[0] >= 50, timeout=30)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()
    active, dead = counts(admin, q)
    assert 0 < active < n and active + dead >= n  # copies sent and not yet completed count twice

    def bodies(sub_queue: Any) -> list[str]:
        with client.get_queue_receiver(q, sub_queue=sub_queue) as r:
            out: list[str] = []
            page = r.peek_messages(1000, sequence_number=0)
            while page:
                out += [str(m) for m in page]
                page = r.peek_messages(1000)
            return out

    assert set(bodies(None)) | set(bodies(ServiceBusSubQueue.DEAD_LETTER)) == {f"m{i}" for i in range(n)}


def test_resubmit_to_one_subscription(sb: Any, admin: Any, client: Any) -> None:
    """--to TOPIC:SUB stores the copies in that subscription only: not in the topic's other
    subscriptions, and not through its rules (`picky` matches nothing the topic sends)."""
    t = "clidlqone"
    admin.create_topic(t, enable_partitioning=True, partition_count=2)
    try:
        for name in ("a", "b"):
            admin.create_subscription(t, name)
        admin.create_subscription(t, "picky")
        admin.delete_rule(t, "picky", "$Default")  # no rule: the topic's sends never reach it
        with client.get_topic_sender(t) as s:
            s.send_messages([ServiceBusMessage(f"x{i}", message_id=f"x{i}", subject="s") for i in range(5)])
        with client.get_subscription_receiver(t, "a") as r:
            got: list[Any] = []
            while len(got) < 5:
                got += r.receive_messages(5 - len(got), max_wait_time=2)
            r.dead_letter_messages(got, reason="Bad")
        b_before = admin.get_subscription_runtime_properties(t, "b").active_message_count
        assert b_before == 5

        def subs() -> dict[str, tuple[int, int]]:
            out = {}
            for name in ("a", "b", "picky"):
                p = admin.get_subscription_runtime_properties(t, name)
                out[name] = (p.active_message_count, p.dead_letter_message_count)
            return out

        missing = sb("dlq", "resubmit", f"{t}:a", "--to", f"{t}:nope", "--yes")
        assert missing.code == 3 and "nope" in missing.err, missing
        assert subs() == {"a": (0, 5), "b": (5, 0), "picky": (0, 0)}  # nothing moved

        r = sb("dlq", "resubmit", f"{t}/Subscriptions/a", "--to", f"{t}/Subscriptions/picky", "--yes", "--json")
        assert r.code == 0 and r.json() == {
            "entity": f"{t}/Subscriptions/a",
            "to": f"{t}/Subscriptions/picky",
            "resubmitted": 5,
            "kept_as_duplicates": 0,
            "lock_lost": 0,
        }, r
        assert subs() == {"a": (0, 0), "b": (5, 0), "picky": (5, 0)}
        with client.get_subscription_receiver(t, "picky") as rc:
            copies = rc.peek_messages(10, sequence_number=0)
        assert sorted(str(m) for m in copies) == [f"x{i}" for i in range(5)]
        assert {m.message_id for m in copies} == {f"x{i}" for i in range(5)} and {m.subject for m in copies} == {"s"}
    finally:
        admin.delete_topic(t)


def test_resubmit_queue_dead_letters_to_a_subscription(sb: Any, make_queue: Any, admin: Any, client: Any) -> None:
    q = make_queue()
    dead_letter(client, q, 4)
    t = "clidlqinto"
    admin.create_topic(t)
    try:
        admin.create_subscription(t, "one")
        admin.create_subscription(t, "other")
        r = sb("dlq", "resubmit", q, "--to", f"{t}:one", "--count", "3", "--new-message-id", "--yes")
        assert r.code == 0 and f"resubmitted 3 message(s) of the dead-letter subqueue of {q} to {t}:one" in r.out, r
        assert counts(admin, q) == (0, 1)
        one = admin.get_subscription_runtime_properties(t, "one")
        other = admin.get_subscription_runtime_properties(t, "other")
        assert (one.active_message_count, other.active_message_count) == (3, 0)
    finally:
        admin.delete_topic(t)
