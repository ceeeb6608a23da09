"""Prompts on a terminal (stdin is a pseudo-terminal): confirmations and interactive settlement."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from tests.cli.conftest import ROOT, Run

pytestmark = pytest.mark.integration


def on_terminal(url: str, answers: str, *args: str) -> Run:
    """`sbredis ARGS` with a pseudo-terminal as stdin, `answers` typed into it."""
    master, slave = os.openpty()
    try:
        env = dict(os.environ, SBREDIS_URL=url, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(
            [sys.executable, "-m", "sbredis", *args],
            cwd=ROOT,
            env=env,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.write(master, answers.encode())
        out, err = proc.communicate(timeout=60)
        return Run(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    finally:
        os.close(master)
        os.close(slave)


def test_confirmation_no_and_yes(url: str, make_queue: Any, admin: Any) -> None:
    q = make_queue()
    no = on_terminal(url, "n\n", "entities", "delete", "queue", q)
    assert no.code == 1 and "[y/N]" in no.err and "not deleted" in no.err, no
    assert admin.get_queue(q).name == q
    yes = on_terminal(url, "y\n", "entities", "delete", "queue", q)
    assert yes.code == 0 and f"deleted queue {q}" in yes.out, yes
    assert [x.name for x in admin.list_queues()].count(q) == 0


def test_receive_asks_how_to_settle(url: str, make_queue: Any, admin: Any, client: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("first"), ServiceBusMessage("second")])
    r = on_terminal(url, "c\nd\n", "receive", q, "--count", "2")
    assert r.code == 0, r
    assert "first" in r.err and "[c]omplete" in r.err
    assert [line.split()[-2:] for line in r.out.splitlines()[1:]] == [["complete", "first"], ["dead-letter", "second"]]
    props = admin.get_queue_runtime_properties(q)
    assert (props.active_message_count, props.dead_letter_message_count) == (0, 1)
