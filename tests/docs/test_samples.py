"""Every code sample of the documentation runs (tests/docs/samples.py says how samples are found).

Python samples run in this process, each in a fresh namespace as ``__main__``, with ``SBREDIS_URL``
naming a real redis-server (a database of their own, emptied before and after each sample) or, for
samples tagged ``cluster``, the suite's 3-primary Redis Cluster (entities a sample creates there are
deleted after it). Shell samples tagged ``shell`` run with bash. Spark samples run in
tests/spark/test_docs_samples.py (they need the Spark session).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.docs import samples

pytestmark = pytest.mark.integration

SAMPLE_DB = 15  # the samples' own database on the suite's server


def _ids(blocks: list[samples.Block]) -> list[str]:
    return [b.id for b in blocks]


STANDALONE = samples.runnable(without=("cluster", "spark"))
CLUSTER = samples.runnable(with_tag="cluster")


@pytest.fixture()
def sample_env(redis_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    url = f"redis://127.0.0.1:{redis_server.port}/{SAMPLE_DB}"
    raw = redis.Redis.from_url(url)
    raw.flushdb()
    monkeypatch.setenv("SBREDIS_URL", url)
    monkeypatch.chdir(samples.ROOT)
    yield {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(samples.ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    raw.flushdb()
    raw.close()


def _peek(url: str, queue: str, **kwargs: Any) -> list[Any]:
    from sbredis import ServiceBusClient

    with ServiceBusClient.from_connection_string(url) as client, client.get_queue_receiver(queue, **kwargs) as r:
        return list(r.peek_messages(10))


def _check_paired(ns: dict[str, Any], printed: str, url: str) -> None:
    paired = ns["paired"]
    # the primary was up: nothing failed over, the message is in the primary's queue
    assert list(paired.unavailable_entities) == [] and paired.metrics.backlog_messages_sent == 0
    assert printed == f"{paired.unavailable_entities} 0\n"
    assert [str(m) for m in _peek(url, "orders")] == ["hello"]


def _check_rules(ns: dict[str, Any], printed: str, url: str) -> None:
    import json

    block = next(b for b in STANDALONE if b.id == "docs/rules.md:12")
    shown = re.search(r"program = compile_filter\(f\)  # '(.*)'", block.code)
    assert shown is not None
    assert ns["program"] == shown.group(1)  # the compiled program the page shows
    assert ns["compile_filter"](ns["filter_from_dict"](json.loads(json.dumps(ns["stored"])))) == ns["program"]
    steps = json.loads(ns["action"])[1:]
    assert [step[0] for step in steps] == ["set", "rm"] and steps[1] == ["rm", ["p", "priority"]]


def _check_topics(ns: dict[str, Any], printed: str, url: str) -> None:
    from sbredis import ServiceBusClient
    from sbredis.management import ServiceBusAdministrationClient

    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        assert admin.get_subscription_runtime_properties("orders", "all").total_message_count == 0  # completed
    # the eu copy went through the rule's action and was forwarded to eu-orders
    with (
        ServiceBusClient.from_connection_string(url) as client,
        client.get_queue_receiver("eu-orders", max_wait_time=5) as r,
    ):
        [copy] = r.receive_messages(max_message_count=10, max_wait_time=5)
    assert str(copy) == "o-1" and copy.sent_application_properties == {"region": "eu", "routed": True}


def _check_readme(ns: dict[str, Any], printed: str, url: str) -> None:
    from sbredis.management import ServiceBusAdministrationClient

    assert printed == "[]\n"  # nothing dead-lettered
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        props = admin.get_queue_runtime_properties("orders")
    assert props.total_message_count == 0 and props.dead_letter_message_count == 0  # "hi" was completed


# what a sample with no output block on its page must leave behind (its id: file and first code line)
SAMPLE_CHECKS = {
    "docs/paired-namespaces.md:10": _check_paired,
    "docs/rules.md:12": _check_rules,
    "docs/topics.md:4": _check_topics,
    "README.md:35": _check_readme,
}


@pytest.mark.parametrize("block", STANDALONE, ids=_ids(STANDALONE))
def test_sample(block: samples.Block, sample_env: dict[str, str]) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    printed = samples.run_chain(block, namespace, sample_env)
    if block.id in SAMPLE_CHECKS:
        SAMPLE_CHECKS[block.id](namespace, printed, sample_env["SBREDIS_URL"])


def test_every_sample_has_an_oracle() -> None:
    """A sample is checked by its page's output block, by being a test module, or by SAMPLE_CHECKS."""
    unchecked = {
        b.id for b in STANDALONE if not any(c.output is not None or "pytest" in c.tags for c in samples.chain(b))
    }
    assert unchecked == set(SAMPLE_CHECKS), "add an output block to the page, or a check to SAMPLE_CHECKS"


def _entities(url: str) -> set[tuple[str, str]]:
    from sbredis.management import ServiceBusAdministrationClient

    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        return {("queue", q.name) for q in admin.list_queues()} | {("topic", t.name) for t in admin.list_topics()}


@pytest.mark.cluster
@pytest.mark.parametrize("block", CLUSTER, ids=_ids(CLUSTER))
def test_cluster_sample(block: samples.Block, redis_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from sbredis.management import ServiceBusAdministrationClient

    url = str(redis_cluster.url)
    monkeypatch.setenv("SBREDIS_URL", url)
    before = _entities(url)
    try:
        samples.run_chain(block, {"__name__": "__main__"}, dict(os.environ))
    finally:
        with ServiceBusAdministrationClient.from_connection_string(url) as admin:
            for kind, name in sorted(_entities(url) - before):
                (admin.delete_queue if kind == "queue" else admin.delete_topic)(name)


def test_every_fence_is_known() -> None:
    """A python block always runs; a shell block either runs (tagged shell) or is shown only. Spark
    blocks are collected by tests/spark/test_docs_samples.py."""
    seen = set(_ids(STANDALONE)) | set(_ids(CLUSTER)) | set(_ids(samples.runnable(with_tag="spark")))
    for b in samples.all_blocks():
        if b.lang in samples.RUNNABLE and "continues" not in b.tags:
            assert b.id in seen, b.id
        assert b.lang, f"{b.id}: give the fence a language (python, bash, text, yaml, ...)"


def test_samples_read_the_url_from_the_environment() -> None:
    """A sample that talks to Redis takes its URL from SBREDIS_URL (or memory://), so the tests run it
    against their own server, never a developer's Redis on the default port."""
    for b in samples.all_blocks():
        if b.lang in samples.RUNNABLE and re.search(r"rediss?(\+cluster)?://", b.code) and "SBREDIS_URL" not in b.code:
            pytest.fail(f"{b.id}: read the URL with os.environ.get('SBREDIS_URL', ...)")


def test_doc_files_found() -> None:
    names = {p.relative_to(samples.ROOT).as_posix() for p in samples.doc_files()}
    assert {"README.md", "docs/index.md", "docs/quickstart.md"} <= names
    assert all(Path(samples.ROOT, n).is_file() for n in names)
