"""Fault: `sbredis worker` processes SIGKILLed at random while they work through a queue.

Four worker processes (5 s locks, renewed while a handler runs, prefetch) take messages that a
sender adds while one worker is SIGKILLed every 2-5 s and replaced. Afterwards: nothing lost
(every message's handler finished and the queue is empty but for the poison message in the
dead-letter subqueue), redeliveries no more than the messages in flight or prefetched at the
kills, each redelivery with a higher delivery count, and the poison message dead-lettered after
max_delivery_count deliveries. CI: 5,000 messages, 5 kills; SBREDIS_BATTERY_SCALE=full: 100,000
and 20 kills. The report goes to bench/results/reliability/worker_kills.<scale>.json.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer
from tests.reliability.conftest import full_scale, scaled, write_report

pytestmark = [pytest.mark.integration, pytest.mark.reliability]
ROOT = Path(__file__).resolve().parents[2]
WORKERS, CONCURRENCY, PREFETCH = 4, 8, 16
MAX_DC = 10


@pytest.mark.timeout(1800)
def test_workers_sigkilled_at_random_lose_nothing(redis_server: RedisServer) -> None:
    total = scaled(5_000, 100_000)
    min_kills = scaled(5, 20)
    seed = int(os.environ.get("SBREDIS_BATTERY_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    q = "kills-" + uuid.uuid4().hex[:8]
    log_key = "battery-log-" + q
    url = redis_server.url
    raw = redis.Redis.from_url(url, decode_responses=True)
    admin = ServiceBusAdministrationClient.from_connection_string(url)
    admin.create_queue(
        q, enable_partitioning=True, partition_count=4, lock_duration=timedelta(seconds=5), max_delivery_count=MAX_DC
    )
    env = dict(
        os.environ,
        SBREDIS_BATTERY_REDIS=url,
        SBREDIS_BATTERY_LOG=log_key,
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    cmd = [sys.executable, "-m", "sbredis", "worker", "tests.reliability.battery_handlers:handle", "--url", url]
    cmd += ["--entity", q, "--concurrency", str(CONCURRENCY), "--prefetch", str(PREFETCH), "--loglevel", "ERROR"]

    def spawn() -> subprocess.Popen[bytes]:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    duration = min_kills * 3.5  # the kills take about this long
    # handlers slow enough that the workers are busy (a backlog, full prefetch) through the kills
    env["SBREDIS_BATTERY_WORK"] = str(round(WORKERS * CONCURRENCY * duration / total, 4))
    workers = [spawn() for _ in range(WORKERS)]
    sent = acked = 0
    send_errors: list[BaseException] = []

    def produce() -> None:
        nonlocal sent, acked
        try:
            with ServiceBusClient.from_connection_string(url) as c, c.get_queue_sender(q) as s:
                s.send_messages(ServiceBusMessage("poison-0"))
                sent += 1
                acked += 1
                start, batch = time.monotonic(), 100
                for i in range(0, total - 1, batch):
                    msgs = [ServiceBusMessage(f"m{j}") for j in range(i, min(i + batch, total - 1))]
                    sent += len(msgs)
                    s.send_messages(msgs)
                    acked += len(msgs)
                    ahead = start + duration / 2 * (i + batch) / total - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
        except BaseException as e:  # reported by the main thread
            send_errors.append(e)

    producer = threading.Thread(target=produce, daemon=True)
    t0 = time.monotonic()
    producer.start()
    kills: list[dict[str, Any]] = []
    try:
        while producer.is_alive() or len(kills) < min_kills:
            time.sleep(rng.uniform(2, 5))
            i = rng.randrange(WORKERS)
            victim = workers[i]
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            kills.append({"at_s": round(time.monotonic() - t0, 2), "pid": victim.pid})
            workers[i] = spawn()
        producer.join(60)
        assert not send_errors, send_errors
        # drain: the last kills' messages come back when their 5 s locks elapse
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            props = admin.get_queue_runtime_properties(q)
            if props.active_message_count == 0 and props.dead_letter_message_count >= 1:
                break
            time.sleep(0.5)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(40)
            except subprocess.TimeoutExpired:
                w.kill()
    elapsed = time.monotonic() - t0

    starts: dict[str, list[int]] = defaultdict(list)
    done: dict[str, int] = defaultdict(int)
    running: dict[str, int] = defaultdict(int)  # pid -> handlers started and not finished
    for line in raw.lrange(log_key, 0, -1):
        parts = line.split()
        if parts[0] == "done":
            done[parts[1]] += 1
            running[parts[2]] -= 1
        else:
            starts[parts[0]].append(int(parts[1]))
            running[parts[2]] += not parts[0].startswith("poison")
    for k in kills:
        k["handlers_running"] = running[str(k["pid"])]
    props = admin.get_queue_runtime_properties(q)
    with (
        ServiceBusClient.from_connection_string(url) as c,
        c.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq,
    ):
        dead = dlq.peek_messages(100, sequence_number=0)
    bodies = [f"m{j}" for j in range(total - 1)]
    lost = [b for b in bodies if done[b] == 0]
    handled = sum(len(v) for b, v in starts.items() if b != "poison-0")
    duplicates = handled - (total - 1)
    bound = len(kills) * (CONCURRENCY + PREFETCH)
    not_increasing = [b for b, dcs in starts.items() if any(x >= y for x, y in itertools.pairwise(dcs))]
    report = {
        "seed": seed,
        "redis": "redis-server (AOF off: the server is not killed here)",
        "workers": WORKERS,
        "concurrency": CONCURRENCY,
        "prefetch": PREFETCH,
        "lock_duration_s": 5,
        "max_delivery_count": MAX_DC,
        "handler_work_s": float(env["SBREDIS_BATTERY_WORK"]),
        "sent": sent,
        "acknowledged": acked,
        "completed": total - 1 - props.active_message_count - (len(dead) - 1),
        "lost": len(lost),
        "duplicated": duplicates,
        "duplicate_bound": bound,
        "dead_lettered": len(dead),
        "max_delivery_count_seen": max(max(v) for v in starts.values()),
        "kills": len(kills),
        "kill_times": kills,
        "elapsed_s": round(elapsed, 1),
        "full_scale": full_scale(),
    }
    print(write_report("worker_kills", report))
    assert len(kills) >= min_kills
    assert lost == [], f"{len(lost)} messages were never completed: {lost[:10]}"
    assert props.active_message_count == 0 and props.scheduled_message_count == 0
    assert [str(m) for m in dead] == ["poison-0"], [str(m) for m in dead]
    assert (
        dead[0].dead_letter_reason == "MaxDeliveryCountExceeded" and dead[0].delivery_count == MAX_DC - 1
    )  # deliveries before this one
    assert 0 <= duplicates <= bound, report
    assert not_increasing == [], f"delivery counts that did not grow on redelivery: {not_increasing[:5]}"
    raw.delete(log_key)
    admin.delete_queue(q)
    admin.close()
