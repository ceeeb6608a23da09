"""sbredis.amqp's header and properties read and write as mappings, as the azure-servicebus SDK's
(DictMixin in azure/servicebus/amqp/_amqp_message.py, 7.15): deleting a key sets it to None,
equality compares fields, unknown keywords warn; a body type is found by name in any case; a bad
section or sequence body is a typed error; str() of each body type."""

from __future__ import annotations

import pytest

from sbredis.amqp import AmqpAnnotatedMessage, AmqpMessageBodyType, AmqpMessageHeader, AmqpMessageProperties


def test_header_as_a_mapping() -> None:
    h = AmqpMessageHeader(priority=3, durable=True)
    assert len(h) == 5 and "priority" in h and h.has_key("durable") and not h.has_key("nope")
    assert h["priority"] == 3 and h.get("priority") == 3 and h.get("nope", "d") == "d"
    h["priority"] = 7
    assert h.priority == 7
    del h["priority"]
    assert h["priority"] is None and "priority" in h  # the SDK keeps the key, set to None
    h.update({"time_to_live": 500}, first_acquirer=False)
    assert dict(h.items())["time_to_live"] == 500 and h.first_acquirer is False
    assert h.keys() == ["delivery_count", "time_to_live", "first_acquirer", "durable", "priority"]
    assert h.values() == [None, 500, False, True, None]
    assert repr(h) == str(dict(h.items()))


def test_sections_compare_by_their_fields() -> None:
    assert AmqpMessageHeader(priority=1) == AmqpMessageHeader(priority=1)
    assert AmqpMessageHeader(priority=1) != AmqpMessageHeader(priority=2)
    assert AmqpMessageProperties(subject="s") != AmqpMessageHeader()  # another section type
    assert AmqpMessageProperties(subject="s") == AmqpMessageProperties(subject="s")
    with pytest.raises(TypeError):
        hash(AmqpMessageHeader())  # mutable, compared by value: not hashable


def test_unknown_keywords_warn() -> None:
    with pytest.warns(UserWarning, match="Unsupported keyword args"):
        AmqpMessageProperties(subject="s", colour="red")
    with pytest.warns(UserWarning, match="Unsupported keyword args"):
        AmqpAnnotatedMessage(value_body=1, bogus=True)


def test_body_type_by_name_ignores_case() -> None:
    assert AmqpMessageBodyType["data"] is AmqpMessageBodyType.DATA
    assert AmqpMessageBodyType["Sequence"] is AmqpMessageBodyType.SEQUENCE
    with pytest.raises(KeyError):
        AmqpMessageBodyType["other"]


def test_sections_given_as_mappings_or_refused() -> None:
    m = AmqpAnnotatedMessage(data_body=b"x", header={"priority": 2}, properties={"subject": "s"})
    assert m.header == AmqpMessageHeader(priority=2) and m.properties == AmqpMessageProperties(subject="s")
    with pytest.raises(TypeError, match="AmqpMessageHeader or a mapping"):
        AmqpAnnotatedMessage(data_body=b"x", header=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sequence_body must be a list"):
        AmqpAnnotatedMessage(sequence_body=(1, 2))


def test_str_of_each_body_type() -> None:
    data = AmqpAnnotatedMessage(data_body=["ab", b"c"])
    assert str(data) == "abc" and list(data.body) == [b"ab", b"c"]
    seq = AmqpAnnotatedMessage(sequence_body=[1, 2])
    assert str(seq) == "[[1, 2]]" and list(seq.body) == [[1, 2]]
    value = AmqpAnnotatedMessage(value_body={"a": 1})
    assert str(value) == "{'a': 1}" and value.body == {"a": 1} and value.sections() == [{"a": 1}]
    assert "body_type='value'" in repr(value)
