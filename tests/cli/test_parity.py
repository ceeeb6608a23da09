"""The command line's parity and safety: --url before or after the command, no password in any
usage error, a hint for memory:// without fakeredis, --version, the transfer dead-letter subqueue
in every command that shows or moves messages, purge of active messages, and forwarding to a
missing entity refused at creation."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from typing import Any

import pytest

from sbredis import ServiceBusMessage, __version__
from tests.cli.conftest import ROOT, Run, run_cli

pytestmark = pytest.mark.integration
PASSWORD = "Pw-n0t-f0r-y0ur-3yes"
SECRET_URL = f"redis://user:{PASSWORD}@127.0.0.1:1/0"


def test_url_before_or_after_the_command(url: str, make_queue: Any) -> None:
    q = make_queue()
    for args in (
        ("--url", url, "entities", "list", "--json"),
        ("entities", "list", "--url", url, "--json"),
        ("entities", "--url", url, "list", "--json"),
        (f"--url={url}", "entities", "list", "--json"),
    ):
        r = run_cli(*args)
        assert r.code == 0, (args, r)
        assert q in [row["name"] for row in r.json()]
    # after the command wins over before it, and over $SBREDIS_URL
    r = run_cli("--url", SECRET_URL, "entities", "list", "--url", url, "--json", url=SECRET_URL)
    assert r.code == 0 and q in r.out, r
    assert run_cli("entities", "list").code == 2  # no URL anywhere
    # the worker parses its own arguments: a --url before it is handed over
    r = run_cli("--url", url, "worker", "tests.no_such_module:app", "--entity", q)
    assert r.code != 0 and "give --url" not in r.err and "no_such_module" in r.err, r


@pytest.mark.parametrize(
    "args",
    [
        ("--url", SECRET_URL, "entitie", "list"),  # a typo in the command quotes nothing secret, but:
        ("--urll", SECRET_URL, "entities", "list"),  # argparse takes the URL for the command
        ("entities", "list", "--urll", SECRET_URL),  # unrecognized arguments: --urll redis://...
        ("entities", "lst", "--url", SECRET_URL),
        ("peek", "--url", SECRET_URL),  # missing ENTITY: the usage line
        ("peek", "q", "--count", "x", "--url", SECRET_URL),
        ("--url", SECRET_URL, "entities", "list"),  # the connection error
        ("--url", SECRET_URL, "--help"),
        ("worker", "--urll", SECRET_URL, "x:y"),  # the worker has a parser of its own
        ("--url", SECRET_URL, "worker", "--bogus"),
    ],
)
def test_no_password_in_usage_errors(args: tuple[str, ...]) -> None:
    r = run_cli(*args)
    assert r.code in (0, 1, 2), r
    assert PASSWORD not in r.out + r.err, r
    assert "Traceback" not in r.err
    if r.code == 2:
        assert "usage: sbredis" in r.err


def test_usage_error_shows_the_masked_url() -> None:
    r = run_cli("--urll", SECRET_URL, "entities", "list")
    assert r.code == 2 and "redis://user:***@127.0.0.1:1/0" in r.err, r


def test_version() -> None:
    r = run_cli("--version")
    assert r.code == 0 and r.out.strip() == f"sbredis {__version__}", r


def test_memory_without_fakeredis_is_one_line() -> None:
    hide = "import sys; sys.modules['fakeredis'] = None; from sbredis.cli import main; sys.exit(main())"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SBREDIS_URL", None)
    for args in (["--url", "memory://x", "entities", "list"], ["stats", "--url", "memory://x"]):
        proc = subprocess.run(
            [sys.executable, "-c", hide, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
        r = Run(proc)
        assert r.code == 2, r
        assert r.err.strip() == "sbredis: memory:// needs the memory extra: pip install 'sbredis[memory]'", r
    assert "state lasts one command" in run_cli("--help").out
    assert "state lasts one command" in " ".join(run_cli("peek", "--help").out.split())


def test_dashboard_without_its_extra_is_one_line(url: str) -> None:
    hide = "import sys; sys.modules['starlette'] = None; from sbredis.cli import main; sys.exit(main())"
    env = dict(os.environ, PYTHONPATH=str(ROOT), SBREDIS_URL=url)
    proc = subprocess.run(
        [sys.executable, "-c", hide, "dashboard", "--port", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    r = Run(proc)
    assert r.code == 2 and "pip install 'sbredis[dashboard]'" in r.err and "Traceback" not in r.err, r
    assert len(r.err.strip().splitlines()) == 1


def test_memory_with_fakeredis_works() -> None:
    r = run_cli("--url", "memory://cli", "entities", "create", "queue", "q")
    assert r.code == 0, r


def test_forwarding_to_a_missing_entity_is_refused(sb: Any, admin: Any) -> None:
    name = "fwd-" + uuid.uuid4().hex[:8]
    r = sb("entities", "create", "queue", name, "--set", f"forward_to={name}-missing")
    assert r.code == 3 and f"'{name}-missing' to forward to was not found" in r.err, r
    r = sb("entities", "create", "queue", name, "--set", f"forward_dead_lettered_messages_to={name}-missing")
    assert r.code == 3, r
    assert sb("entities", "show", name).code == 3  # not created
    admin.create_topic(name + "-t")
    try:
        r = sb("entities", "create", "subscription", name + "-t", "s", "--set", f"forward_to={name}-missing")
        assert r.code == 3 and "to forward to was not found" in r.err, r
        assert sb("entities", "create", "queue", name, "--set", f"forward_to={name}-t").code == 0
        assert sb("entities", "create", "subscription", name + "-t", "s", "--set", f"forward_to={name}").code == 0
    finally:
        admin.delete_topic(name + "-t")
        admin.delete_queue(name)


@pytest.fixture()
def lost_topic(admin: Any, client: Any) -> Any:
    """A topic whose subscription `lost` forwards to a queue deleted after its creation: 3 messages
    published to the topic end in the subscription's transfer dead-letter subqueue."""
    topic, gone, back = ("t-" + uuid.uuid4().hex[:8]), ("gone-" + uuid.uuid4().hex[:8]), ("b-" + uuid.uuid4().hex[:8])
    admin.create_topic(topic)
    admin.create_queue(gone)
    admin.create_queue(back)
    admin.create_subscription(topic, "lost", forward_to=gone)
    admin.delete_queue(gone)
    with client.get_topic_sender(topic) as s:
        s.send_messages([ServiceBusMessage(f"m{i}", application_properties={"i": i}) for i in range(3)])
    yield topic, back
    admin.delete_topic(topic)
    admin.delete_queue(back)


def test_transfer_dead_letter_subqueue(sb: Any, admin: Any, client: Any, lost_topic: Any) -> None:
    topic, back = lost_topic
    sub = f"{topic}/Subscriptions/lost"
    listed = {row["name"]: row for row in sb("entities", "list", "--json").json()}
    assert listed[sub]["transfer_dead_letter"] == 3 and listed[sub]["active"] == 0
    table = sb("entities", "list").out.splitlines()
    assert "TRANSFER_DEAD_LETTER" in table[0].split()
    stats = sb("stats", topic, "--json").json()["entities"]
    assert [r["transfer_dead_letter"] for r in stats if r["name"] == sub] == [3]
    assert "TRANSFER_DEAD_LETTER" in sb("stats", topic).out

    assert sb("peek", sub).code == 3  # nothing active
    peek = sb("peek", sub, "--transfer-dlq")
    assert peek.code == 0 and "MessagingEntityNotFound" in peek.out and "m0" in peek.out, peek
    assert [m["body"] for m in sb("peek", f"{topic}:lost", "--transfer-dlq", "--json").json()] == ["m0", "m1", "m2"]
    assert sb("peek", sub, "--dlq", "--transfer-dlq").code == 2  # one subqueue at a time

    got = sb("receive", sub, "--transfer-dlq", "--settle", "abandon", "--json")
    assert got.code == 0 and got.json()[0]["dead_letter_reason"] == "MessagingEntityNotFound", got

    dry = sb("dlq", "resubmit", sub, "--transfer-dlq", "--to", back, "--dry-run")
    assert dry.code == 0 and "would resubmit 3 transfer dead-lettered message(s)" in dry.out, dry
    r = sb("dlq", "resubmit", sub, "--transfer-dlq", "--to", back, "--yes")
    assert r.code == 0 and "resubmitted 3 message(s) of the transfer dead-letter subqueue" in r.out, r
    assert admin.get_queue_runtime_properties(back).active_message_count == 3
    assert admin.get_subscription_runtime_properties(topic, "lost").transfer_dead_letter_message_count == 0
    empty = sb("dlq", "purge", sub, "--transfer-dlq", "--yes")
    assert empty.code == 3 and "transfer dead-letter subqueue" in empty.err


def test_purge_active_messages(sb: Any, make_queue: Any, admin: Any, client: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=4)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(25)])
        s.schedule_messages(ServiceBusMessage("later"), __import__("datetime").datetime(2999, 1, 1))
    refused = sb("purge", q)
    assert refused.code == 2 and "refusing without --yes" in refused.err and "25 active message(s)" in refused.err
    no = sb("purge", q, stdin="n\n")
    assert no.code == 2  # stdin is not a terminal: still refused
    dry = sb("purge", q, "--dry-run")
    assert dry.code == 0 and "would purge 25 active message(s)" in dry.out
    part = sb("purge", q, "--count", "5", "--yes", "--json")
    assert part.code == 0 and part.json() == {"entity": q, "purged": 5}, part
    assert admin.get_queue_runtime_properties(q).active_message_count == 20
    rest = sb("purge", q, "--yes")
    assert rest.code == 0 and "purged 20 active message(s)" in rest.out
    p = admin.get_queue_runtime_properties(q)
    assert (p.active_message_count, p.scheduled_message_count) == (0, 1)  # scheduled ones stay
    again = sb("purge", q, "--yes")
    assert again.code == 3 and "has no active message" in again.err
