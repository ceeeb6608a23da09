"""The AMQP message sections, with azure-servicebus's names (``azure.servicebus.amqp``).

Service Bus speaks AMQP; sbredis stores each section it is given next to the message and hands it
back, so code written against the SDK's ``AmqpAnnotatedMessage`` keeps working:

* ``sender.send_messages(AmqpAnnotatedMessage(...))`` sends it. The header's ``time_to_live``, the
  properties (``message_id``, ``correlation_id``, ``subject``, ``to``, ``reply_to``,
  ``content_type``, ``group_id`` as the session id, ``reply_to_group_id``) and the annotations
  ``x-opt-scheduled-enqueue-time`` and ``x-opt-partition-key`` act as the matching
  ServiceBusMessage properties; every other field is stored and read back as it was sent.
* ``message.raw_amqp_message`` of a received message shows the sections as an AMQP receiver sees
  them: strings in properties, annotations, application properties and footer as bytes (as the
  SDK's AMQP decoder returns them), and the broker's annotations (``x-opt-sequence-number``,
  ``x-opt-enqueued-time``, ``x-opt-locked-until``...). Of an outgoing ServiceBusMessage it is a
  view that may be changed before sending, as with the SDK.

Nothing here speaks AMQP on the wire: Redis is the transport.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from enum import Enum, EnumMeta
from typing import Any

from .exceptions import InvalidArgumentError

__all__ = ["AmqpAnnotatedMessage", "AmqpMessageBodyType", "AmqpMessageHeader", "AmqpMessageProperties"]


class _CaseInsensitiveEnumMeta(EnumMeta):
    """Member lookup by name ignores case (``AmqpMessageBodyType["data"]``), as azure-core's does."""

    def __getitem__(cls, name: str) -> Any:
        return super().__getitem__(name.upper())


class AmqpMessageBodyType(str, Enum, metaclass=_CaseInsensitiveEnumMeta):
    DATA = "data"
    SEQUENCE = "sequence"
    VALUE = "value"


class _Fields:
    """Attribute bag readable as a mapping, as the SDK's header and properties are."""

    def __getitem__(self, key: str) -> Any:
        return self.__dict__[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.__dict__[key] = value

    def __delitem__(self, key: str) -> None:
        self.__dict__[key] = None

    def __contains__(self, key: object) -> bool:
        return key in self.__dict__

    def __len__(self) -> int:
        return len(self.keys())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.__dict__ == other.__dict__

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return str(dict(self.items()))

    def has_key(self, key: str) -> bool:
        return key in self.__dict__

    def keys(self) -> list[str]:
        return [k for k in self.__dict__ if not k.startswith("_")]

    def values(self) -> list[Any]:
        return [v for k, v in self.__dict__.items() if not k.startswith("_")]

    def items(self) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in self.__dict__.items() if not k.startswith("_")]

    def get(self, key: str, default: Any = None) -> Any:
        return self.__dict__.get(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.__dict__.update(*args, **kwargs)


def _unknown(kwargs: dict[str, Any]) -> None:
    if kwargs:
        warnings.warn(f"Unsupported keyword args: {kwargs}", stacklevel=3)


class AmqpMessageHeader(_Fields):
    """The AMQP header section: ``time_to_live`` in ms, ``priority``, ``durable``,
    ``first_acquirer`` and ``delivery_count`` (set by the broker on received messages)."""

    def __init__(
        self,
        *,
        delivery_count: int | None = None,
        time_to_live: int | None = None,
        durable: bool | None = None,
        first_acquirer: bool | None = None,
        priority: int | None = None,
        **kwargs: Any,
    ) -> None:
        _unknown(kwargs)
        self.delivery_count = delivery_count
        self.time_to_live = time_to_live
        self.first_acquirer = first_acquirer
        self.durable = durable
        self.priority = priority


class AmqpMessageProperties(_Fields):
    """The AMQP properties section; times are Unix ms."""

    def __init__(
        self,
        *,
        message_id: Any = None,
        user_id: str | bytes | None = None,
        to: str | bytes | None = None,
        subject: str | bytes | None = None,
        reply_to: str | bytes | None = None,
        correlation_id: Any = None,
        content_type: str | bytes | None = None,
        content_encoding: str | bytes | None = None,
        creation_time: int | None = None,
        absolute_expiry_time: int | None = None,
        group_id: str | bytes | None = None,
        group_sequence: int | None = None,
        reply_to_group_id: str | bytes | None = None,
        **kwargs: Any,
    ) -> None:
        _unknown(kwargs)
        self.message_id = message_id
        self.user_id = user_id
        self.to = to
        self.subject = subject
        self.reply_to = reply_to
        self.correlation_id = correlation_id
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.creation_time = creation_time
        self.absolute_expiry_time = absolute_expiry_time
        self.group_id = group_id
        self.group_sequence = group_sequence
        self.reply_to_group_id = reply_to_group_id


HEADER_FIELDS = ("delivery_count", "time_to_live", "durable", "first_acquirer", "priority")
PROPERTY_FIELDS = tuple(AmqpMessageProperties().keys())
_BODIES = ("data_body", "sequence_body", "value_body")


def _sections(value: Any, cls: type[_Fields]) -> Any:
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        return cls(**value)
    raise TypeError(f"expected {cls.__name__} or a mapping, not {type(value).__name__}")


class AmqpAnnotatedMessage:
    """An AMQP message: exactly one of ``data_body`` (bytes, str or a list of them: data
    sections), ``sequence_body`` (a list, or a list of lists: sequence sections) or ``value_body``
    (one value), with optional header, properties, application properties, annotations, delivery
    annotations and footer.

    Raises:
        ValueError: no body, or more than one.
        TypeError: header or properties neither the section's class nor a mapping.
    """

    def __init__(
        self,
        *,
        header: AmqpMessageHeader | Mapping[str, Any] | None = None,
        footer: dict[Any, Any] | None = None,
        properties: AmqpMessageProperties | Mapping[str, Any] | None = None,
        application_properties: dict[Any, Any] | None = None,
        annotations: dict[Any, Any] | None = None,
        delivery_annotations: dict[Any, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        encoding = kwargs.pop("encoding", "UTF-8")
        given = [k for k in _BODIES if k in kwargs]
        if len(given) != 1:
            raise ValueError(
                "There should be one and only one of either data_body, sequence_body "
                "or value_body being set as the body of the AmqpAnnotatedMessage."
            )
        body = kwargs.pop(given[0])
        _unknown(kwargs)
        self._sections: list[Any] | None = None
        self._value: Any = None
        if given[0] == "data_body":
            self._body_type = AmqpMessageBodyType.DATA
            items = body if isinstance(body, list) else [body]
            try:
                self._sections = [i.encode(encoding) if isinstance(i, str) else i for i in items]
            except UnicodeEncodeError:
                raise InvalidArgumentError(f"data_body holds text {encoding} cannot carry") from None
        elif given[0] == "sequence_body":
            self._body_type = AmqpMessageBodyType.SEQUENCE
            if not isinstance(body, list):
                raise TypeError("sequence_body must be a list")
            self._sections = body if body and all(isinstance(s, list) for s in body) else [body]
        else:
            self._body_type = AmqpMessageBodyType.VALUE
            self._value = body
        self.header: AmqpMessageHeader | None = _sections(header, AmqpMessageHeader)
        self.properties: AmqpMessageProperties | None = _sections(properties, AmqpMessageProperties)
        self.application_properties = application_properties
        self.annotations = annotations
        self.delivery_annotations = delivery_annotations
        self.footer = footer

    @property
    def body(self) -> Any:
        """DATA: an iterator of the byte sections; SEQUENCE: an iterator of the lists; VALUE: the
        value."""
        if self._sections is None:
            return self._value
        return iter(self._sections)

    @property
    def body_type(self) -> AmqpMessageBodyType:
        return self._body_type

    def sections(self) -> list[Any]:
        """The body's sections as a list (DATA and SEQUENCE), or ``[value]`` (VALUE)."""
        return list(self._sections) if self._sections is not None else [self._value]

    def __str__(self) -> str:
        if self._body_type is AmqpMessageBodyType.DATA:
            return b"".join(self.sections()).decode("utf-8", "replace")
        return str(self._value if self._sections is None else self._sections)

    def __repr__(self) -> str:
        return f"AmqpAnnotatedMessage(body_type={self._body_type.value!r}, properties={self.properties!r})"
