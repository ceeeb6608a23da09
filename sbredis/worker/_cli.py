"""`sbredis worker TARGET --entity NAME ...`: run a handler (module:function) or an App (module:app)."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Any

from sbredis.exceptions import ServiceBusError

from ._app import App
from ._processor import ExitCode, Worker
from ._retry import Retry

EPILOG = """\
exit codes:
  0    stopped (SIGTERM, SIGINT) and every handler in flight finished within the grace period
  1    fatal error (the entity does not exist, --session on an entity without sessions or
       without it on one that requires them, Redis failed in a way retrying cannot fix)
  2    usage: bad arguments, a TARGET that cannot be imported
  3    the grace period ended with handlers still running: their messages were abandoned
  130  a second SIGINT forced the stop: the messages in flight were abandoned
"""


class UsageError(Exception):
    """A TARGET or option the worker cannot use."""


def _parser() -> argparse.ArgumentParser:
    from sbredis.cli._registry import Parser  # masks URL passwords in usage errors, as every sbredis command

    p = Parser(
        prog="sbredis worker",
        description="Run a handler on every message of a queue or subscription: success completes, an exception "
        "abandons (or dead-letters, for --dead-letter-on types); locks are renewed while it runs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", help="module:function (gets a ServiceBusReceivedMessage) or module:app (an sbredis App)")
    p.add_argument("--entity", help="the queue, or the topic with --subscription (optional for an App using one queue)")
    p.add_argument("--subscription", help="process this subscription of the topic --entity")
    p.add_argument(
        "--session",
        action="store_true",
        help="the entity requires sessions: process up to --concurrency sessions at once, each one message "
        "at a time in order",
    )
    p.add_argument(
        "--session-idle-timeout",
        type=float,
        default=1.0,
        help="seconds without messages after which a session is let go of (default 1)",
    )
    p.add_argument("--url", default=os.environ.get("SBREDIS_URL"), help="redis://, rediss:// or unix:// ($SBREDIS_URL)")
    p.add_argument("--concurrency", type=int, default=8, help="handlers running at once (default 8)")
    p.add_argument(
        "--prefetch",
        type=int,
        help="messages fetched ahead (default: sized to the handlers' pace, about a second of their work, "
        "at most 256; 16 for sessions)",
    )
    p.add_argument(
        "--dead-letter-on",
        action="append",
        default=[],
        metavar="module:Exception",
        help="dead-letter instead of abandoning when the handler raises this type (repeatable)",
    )
    p.add_argument("--middleware", action="append", default=[], metavar="module:object", help="(repeatable)")
    p.add_argument(
        "--retry-backoff",
        type=float,
        metavar="SECONDS",
        help="retry a failed message after this delay, growing with each delivery (sbredis.worker.Retry); "
        "without it, or another --retry option, a failed message is available again at once",
    )
    p.add_argument("--retry-factor", type=float, help="each retry waits this many times longer (default 2)")
    p.add_argument("--retry-max-backoff", type=float, metavar="SECONDS", help="the longest delay (default 600)")
    p.add_argument("--retry-jitter", type=float, help="0 to 1: the share of the delay drawn at random (default 0)")
    p.add_argument("--max-retries", type=int, help="retries before dead-lettering (reason MaxRetriesExceeded)")
    p.add_argument("--grace-period", type=float, default=30.0, help="seconds to finish in-flight work on SIGTERM")
    p.add_argument(
        "--max-lock-renewal", type=float, default=300.0, help="seconds a message's lock is renewed at most (300)"
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve this worker's client metrics for Prometheus on 127.0.0.1:PORT (sbredis[prometheus])",
    )
    p.add_argument(
        "--otel",
        action="store_true",
        help="trace with the global OpenTelemetry tracer provider (sbredis[otel]; configure the SDK, "
        "e.g. with opentelemetry-instrument)",
    )
    p.add_argument("--loglevel", default="INFO")
    return p


def load(spec: str) -> Any:
    """The object `module:attr.path` names (the working directory is importable, as for Celery).

    Raises:
        UsageError: not module:attr, or it cannot be imported.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{spec!r} is not module:name")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise UsageError(f"cannot load {spec!r}: {e}") from e
    return obj


RETRY_OPTIONS = {
    "retry_backoff": "backoff",
    "retry_factor": "factor",
    "retry_max_backoff": "max_backoff",
    "retry_jitter": "jitter",
    "max_retries": "max_retries",
}


def retry_policy(args: argparse.Namespace) -> Retry | None:
    """The Retry the --retry-* and --max-retries options describe (None when none is given).

    Raises:
        InvalidArgumentError: a bad value.
    """
    given = {field: getattr(args, opt) for opt, field in RETRY_OPTIONS.items() if getattr(args, opt) is not None}
    return Retry(**given) if given else None


def build(args: argparse.Namespace) -> Worker:
    """The Worker the arguments describe.

    Raises:
        UsageError, InvalidArgumentError.
    """
    target = load(args.target)
    if not args.url and not isinstance(target, App):
        raise UsageError("give --url (or set SBREDIS_URL)")
    dead_letter_on = []
    for spec in args.dead_letter_on:
        kind = load(spec)
        if not (isinstance(kind, type) and issubclass(kind, BaseException)):
            raise UsageError(f"{spec!r} is not an exception type")
        dead_letter_on.append(kind)
    options: dict[str, Any] = dict(
        subscription=args.subscription,
        session=args.session,
        session_idle_timeout=args.session_idle_timeout,
        concurrency=args.concurrency,
        prefetch=args.prefetch,
        dead_letter_on=dead_letter_on,
        grace_period=args.grace_period,
        max_lock_renewal_duration=args.max_lock_renewal,
        middleware=[load(spec) for spec in args.middleware],
        retry=retry_policy(args),
    )
    if isinstance(target, App):
        if args.url:
            target.url = args.url
        try:
            return target.worker(args.entity, **options)
        except ValueError as e:  # no single entity
            raise UsageError(str(e)) from e
    if not callable(target):
        raise UsageError(f"{args.target!r} is neither a function nor an sbredis App")
    if not args.entity:
        raise UsageError("give --entity (the queue to work on)")
    return Worker(args.url, target, entity=args.entity, **options)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.loglevel).upper(), logging.INFO),
        format="[%(asctime)s %(levelname)s %(name)s] %(message)s",
    )
    try:
        worker = build(args)
        observe(args)
    except (UsageError, ServiceBusError) as e:
        message = e.message if isinstance(e, ServiceBusError) else str(e)
        print(f"sbredis worker: {message}", file=sys.stderr)
        return ExitCode.USAGE
    except OSError as e:
        print(f"sbredis worker: cannot serve metrics on 127.0.0.1:{args.metrics_port}: {e.strerror}", file=sys.stderr)
        return ExitCode.ERROR
    return worker.run()


def observe(args: argparse.Namespace) -> None:
    """--otel and --metrics-port (docs/observability.md).

    Raises:
        UsageError: the extra is not installed, or a bad port.  OSError: the port cannot be bound.
    """
    try:
        if args.otel:
            from sbredis.observability import otel

            otel.enable()
        if args.metrics_port is not None:
            if not 0 <= args.metrics_port <= 65535:
                raise UsageError("--metrics-port must be between 0 and 65535")
            import prometheus_client

            from sbredis.observability import prometheus

            prometheus.enable()
            prometheus_client.start_http_server(args.metrics_port, addr="127.0.0.1")
    except ImportError as e:
        raise UsageError(f"{e.name} is not installed (pip install 'sbredis[otel,prometheus]')") from e
