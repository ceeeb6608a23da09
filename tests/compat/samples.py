"""Run one ported azure-servicebus sample against a real redis-server (tests/compat/test_samples.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.compat.port import port_source

ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "RootManageSharedAccessKey", "compat-" + uuid.uuid4().hex[:12]
SAMPLE_TIMEOUT = 90.0


def add_acl_user(url: str) -> None:
    """The Service Bus key name and key of the connection strings, as a Redis ACL user."""
    redis.Redis.from_url(url).execute_command("ACL", "SETUSER", USER, "on", f">{PASSWORD}", "~*", "&*", "+@all")


@dataclass
class Outcome:
    returncode: int
    output: str


# the environment has one subscription: session-enabled when the sample lists its sessions or
# receives from it by session (the SDK's samples assume a namespace set up for what they show)
_SUBSCRIPTION_SESSIONS = re.compile(r"list_subscription_sessions\(|get_subscription_receiver\([^)]*session_id")


def uses_sessions(source: str) -> bool:
    """Whether a sample's subscription must be session-enabled (the same rule for every sample)."""
    return _SUBSCRIPTION_SESSIONS.search(source) is not None


def run_sample(path: Path, url: str, workdir: Path) -> Outcome:
    """Port `path`, create the entities its environment names, run it, and return what happened."""
    from sbredis.management import ServiceBusAdministrationClient

    source = path.read_text()
    port = url.rsplit(":", 1)[1].split("/", 1)[0]
    tag = uuid.uuid4().hex[:8]
    names = {
        "SERVICEBUS_QUEUE_NAME": f"queue-{tag}",
        "SERVICEBUS_SESSION_QUEUE_NAME": f"sessions-{tag}",
        "SERVICEBUS_TOPIC_NAME": f"topic-{tag}",
        "SERVICEBUS_SUBSCRIPTION_NAME": f"sub-{tag}",
    }
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(names["SERVICEBUS_QUEUE_NAME"])
        admin.create_queue(names["SERVICEBUS_SESSION_QUEUE_NAME"], requires_session=True)
        admin.create_topic(names["SERVICEBUS_TOPIC_NAME"])
        admin.create_subscription(
            names["SERVICEBUS_TOPIC_NAME"],
            names["SERVICEBUS_SUBSCRIPTION_NAME"],
            requires_session=uses_sessions(source),
        )
    env = dict(os.environ)
    env.update(names)
    env.update(
        SERVICEBUS_FULLY_QUALIFIED_NAMESPACE=f"127.0.0.1:{port}",
        SERVICEBUS_CONNECTION_STR=(
            f"Endpoint=sb://127.0.0.1:{port}/;SharedAccessKeyName={USER};SharedAccessKey={PASSWORD};"
            "UseDevelopmentEmulator=true"
        ),
        SERVICEBUS_SAS_POLICY=USER,
        SERVICEBUS_SAS_KEY=PASSWORD,
        SERVICEBUS_SESSION_ID=f"session-{tag}",
        SBREDIS_COMPAT_USER=USER,
        SBREDIS_COMPAT_PASSWORD=PASSWORD,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")])),
    )
    ported = workdir / path.name
    ported.write_text(port_source(source))
    try:
        done = subprocess.run(
            [sys.executable, str(ported)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=SAMPLE_TIMEOUT,
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return Outcome(-1, out + f"\n(timed out after {SAMPLE_TIMEOUT} s)")
    return Outcome(done.returncode, done.stdout[-3000:] + done.stderr[-3000:])
