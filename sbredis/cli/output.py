"""What the commands print: tables for people, JSON for scripts (``--json``), progress bars on stderr.

Everything a command prints goes through here so that URLs never show a password (``masked``) and
``--json`` output stays one parseable document (or one per line for ``--watch``).
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, is_dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, TextIO

from .._core.redact import redact_text
from .._message import ServiceBusReceivedMessage

TIMESPAN_NEVER = timedelta(days=36500)  # durations from here up print as "never"


def masked(text: str) -> str:
    """`text` with the password of any URL in it replaced by ``***``."""
    return redact_text(text)


def plain(value: Any) -> Any:
    """A JSON-ready form: datetimes in ISO 8601, durations in seconds (None for "never"), enums by value."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return None if value >= TIMESPAN_NEVER else value.total_seconds()
    if isinstance(value, Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return {k: plain(v) for k, v in asdict(value).items()}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def cell(value: Any) -> str:
    """A table cell: durations in seconds, "never", "-" for nothing."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, timedelta):
        return "never" if value >= TIMESPAN_NEVER else f"{value.total_seconds():g}s"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """Rows as aligned columns under an upper-case header; numbers right-aligned."""
    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    numeric = [all(_is_number(r.get(c)) for r in rows) for c in columns]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line([c.upper() for c in columns]), *(line(row) for row in cells)])


def message_dict(m: ServiceBusReceivedMessage, full: bool = True) -> dict[str, Any]:
    """A received or peeked message as a dict (the body as text when it is UTF-8, else base64)."""
    body = m.body_bytes or b""
    try:
        text, encoding = body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = base64.b64encode(body).decode(), "base64"
    d: dict[str, Any] = {
        "sequence_number": m.sequence_number,
        "message_id": m.id_text,
        "enqueued_time_utc": m.enqueued_time_utc,
        "delivery_count": m.delivery_count,
        "size": len(body),
        "subject": m.subject,
        "session_id": m.session_id,
        "body": text,
    }
    if m.dead_letter_reason is not None:
        d["dead_letter_reason"] = m.dead_letter_reason
        d["dead_letter_error_description"] = m.dead_letter_error_description
    if full:
        d.update(
            body_encoding=encoding,
            partition_key=m.partition_key,
            content_type=m.content_type,
            correlation_id=m.correlation_id,
            to=m.to,
            reply_to=m.reply_to,
            time_to_live=m.time_to_live,
            expires_at_utc=m.expires_at_utc,
            locked_until_utc=m.locked_until_utc,
            state=m.state.name.lower(),
            application_properties=m.sent_application_properties,
        )
    return d


MESSAGE_COLUMNS = ("sequence_number", "message_id", "enqueued_time_utc", "delivery_count", "size", "subject", "body")


class Output:
    """Where a command's results go: ``show`` prints a table (or JSON), ``say`` a line for people."""

    def __init__(self, as_json: bool, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.json = as_json
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr

    def emit(self, data: Any) -> None:
        """One JSON document on one line."""
        print(masked(json.dumps(plain(data), ensure_ascii=False)), file=self.stdout, flush=True)

    def show(self, rows: Sequence[Mapping[str, Any]], columns: Sequence[str], data: Any = None) -> None:
        """`rows` as a table, or `data` (default: the rows) as JSON with --json."""
        if self.json:
            self.emit(rows if data is None else data)
        elif rows:
            print(masked(table(rows, columns)), file=self.stdout, flush=True)

    def say(self, text: str) -> None:
        """A line for people on stdout (nothing with --json)."""
        if not self.json:
            print(masked(text), file=self.stdout, flush=True)

    def warn(self, text: str) -> None:
        """A line on stderr, in both modes."""
        print(masked(text), file=self.stderr, flush=True)


def messages_table(messages: Sequence[ServiceBusReceivedMessage], width: int = 40) -> list[dict[str, Any]]:
    """Rows for a message table: bodies shortened to `width` characters on one line."""
    rows = []
    for m in messages:
        d = message_dict(m, full=False)
        body = d["body"].replace("\n", "\\n")
        d["body"] = body if len(body) <= width else body[: width - 1] + "…"
        rows.append(d)
    return rows


class Progress:
    """A one-line progress bar on stderr (``label [####....] 40/100 1234/s``), redrawn at most ten
    times a second; silent unless enabled."""

    def __init__(self, label: str, total: int | None, enabled: bool, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self._start = time.monotonic()
        self._drawn = 0.0

    @staticmethod
    def wanted(args: Any) -> bool:
        """--progress, or stderr is a terminal."""
        return bool(getattr(args, "progress", False)) or sys.stderr.isatty()

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._drawn >= 0.1:
            self._drawn = now
            self._draw(now)

    def _draw(self, now: float, end: str = "") -> None:
        rate = self.done / max(now - self._start, 1e-6)
        if self.total:
            filled = min(30, 30 * self.done // self.total)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}"
        else:
            bar = str(self.done)
        print(f"\r{self.label} {bar} {rate:,.0f}/s", end=end, file=self.stream, flush=True)

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic(), end="\n")

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
