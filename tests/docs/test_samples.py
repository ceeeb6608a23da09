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


@pytest.mark.parametrize("block", STANDALONE, ids=_ids(STANDALONE))
def test_sample(block: samples.Block, sample_env: dict[str, str]) -> None:
    samples.run_chain(block, {"__name__": "__main__"}, sample_env)


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
