"""ServiceBusMessage, ServiceBusReceivedMessage and ServiceBusMessageBatch (the Azure SDK's shapes)."""

from __future__ import annotations

import math
import os
import sys
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from ._core import codec, instrument
from ._enums import ServiceBusMessageState, ServiceBusReceiveMode
from .amqp import AmqpAnnotatedMessage, AmqpMessageBodyType, AmqpMessageHeader, AmqpMessageProperties
from .exceptions import InvalidArgumentError, InvalidOperationError, MessageSizeExceededError

MAX_ID_LENGTH = 128
_PROP_TYPES = (str, bytes, bytearray, memoryview, bool, int, float, datetime, timedelta, uuid.UUID)
DEFAULT_BATCH_BYTES = 256 * 1024
PARTITION_SHIFT = 40  # global sequence number = partition << 40 | partition-local number


def utf8_text(name: str, value: str) -> str:
    """`value`, when it is text UTF-8 can carry (every str but one holding a lone surrogate).

    Raises:
        InvalidArgumentError: `value` holds a lone surrogate (a UTF-16 half, which has no UTF-8 form).
    """
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            raise InvalidArgumentError(f"{name} holds a lone surrogate, which UTF-8 cannot carry") from None
    return value


def _check_str(name: str, value: Any, limit: int | None = MAX_ID_LENGTH) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a str, not {type(value).__name__}")
    if limit is not None and len(value) > limit:
        raise InvalidArgumentError(f"{name} is longer than {limit} characters")
    return utf8_text(name, value)


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return utf8_text("body", body).encode()
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, list) and all(isinstance(b, (bytes, bytearray)) for b in body):
        return b"".join(body)
    raise InvalidArgumentError(f"body must be str or bytes, not {type(body).__name__}")


def duration_ms(name: str, value: Any) -> int:
    """A positive duration (timedelta or seconds) in whole milliseconds."""
    if isinstance(value, bool) or not isinstance(value, (timedelta, int, float)):
        raise InvalidArgumentError(f"{name} must be a timedelta or seconds, not {type(value).__name__}")
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidArgumentError(f"{name} must be a positive, finite duration")
    # finite seconds can overflow to inf as ms (above 1.7976e305 s): the longest duration instead
    return max(1, round(min(seconds * 1000, sys.float_info.max)))


# ServiceBusMessage's _blob: the stored form once encoded; None: to be encoded from the header;
# _ID_ONLY: the header holds only the generated message_id (codec.encode_generated_id, no JSON
# encoder). Every header or property change sets None. A stored form is never empty.
_ID_ONLY = b""

NEVER_MS = 36500 * 86_400_000  # a time to live of 100 years or more means "never expires", as for entities
LAST_SCHEDULE_MS = 32_503_680_000_000  # 3000-01-01: every server time stays below 1e14 ms, which Lua
# numbers print exactly (larger ones print in exponent form and would corrupt stored times)


def schedule_ms(name: str, value: Any) -> int:
    """A schedule time (datetime) as Unix ms, at least 1.

    Raises:
        InvalidArgumentError: not a datetime, or after the year 2999.
    """
    if not isinstance(value, datetime):
        raise InvalidArgumentError(f"{name} must be a datetime")
    ms = codec.to_ms(value)
    if ms >= LAST_SCHEDULE_MS:
        raise InvalidArgumentError(f"{name} must be before the year 3000")
    return max(1, ms)


_FIRST_MS = codec.to_ms(datetime.min)
_LAST_MS = codec.to_ms(datetime.max)


def check_properties(props: Any) -> None:
    """Raises InvalidArgumentError unless `props` is a dict of application properties sbredis can
    store: str keys (or UTF-8 bytes), values of the supported types, text UTF-8 can carry."""
    if type(props) is not dict and not isinstance(props, Mapping):
        raise InvalidArgumentError("application_properties must be a dict")
    for key, value in props.items():
        # the common case first, at a type() lookup each (this runs twice per message sent)
        if type(key) is str and key.isascii():
            kind = type(value)
            if (kind is str and value.isascii()) or kind is int or kind is float or kind is bool or value is None:
                continue
        if isinstance(key, str):
            if not key.isascii():
                utf8_text("an application property key", key)
        elif isinstance(key, bytes):
            try:
                key.decode()
            except UnicodeDecodeError:
                raise InvalidArgumentError(f"application property key {key!r} is not UTF-8") from None
        else:
            raise InvalidArgumentError("application_properties keys must be str")
        if isinstance(value, str):
            if not value.isascii():
                utf8_text(f"application property {key!r}", value)
        elif value is not None and not isinstance(value, _PROP_TYPES):
            raise InvalidArgumentError(f"application property {key!r} has an unsupported type {type(value).__name__}")
        elif isinstance(value, datetime) and value.utcoffset() and not _FIRST_MS <= codec.to_ms(value) <= _LAST_MS:
            # stored as UTC, which would not decode back into a datetime for any receiver
            raise InvalidArgumentError(f"application property {key!r} is a time outside the years 1-9999 in UTC")


def _check_properties(props: Any) -> dict[str, Any] | None:
    if props is None:
        return None
    check_properties(props)
    return dict(props)


class ApplicationProperties(dict[Any, Any]):
    """A received message's application properties as the SDK's AMQP decoder hands them out: keys,
    and str values, as UTF-8 bytes. A str key finds its bytes key too (``props["key"]``)."""

    def __missing__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return dict.__getitem__(self, key.encode())
            except (UnicodeEncodeError, KeyError):
                pass
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        if isinstance(key, str):
            try:
                return dict.__contains__(self, key.encode())
            except UnicodeEncodeError:
                return False
        return False


_DEAD_LETTER_KEYS = (b"DeadLetterReason", b"DeadLetterErrorDescription")


def _received_properties(
    props: dict[str, Any] | None, reason: str | None, description: str | None
) -> ApplicationProperties | None:
    """A received message's application_properties (see ApplicationProperties); a dead-lettered
    one's carry its reason and description, as Service Bus adds them."""
    if props is None and reason is None and description is None:
        return None
    out = ApplicationProperties()
    for key, value in (props or {}).items():
        out[_as_bytes(key)] = _as_bytes(value)
    for dl_key, text in zip(_DEAD_LETTER_KEYS, (reason, description), strict=True):
        if text is not None:
            out[dl_key] = text.encode()
    return out


class ServiceBusMessage:
    """A message to send. Properties are the Azure SDK's; ``message_id`` is generated when unset.

    Internal (the send paths read these; not part of the API): ``encoded()``, and ``ttl_ms`` and
    ``sched_ms``, the time to live and schedule time in ms (0 for none) that the property setters
    keep. Plain attributes, read per message on the send path.

    Raises:
        InvalidArgumentError: a property has the wrong type or is too long.
        InvalidOperationError: session_id and partition_key are both set and differ.
    """

    __slots__ = ("_amqp", "_blob", "_body", "_h", "_props", "sched_ms", "ttl_ms", "via_partition_key")

    def __init__(
        self,
        body: str | bytes | None,
        *,
        application_properties: Mapping[str | bytes, Any] | None = None,
        session_id: str | None = None,
        message_id: str | uuid.UUID | None = None,
        scheduled_enqueue_time_utc: datetime | None = None,
        time_to_live: timedelta | float | None = None,
        content_type: str | None = None,
        correlation_id: str | None = None,
        subject: str | None = None,
        partition_key: str | None = None,
        to: str | None = None,
        reply_to: str | None = None,
        reply_to_session_id: str | None = None,
        via_partition_key: str | None = None,
    ) -> None:
        self._body = body if type(body) is bytes else _body_bytes(body)
        # the SDK's transaction routing hint: kept on the message, not stored (an sbredis
        # transaction spans entities without a via entity)
        self.via_partition_key = _check_str("via_partition_key", via_partition_key)
        self._amqp: AmqpAnnotatedMessage | None = None
        self._props = None if application_properties is None else _check_properties(application_properties)
        self.ttl_ms = 0
        self.sched_ms = 0
        if message_id is None:
            self._h: dict[str, Any] | None = {"id": os.urandom(16).hex()}
            # the header holds only a generated id until a setter below or later changes it (_set)
            self._blob: bytes | None = _ID_ONLY if self._props is None else None
        elif type(message_id) is str and 0 < len(message_id) <= MAX_ID_LENGTH and message_id.isascii():
            self._blob = None  # what the message_id setter does for such an id, without its checks' cost
            self._h = {"id": message_id}
        else:
            self._blob = None
            self._h = {}
            self.message_id = message_id
        if body is None:  # received as None, as the SDK's message without a body section
            self._hdr()["nb"] = 1
            self._blob = None
        if session_id is not None:
            self.session_id = session_id
        if partition_key is not None:
            self.partition_key = partition_key
        for name, value in (
            ("content_type", content_type),
            ("correlation_id", correlation_id),
            ("subject", subject),
            ("to", to),
            ("reply_to", reply_to),
            ("reply_to_session_id", reply_to_session_id),
        ):
            if value is not None:
                setattr(self, name, value)
        if time_to_live is not None:
            self.time_to_live = time_to_live  # type: ignore[assignment]
        if scheduled_enqueue_time_utc is not None:
            self.scheduled_enqueue_time_utc = scheduled_enqueue_time_utc

    # -- header access (a received message decodes its header on first use)
    def _hdr(self) -> dict[str, Any]:
        assert self._h is not None
        return self._h

    def _set(self, key: str, value: Any) -> None:
        if self._amqp is not None:  # the view's changes first, so this one wins over it
            view, self._amqp = self._amqp, None
            self._absorb(view)
        h = self._hdr()
        if value is None:
            h.pop(key, None)
        else:
            h[key] = value
        self._blob = None

    @property
    def body(self) -> Any:
        """As the SDK's: for a data body, an iterator of its bytes sections (``b"".join(msg.body)``,
        ``next(msg.body)``), None for a message sent without a body; for a message sent as an
        AmqpAnnotatedMessage with a value or sequence body, the value, or an iterator of the
        sequence sections. ``body_bytes`` gives a data body as one bytes value."""
        return _body_view(self._hdr(), self.body_bytes)

    @property
    def body_bytes(self) -> bytes | None:
        """sbredis's own: the data body as one bytes value (its sections joined); None for a
        message sent without a body; b"" for a value or sequence body (see ``body``)."""
        return None if self._hdr().get("nb") else self._body

    @property
    def body_type(self) -> AmqpMessageBodyType:
        am = self._hdr().get("am")
        return _BODY_TYPES[am.get("bt", "d") if am else "d"]

    @property
    def raw_amqp_message(self) -> AmqpAnnotatedMessage:
        """The message as AMQP sections (sbredis.amqp). Changes to it are sent with the message."""
        if self._amqp is None:
            self._amqp = self._amqp_view(received=False)
            self._blob = None
        return self._amqp

    @property
    def application_properties(self) -> dict[str, Any] | None:
        if self._amqp is not None:
            return self._amqp.application_properties
        return self._props

    @application_properties.setter
    def application_properties(self, value: Mapping[str, Any] | None) -> None:
        self._props = _check_properties(value)
        self._blob = None

    @property
    def sent_application_properties(self) -> dict[Any, Any] | None:
        """sbredis's own: the application properties as the sender set them. On a message to
        send, ``application_properties``; a received message's differ (see there)."""
        return self.application_properties

    @property
    def message_id(self) -> str | uuid.UUID | None:
        """A str, or the uuid.UUID it was set to (as the SDK keeps an AMQP uuid message id)."""
        h = self._hdr()
        mid = h.get("id")
        return uuid.UUID(mid) if mid is not None and h.get("idu") else mid

    @message_id.setter
    def message_id(self, value: str | uuid.UUID | None) -> None:
        is_uuid = isinstance(value, uuid.UUID)
        if value == "":  # Service Bus refuses an empty id; duplicate detection could not tell messages apart
            raise InvalidArgumentError("message_id must not be empty")
        self._set("idu", True if is_uuid else None)
        self._set("id", str(value) if is_uuid else _check_str("message_id", value))

    @property
    def id_text(self) -> str | None:
        """Internal (duplicate detection, partitioning): the message_id as a str."""
        mid = self._hdr().get("id")
        return None if mid is None else str(mid)

    @property
    def session_id(self) -> str | None:
        return self._hdr().get("sid")

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        value = _check_str("session_id", value)
        # the SDK accepts a session id that differs from the partition key set before it; the
        # session id then decides the partition, so the stale key is dropped
        pk = self._hdr().get("pk")
        if value is not None and pk is not None and pk != value:
            self._set("pk", None)
        self._set("sid", value)

    @property
    def partition_key(self) -> str | None:
        h = self._hdr()
        return h.get("pk", h.get("sid"))

    @partition_key.setter
    def partition_key(self, value: str | None) -> None:
        value = _check_str("partition_key", value)
        sid = self._hdr().get("sid")
        if value is not None and sid is not None and sid != value:
            raise InvalidOperationError("partition_key and session_id must be equal when both are set")
        self._set("pk", value)

    def _str_prop(key: str, name: str) -> Any:  # type: ignore[misc]  # noqa: N805
        def get(self: ServiceBusMessage) -> str | None:
            return self._hdr().get(key)

        def put(self: ServiceBusMessage, value: str | None) -> None:
            self._set(key, _check_str(name, value, None))

        return property(get, put)

    content_type = _str_prop("ct", "content_type")
    correlation_id = _str_prop("ci", "correlation_id")
    subject = _str_prop("sj", "subject")
    to = _str_prop("to", "to")
    reply_to = _str_prop("rt", "reply_to")
    reply_to_session_id = _str_prop("rts", "reply_to_session_id")
    del _str_prop

    @property
    def time_to_live(self) -> timedelta | None:
        ms = self._hdr().get("ttl")
        return timedelta(milliseconds=ms) if ms else None

    @time_to_live.setter
    def time_to_live(self, value: timedelta | float | None) -> None:
        ms = 0 if value is None else duration_ms("time_to_live", value)
        self.ttl_ms = 0 if ms >= NEVER_MS else ms
        self._set("ttl", self.ttl_ms or None)

    @property
    def scheduled_enqueue_time_utc(self) -> datetime | None:
        ms = self._hdr().get("se")
        return codec.from_ms(ms) if ms else None

    @scheduled_enqueue_time_utc.setter
    def scheduled_enqueue_time_utc(self, value: datetime | None) -> None:
        self.sched_ms = 0 if value is None else schedule_ms("scheduled_enqueue_time_utc", value)
        self._set("se", self.sched_ms or None)

    # -- encoding
    def encoded(self) -> bytes:
        """Internal (the send paths): the stored form. Cached while the message has no application
        properties (a caller may change that dict in place, so a message with properties is
        encoded at every send)."""
        blob = self._blob
        if blob:
            return blob
        if self._amqp is not None:  # a view the caller may still change: encoded at every send
            self._absorb(self._amqp)
            header = self._hdr()
            if self._props:
                header = dict(header)
                header["ap"] = codec.encode_properties(self._props)
            return codec.encode(header, self._body)
        if blob is not None:  # _ID_ONLY: the header is {"id": <32 hex digits>}, nothing else
            self._blob = blob = codec.encode_generated_id(self._hdr()["id"], self._body)
            return blob
        header = self._hdr()
        # send_messages checked the properties (check_properties) in its caller's call; these
        # errors are for a dict changed since, or a received header (any JSON) holding text
        # UTF-8 cannot carry
        try:
            if self._props:
                header = dict(header)
                header["ap"] = codec.encode_properties(self._props)
                return codec.encode(header, self._body)
            self._blob = codec.encode(header, self._body)
        except UnicodeError:
            raise InvalidArgumentError("the message holds text UTF-8 cannot carry (a lone surrogate)") from None
        except TypeError as e:
            raise InvalidArgumentError(f"an application property has an unsupported type {e}") from None
        return self._blob

    def _absorb(self, view: AmqpAnnotatedMessage) -> None:
        """Write an AmqpAnnotatedMessage's sections into `m` (the fields with a ServiceBusMessage
        counterpart become those properties; the others are stored under the header's "am")."""
        h = self._hdr()
        h.pop("nb", None)
        am: dict[str, Any] = {}
        sections = view.sections()
        if view.body_type is AmqpMessageBodyType.DATA:
            for section in sections:
                if not isinstance(section, (bytes, bytearray, memoryview)):
                    raise InvalidArgumentError(f"a data section must be bytes or str, not {type(section).__name__}")
            self._body = b"".join(bytes(s) for s in sections)
            if len(sections) > 1:
                am["ds"] = [len(s) for s in sections]
        else:
            self._body = b""
            am["bt"] = "v" if view.body_type is AmqpMessageBodyType.VALUE else "s"
            am["bv"] = _stored("body", view.body if am["bt"] == "v" else sections)
        header = view.header
        ttl = header.time_to_live if header is not None else None
        self.ttl_ms = 0 if not ttl else duration_ms("time_to_live", ttl / 1000)
        self.ttl_ms = 0 if self.ttl_ms >= NEVER_MS else self.ttl_ms
        if header is not None:
            extra = {k: header[k] for k in ("durable", "first_acquirer", "priority") if header.get(k) is not None}
            if extra:
                am["h"] = _stored("header", extra)
        props = view.properties
        for name, key in _PROPERTY_KEYS.items():
            h.pop(key, None)
            value = _text(name, props.get(name)) if props is not None else None
            if value is not None:
                h[key] = value
        if props is not None:
            extra = {k: v for k, v in props.items() if k not in _PROPERTY_KEYS and v is not None}
            if extra:
                am["p"] = _stored("properties", extra)
        if h.get("sid") is not None and h.get("pk") is not None and h["pk"] != h["sid"]:
            h.pop("pk")
        annotations = dict(view.annotations or {})
        self.sched_ms = 0
        for key in list(annotations):
            plain = _plain_key(key)
            if plain == _SCHEDULED:
                self.sched_ms = _scheduled_ms(annotations.pop(key))
            elif plain == _PARTITION_KEY:
                pk = _text("x-opt-partition-key", annotations.pop(key))
                if pk is not None and h.get("sid") not in (None, pk):
                    raise InvalidOperationError("partition_key and session_id must be equal when both are set")
                h["pk"] = pk
        for name, section in (("a", annotations), ("da", view.delivery_annotations), ("f", view.footer)):
            if section:
                am[name] = _stored(name, dict(section))
        updates: dict[str, Any] = {"ttl": self.ttl_ms, "se": self.sched_ms, "am": am}
        for key, value in updates.items():
            if value:
                h[key] = value
            else:
                h.pop(key, None)
        if "id" not in h:
            h["id"] = os.urandom(16).hex()
        self._props = _check_properties(view.application_properties)
        self._blob = None

    def _amqp_view(self, received: bool) -> AmqpAnnotatedMessage:
        """`m` as AMQP sections; `received`: as an AMQP receiver decodes them (strings as bytes)."""
        h = self._hdr()
        am: dict[str, Any] = h.get("am") or {}
        conv = _as_bytes if received else (lambda v: v)
        kind = am.get("bt")
        body: dict[str, Any]
        if kind == "v":
            body = {"value_body": codec.decode_value(am.get("bv"))}
        elif kind == "s":
            body = {"sequence_body": codec.decode_value(am.get("bv"))}
        else:
            data = codec.body_of(self._blob) if received and self._blob else self._body
            lengths = am.get("ds") or [len(data)]
            sections, at = [], 0
            for n in lengths:
                sections.append(data[at : at + n])
                at += n
            body = {"data_body": sections}
        ttl = self.time_to_live
        ttl_ms = ttl // timedelta(milliseconds=1) if ttl else None
        extra_h = codec.decode_value(am["h"]) if "h" in am else {}
        header = AmqpMessageHeader(time_to_live=ttl_ms, **extra_h)
        props = {name: conv(h.get(key)) for name, key in _PROPERTY_KEYS.items()}
        props.update({k: conv(v) for k, v in (codec.decode_value(am["p"]) if "p" in am else {}).items()})
        annotations: dict[Any, Any] = codec.decode_value(am["a"], received) if "a" in am else {}
        if received:
            assert isinstance(self, ServiceBusReceivedMessage)
            header.delivery_count = self.delivery_count
            enqueued = self.enqueued_time_utc
            props.setdefault("creation_time", codec.to_ms(enqueued))
            if self.expires_at_utc is not None:
                props.setdefault("absolute_expiry_time", codec.to_ms(self.expires_at_utc))
            annotations[b"x-opt-sequence-number"] = self.sequence_number
            annotations[b"x-opt-enqueued-time"] = codec.to_ms(enqueued)
            if self.locked_until_utc is not None:
                annotations[b"x-opt-locked-until"] = self.locked_until_ms
        elif ttl_ms:
            props.setdefault("creation_time", codec.to_ms(datetime.now(UTC)))
            props.setdefault("absolute_expiry_time", props["creation_time"] + ttl_ms)
        if h.get("pk") is not None:
            annotations[conv(_PARTITION_KEY)] = conv(h["pk"])
        if h.get("se"):
            annotations[conv(_SCHEDULED)] = codec.from_ms(h["se"])
        app = self.application_properties
        if received and app is not None:
            app = {_as_bytes(k): _as_bytes(v) for k, v in app.items()}

        def empty() -> dict[Any, Any] | None:  # an outgoing view's sections can be filled in place
            return None if received else {}

        return AmqpAnnotatedMessage(
            header=header,
            properties=AmqpMessageProperties(**props),
            application_properties=app if app is not None else empty(),
            annotations=annotations or empty(),
            delivery_annotations=codec.decode_value(am["da"], received) if "da" in am else empty(),
            footer=codec.decode_value(am["f"], received) if "f" in am else empty(),
            **body,
        )

    @classmethod
    def from_amqp_message(cls, message: AmqpAnnotatedMessage) -> ServiceBusMessage:
        """A message to send with an AmqpAnnotatedMessage's sections (sbredis.amqp says how they map).

        Raises:
            InvalidArgumentError: a section holds a value sbredis cannot store.
        """
        m = cls(None)
        m.load_amqp(message)
        return m

    def load_amqp(self, message: AmqpAnnotatedMessage) -> None:
        """Internal (from_amqp_message): take `message`'s sections as this message's."""
        self._absorb(message)

    def __str__(self) -> str:
        if self.body_type is AmqpMessageBodyType.DATA:
            return (self.body_bytes or b"").decode("utf-8", "replace")
        return str(self.body)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(message_id={self.message_id!r}, body_size={len(self.body_bytes or b'')})"


_BODY_TYPES = {"d": AmqpMessageBodyType.DATA, "s": AmqpMessageBodyType.SEQUENCE, "v": AmqpMessageBodyType.VALUE}
# AMQP properties with a ServiceBusMessage counterpart: header key of each
_PROPERTY_KEYS = {
    "message_id": "id",
    "correlation_id": "ci",
    "subject": "sj",
    "to": "to",
    "reply_to": "rt",
    "content_type": "ct",
    "group_id": "sid",
    "reply_to_group_id": "rts",
}
_SCHEDULED = "x-opt-scheduled-enqueue-time"
_PARTITION_KEY = "x-opt-partition-key"


def _amqp_body(am: dict[str, Any], data: bytes) -> Any:
    kind = am.get("bt")
    if kind == "v":
        return codec.decode_value(am.get("bv"))
    if kind == "s":
        return iter(codec.decode_value(am.get("bv")))
    return data


# AMQP properties held to ServiceBusMessage's length limit (the others have none)
_ID_PROPERTIES = {"message_id", "group_id", "x-opt-partition-key"}


def _body_view(h: dict[str, Any], data: bytes | None) -> Any:
    """A message's ``body`` as the SDK gives it (see ServiceBusMessage.body)."""
    if data is None:
        return None
    am = h.get("am")
    if not am:
        return iter((data,))
    if am.get("bt") in ("v", "s"):
        return _amqp_body(am, data)
    lengths = am.get("ds")
    if not lengths:
        return iter((data,))
    return _sections(data, lengths)


def _sections(data: bytes, lengths: list[int]) -> Iterator[bytes]:
    at = 0
    for n in lengths:
        yield data[at : at + n]
        at += n


def _text(name: str, value: Any) -> str | None:
    """An AMQP property with a ServiceBusMessage counterpart, checked as its setter checks it."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode()
        except UnicodeDecodeError:
            raise InvalidArgumentError(f"AMQP property {name} is not UTF-8") from None
    elif isinstance(value, uuid.UUID):
        return str(value)
    elif not isinstance(value, str):
        raise InvalidArgumentError(f"AMQP property {name} must be str or bytes, not {type(value).__name__}")
    if name == "message_id" and not value:
        raise InvalidArgumentError("message_id must not be empty")
    return _check_str(f"AMQP property {name}", value, MAX_ID_LENGTH if name in _ID_PROPERTIES else None)


def _scheduled_ms(when: Any) -> int:
    """The x-opt-scheduled-enqueue-time annotation (a datetime or Unix ms; 0 or None: not
    scheduled) as Unix ms, checked as scheduled_enqueue_time_utc is: a stored time past what the
    scripts can hold would break every receive of the partition."""
    if when is None or isinstance(when, datetime):
        return 0 if when is None else schedule_ms(_SCHEDULED, when)
    if isinstance(when, bool) or not isinstance(when, (int, float)) or not math.isfinite(when) or when < 0:
        raise InvalidArgumentError(f"{_SCHEDULED} must be a datetime or Unix milliseconds")
    if when >= LAST_SCHEDULE_MS:
        raise InvalidArgumentError(f"{_SCHEDULED} must be before the year 3000")
    return int(when)


def _stored(name: str, value: Any) -> Any:
    try:
        return codec.encode_value(value)
    except (TypeError, RecursionError):
        raise InvalidArgumentError(f"AMQP {name} holds a value sbredis cannot store") from None


def _plain_key(key: Any) -> Any:
    if not isinstance(key, (bytes, bytearray)):
        return key
    try:
        return bytes(key).decode()
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"AMQP annotation key {bytes(key)!r} is not UTF-8") from None


def _as_bytes(value: Any) -> Any:
    return value.encode() if isinstance(value, str) else value


def as_message(message: Any) -> ServiceBusMessage:
    """A ServiceBusMessage for what send_messages and add_message take: a ServiceBusMessage, an
    AmqpAnnotatedMessage, or a dict of ServiceBusMessage's keyword arguments (as the SDK takes).

    Raises:
        InvalidArgumentError: none of these, or an AMQP section sbredis cannot store.
        TypeError: a dict with a key that is not a ServiceBusMessage argument.
    """
    if isinstance(message, ServiceBusMessage):
        return message
    if isinstance(message, AmqpAnnotatedMessage):
        return ServiceBusMessage.from_amqp_message(message)
    if isinstance(message, Mapping) or (hasattr(message, "keys") and hasattr(message, "__getitem__")):
        return ServiceBusMessage(**message)
    raise InvalidArgumentError(
        f"expected a ServiceBusMessage, AmqpAnnotatedMessage or dict, not {type(message).__name__}"
    )


class LegacyMessage(NamedTuple):
    """ServiceBusReceivedMessage.message: the part of the SDK's deprecated AMQP message that has
    a meaning here."""

    delivery_tag: bytes | None
    delivery_annotations: dict[bytes, Any]


class LockRef(NamedTuple):
    """Internal: the lock under which one receive call handed out its messages. Immutable, and
    one object per call that each of its messages references (no per-message allocation)."""

    entity: str
    partition: int
    group: str  # the subqueue (Group)
    nonce: str  # the lock nonce; '' when the messages hold no lock (peeked, RECEIVE_AND_DELETE)
    receive_mode: ServiceBusReceiveMode | None  # None: peeked


class ServiceBusReceivedMessage(ServiceBusMessage):
    """A message handed out by a receiver or by peek.

    Adds the broker's properties: sequence_number, enqueued_time_utc, expires_at_utc,
    locked_until_utc, lock_token, delivery_count, dead-letter details and state.

    Internal (sbredis's receivers, settlement and renewal read these; not part of the API):
    ``lock_ref``, the LockRef the message was handed out under (immutable, shared by one receive
    call's messages); ``local_seq``, its partition-local sequence number; ``locked_until_ms``, the
    lock's end (Unix ms, 0 for none), which a renewal moves; ``settled``, set once the message is
    settled (or from the start when it holds no lock to settle); ``session_locked``, set when a
    session receiver hands it out (the session's lock holds it). They are plain attributes, not
    properties, because settlement reads them per message on its hot path.
    """

    __slots__ = (
        "_enq_ms",
        "_exp_ms",
        "_raw",
        "auto_renew_error",
        "dead_letter_error_description",
        "dead_letter_reason",
        "delivery_count",
        "entity_name",
        "local_seq",
        "lock_ref",
        "locked_until_ms",
        "partition_id",
        "session_locked",
        "settled",
        "state",
    )

    def __init__(
        self,
        raw: bytes,
        *,
        entity_name: str,
        partition_id: int,
        group: str,
        local_seq: int,
        delivery_count: int,
        enqueued_ms: int,
        expires_ms: int,
        locked_until_ms: int = 0,
        nonce: str = "",
        receive_mode: ServiceBusReceiveMode | None = None,
        state: ServiceBusMessageState = ServiceBusMessageState.ACTIVE,
        dead_letter_reason: str | None = None,
        dead_letter_error_description: str | None = None,
    ) -> None:
        self.fill(
            raw,
            LockRef(entity_name, partition_id, group, nonce, receive_mode),
            local_seq,
            delivery_count,
            enqueued_ms,
            expires_ms,
            locked_until_ms,
            receive_mode is ServiceBusReceiveMode.RECEIVE_AND_DELETE,
            state,
        )
        self.dead_letter_reason = dead_letter_reason
        self.dead_letter_error_description = dead_letter_error_description

    def fill(
        self,
        raw: bytes,
        lock_ref: LockRef,
        local_seq: int,
        delivery_count: int,
        enqueued_ms: int,
        expires_ms: int,
        locked_until_ms: int,
        settled: bool,
        state: ServiceBusMessageState,
    ) -> None:
        """Internal: the reply parsers build received messages with ``cls.__new__`` and this,
        positional and without keyword parsing (it runs per message on the receive path)."""
        self._raw = self._blob = raw
        self._h = self._props = self._amqp = None
        self.ttl_ms = self.sched_ms = 0
        self.entity_name = lock_ref.entity
        self.partition_id = lock_ref.partition
        self.lock_ref = lock_ref
        self.local_seq = local_seq
        self.delivery_count = delivery_count
        self._enq_ms = enqueued_ms
        self._exp_ms = expires_ms
        self.locked_until_ms = locked_until_ms
        self.settled = settled
        self.auto_renew_error: Exception | None = None
        self.via_partition_key = None
        self.session_locked = False
        self.state = state
        self.dead_letter_reason = self.dead_letter_error_description = None

    def _set(self, key: str, value: Any) -> None:
        # a changed header is encoded again with the stored body (sending a received message on)
        self._body = codec.body_of(self._raw)
        super()._set(key, value)

    def _hdr(self) -> dict[str, Any]:
        if self._h is None:
            header = codec.header_of(self._raw)
            props = header.pop("ap", None)
            self._h = header
            self._props = _received_properties(
                codec.decode_properties(props) if props else None,
                self.dead_letter_reason,
                self.dead_letter_error_description,
            )
        return self._h

    @property
    def body(self) -> Any:
        return _body_view(self._hdr(), self.body_bytes)

    @property
    def body_bytes(self) -> bytes | None:
        """sbredis's own: the data body as one bytes value (its sections joined); None for a
        message sent without a body; b"" for a value or sequence body (see ``body``)."""
        return None if self._hdr().get("nb") else codec.body_of(self._raw)

    @property
    def raw_amqp_message(self) -> AmqpAnnotatedMessage:
        """The message as an AMQP receiver sees it (strings as bytes, the broker's annotations)."""
        if self._amqp is None:
            self._amqp = self._amqp_view(received=True)
        return self._amqp

    @property
    def application_properties(self) -> dict[Any, Any] | None:
        """As the SDK gives them: keys, and str values, as UTF-8 bytes (``props[b"key"] ==
        b"value"``); str keys find them too. A dead-lettered message's also hold DeadLetterReason
        and DeadLetterErrorDescription, as Service Bus adds them. ``sent_application_properties``
        gives them as they were sent."""
        self._hdr()
        return self._props

    @application_properties.setter
    def application_properties(self, value: Mapping[str, Any] | None) -> None:
        raise InvalidOperationError("a received message's application_properties cannot be changed")

    def sent_ttl_ms(self) -> int:
        """Internal (the send paths): the time to live the message was sent with, in ms (0 for
        none), which sending it again carries, as the SDK's resent message carries its header."""
        return int(self._hdr().get("ttl") or 0)

    def encoded(self) -> bytes:
        """Internal: as ServiceBusMessage.encoded, with the properties as they were sent (the
        received form's bytes and dead-letter entries are a view, not what is sent on)."""
        if self._blob:
            return self._blob
        self._hdr()
        view, self._props = self._props, self.sent_application_properties
        try:
            return super().encoded()
        finally:
            self._props = view

    @property
    def sent_application_properties(self) -> dict[str, Any] | None:
        """sbredis's own: the application properties as the sender set them (str keys and str
        values), without the dead-letter entries Service Bus adds."""
        props = codec.header_of(self._raw).get("ap")
        return codec.decode_properties(props) if props else None

    @property
    def sequence_number(self) -> int:
        return (self.partition_id << PARTITION_SHIFT) | self.local_seq

    @property
    def enqueued_sequence_number(self) -> int:
        return self.sequence_number

    @property
    def enqueued_time_utc(self) -> datetime:
        return codec.from_ms(self._enq_ms)

    @property
    def expires_at_utc(self) -> datetime | None:
        return codec.from_ms(self._exp_ms) if self._exp_ms else None

    @property
    def time_to_live(self) -> timedelta | None:
        if self._exp_ms:
            return timedelta(milliseconds=self._exp_ms - self._enq_ms)
        return None

    @time_to_live.setter
    def time_to_live(self, value: timedelta | float | None) -> None:
        raise InvalidOperationError("a received message's time_to_live cannot be changed")

    @property
    def locked_until_utc(self) -> datetime | None:
        """When the message's lock ends; None, as the SDK gives, once it is settled, for a message
        that holds no lock, and for a message a session receiver handed out (the session holds
        the lock: see ``receiver.session.locked_until_utc``)."""
        if self.settled or not self.locked_until_ms or self.session_locked:
            return None
        return codec.from_ms(self.locked_until_ms)

    @property
    def lock_token(self) -> str | None:
        nonce = self.lock_ref.nonce
        if not nonce:
            return None
        return str(uuid.UUID(bytes=bytes.fromhex(nonce) + self.sequence_number.to_bytes(8, "big")))

    @property
    def message(self) -> LegacyMessage:
        """The SDK's deprecated ``message`` (its AMQP message object): here only ``delivery_tag``,
        the lock token's 16 bytes (None for a message that holds no lock), and
        ``delivery_annotations`` with the lock token under ``x-opt-lock-token``, as the SDK's link
        gives them. Use ``raw_amqp_message`` for the message's AMQP sections."""
        token = self.lock_token
        if token is None:
            return LegacyMessage(None, {})
        return LegacyMessage(uuid.UUID(token).bytes, {b"x-opt-lock-token": uuid.UUID(token)})

    @property
    def dead_letter_source(self) -> str | None:
        """The entity a dead-lettered message came from, on messages that auto-forwarding moved
        (forward_dead_lettered_messages_to, or the transfer dead-letter subqueue)."""
        source = self._hdr().get("dls")
        return str(source) if source else None

    def copy_for_resend(self, new_message_id: bool = False) -> ServiceBusMessage:
        """A message to send with this one's body and properties, e.g. to resubmit a dead-lettered
        one (its time to live starts again; a scheduled time is dropped). sbredis's own, not the
        Azure SDK's."""
        h = self._hdr()
        ttl = h.get("ttl")
        props: dict[str | bytes, Any] | None = None
        sent = self.sent_application_properties
        if sent:
            props = {k: v for k, v in sent.items()}
        return ServiceBusMessage(
            self.body_bytes,
            application_properties=props,
            message_id=None if new_message_id else self.message_id,
            session_id=self.session_id,
            partition_key=h.get("pk"),
            content_type=self.content_type,
            correlation_id=self.correlation_id,
            subject=self.subject,
            to=self.to,
            reply_to=self.reply_to,
            reply_to_session_id=self.reply_to_session_id,
            time_to_live=timedelta(milliseconds=ttl) if ttl else None,
        )

    def __repr__(self) -> str:
        return (
            f"ServiceBusReceivedMessage(entity={self.entity_name!r}, "
            f"sequence_number={self.sequence_number}, delivery_count={self.delivery_count})"
        )


def copy_for_resend(m: ServiceBusReceivedMessage, new_message_id: bool = False) -> ServiceBusMessage:
    """A message to send with a received message's body and properties (see the method)."""
    return m.copy_for_resend(new_message_id)


class ServiceBusMessageBatch:
    """Messages sent together; ``add_message`` raises MessageSizeExceededError when full.

    A batch that lands in one partition (no keys, or one key) is stored atomically.
    """

    def __init__(self, max_size_in_bytes: int | None = None, *, entity_name: str = "") -> None:
        """`max_size_in_bytes`: 256 KiB when not given (an entity's default maximum message size;
        a sender's create_message_batch() uses its entity's). `entity_name`: the sender that makes
        the batch names its entity (for tracing)."""
        self.max_size_in_bytes = DEFAULT_BATCH_BYTES if max_size_in_bytes is None else max_size_in_bytes
        self._messages: list[ServiceBusMessage] = []
        self._size = 0
        self._entity = entity_name

    def add_message(self, message: ServiceBusMessage | AmqpAnnotatedMessage | Mapping[str, Any]) -> None:
        """Raises MessageSizeExceededError when full, InvalidArgumentError when not a message
        (a ServiceBusMessage, an AmqpAnnotatedMessage or a dict of ServiceBusMessage's arguments)."""
        message = as_message(message)
        if message.application_properties:  # the caller may have changed the dict in place since
            check_properties(message.application_properties)
        if instrument.enabled:  # a tracer may add the message's creation context (before it is measured)
            instrument.created(message, self._entity)
        size = len(message.encoded())
        if self._size + size > self.max_size_in_bytes:
            raise MessageSizeExceededError(
                f"The batch would exceed its maximum size of {self.max_size_in_bytes} bytes."
            )
        self._messages.append(message)
        self._size += size

    @property
    def size_in_bytes(self) -> int:
        return self._size

    @property
    def message_count(self) -> int:
        return len(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[ServiceBusMessage]:
        return iter(self._messages)

    def __repr__(self) -> str:
        return f"ServiceBusMessageBatch(count={len(self)}, size_in_bytes={self._size})"
