"""The gaps docs/memory.md lists for memory:// (fakeredis), as a user meets them. When fakeredis
closes one, its test fails: update the page (and this file)."""

from __future__ import annotations

import uuid

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import InvalidOperationError, ServiceBusError
from sbredis.management import ServiceBusAdministrationClient, SqlRuleFilter

pytest.importorskip("fakeredis")


def _url() -> str:
    return f"memory://gaps-{uuid.uuid4().hex}"


@pytest.mark.parametrize(("terms", "works"), [(300, True), (500, False)])
def test_deep_rule_programs(terms: int, works: bool) -> None:
    url = _url()
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_topic("t")
        admin.create_subscription("t", "s")
        admin.delete_rule("t", "s", "$Default")
        admin.create_rule("t", "s", "deep", filter=SqlRuleFilter("q" + "+1" * terms + f" = {terms}"))
    with ServiceBusClient.from_connection_string(url) as client, client.get_topic_sender("t") as sender:
        if works:
            sender.send_messages(ServiceBusMessage("x", application_properties={"q": 0}))
            with client.get_subscription_receiver("t", "s", max_wait_time=0.5) as receiver:
                assert [str(m) for m in receiver.receive_messages(5)] == ["x"]
        else:
            with pytest.raises(ServiceBusError, match="maximum recursion depth exceeded"):
                sender.send_messages(ServiceBusMessage("x", application_properties={"q": 0}))


def test_durability_options() -> None:
    url = _url()
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue("q")
    for options, body, error, words in (
        ({"wait_for_replicas": 1}, "x", ServiceBusError, "unknown command 'wait'"),
        ({"wait_for_aof": True}, "y", InvalidOperationError, "WAITAOF"),
    ):
        client = ServiceBusClient.from_connection_string(url, durability_timeout=0.1, **options)
        with client, client.get_queue_sender("q") as sender, pytest.raises(error, match=words):
            sender.send_messages(ServiceBusMessage(body))
    with ServiceBusClient.from_connection_string(url) as client, client.get_queue_receiver("q") as receiver:
        assert sorted(str(m) for m in receiver.peek_messages(10)) == ["x", "y"]  # stored all the same


def test_the_pages_table_lists_the_conformance_tests_left_out_on_memory() -> None:
    """docs/memory.md names every conformance test that runs on standalone but not on memory://."""
    import re
    import subprocess
    import sys
    from collections import Counter

    from tests.docs.samples import ROOT

    # -o addopts=: without it the inner pytest's coverage would erase the outer run's data files
    args = ["--collect-only", "-q", "-m", "conformance", "-p", "no:cacheprovider", "-o", "addopts="]
    args.append("tests/integration")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    runs = Counter(re.sub(r"\[.*", "", i) for i in ids)
    on_memory = {re.sub(r"\[.*", "", i) for i in ids if "memory" in i}
    left_out = {name.removeprefix("tests/integration/") for name in runs if name not in on_memory}
    page = (ROOT / "docs" / "memory.md").read_text()
    listed = set(re.findall(r"^\| `(test_\w+\.py::test_\w+)` \|", page, re.MULTILINE))
    assert left_out == listed, f"update the table in docs/memory.md: suite {sorted(left_out)}, page {sorted(listed)}"
