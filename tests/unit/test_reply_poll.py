"""How long a script call polls for its reply (_core/reply_poll.py): each kind of call polls while
its last reply came within the limit and the calling thread has not been waiting for a CPU."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sbredis._core.reply_poll import (
    DEFAULT_REPLY_POLL_TIME,
    ENV,
    MAX_REPLY_POLL_TIME,
    CpuWait,
    ReplyPoll,
    reply_poll_limit,
)
from sbredis.exceptions import InvalidArgumentError


def never_contended() -> CpuWait:
    cpu = CpuWait()
    cpu.SHARE = 2.0  # a thread cannot wait for a CPU for twice the time that passed
    return cpu


def test_a_kind_polls_until_a_reply_comes_late_and_again_once_one_comes_in_time() -> None:
    p = ReplyPoll(0.001, never_contended())
    now = time.monotonic
    assert p.budget(("complete", 3), now()) == 0.001
    p.took(("complete", 3), 0.0004)
    assert p.budget(("complete", 3), now()) == 0.001
    p.took(("complete", 3), 0.002)  # late: the next call sleeps at once
    assert p.budget(("complete", 3), now()) == 0.0
    assert p.budget(("complete", 3), now()) == 0.0  # until a reply comes in time
    assert p.budget(("receive", 5), now()) == 0.001  # other kinds are not affected
    p.took(("complete", 3), 0.001)  # at the limit is in time
    assert p.budget(("complete", 3), now()) == 0.001


def test_a_limit_of_zero_never_polls() -> None:
    p = ReplyPoll(0.0, never_contended())
    assert p.budget("send", time.monotonic()) == 0.0
    p.took("send", 0.0)
    assert p.budget("send", time.monotonic()) == 0.0


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux: the thread's CPU is chosen")
def test_a_thread_sharing_its_cpu_with_a_busy_process_is_contended_and_does_not_poll() -> None:
    """The test's thread and a busy process pinned to one CPU: the thread waits for it about half
    the time, and calls made from it sleep at once."""
    cpu = CpuWait()
    if cpu.contended(time.monotonic()) is False and not cpu.readable:
        pytest.fail(f"{CpuWait.PATH} cannot be read on this Linux machine")
    one = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    busy = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{one}}})\nwhile True: pass"])
    try:
        os.sched_setaffinity(0, {one})
        p = ReplyPoll(0.001, cpu)
        deadline = time.monotonic() + 10
        budget = p.limit
        while budget and time.monotonic() < deadline:  # a window or two of sharing the CPU
            budget = p.budget("send", time.monotonic())
        assert budget == 0.0
        assert cpu.contended(time.monotonic())
    finally:
        busy.kill()
        busy.wait()
        os.sched_setaffinity(0, before)


def test_without_the_schedulers_statistics_a_thread_is_never_contended() -> None:
    cpu = CpuWait()
    cpu.PATH = "/nonexistent/schedstat"
    assert cpu.contended(time.monotonic()) is False
    assert cpu.readable is False
    assert ReplyPoll(0.001, cpu).budget("send", time.monotonic()) == 0.001


def test_the_limit_comes_from_the_keyword_the_environment_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert reply_poll_limit() == DEFAULT_REPLY_POLL_TIME
    assert 0 < DEFAULT_REPLY_POLL_TIME <= MAX_REPLY_POLL_TIME <= 0.01
    monkeypatch.setenv(ENV, "0")
    assert reply_poll_limit() == 0.0
    assert reply_poll_limit(0.001) == 0.001  # the keyword wins
    for bad in ("fast", "nan", "-1", "0.5"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(InvalidArgumentError, match=ENV):
            reply_poll_limit()
