"""Stand-in for the azure-servicebus tests' resource preparers (their servicebus_preparer.py).

Azure's preparers create a resource group, a namespace and entities through Azure Resource
Manager; here the namespace is the test server (tests/compat/live.py passes its address and ACL
user in the environment) and each entity preparer creates its queue, topic or subscription with the
same settings through sbredis's administration client, once per test, and deletes it afterwards.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

from tests.compat.devtools import _passthrough, inject

HOST = os.environ.get("SBREDIS_COMPAT_HOST", "127.0.0.1")
SERVICEBUS_ENDPOINT_SUFFIX = ":" + os.environ.get("SBREDIS_COMPAT_PORT", "6379")
USER = os.environ.get("SBREDIS_COMPAT_USER", "")
PASSWORD = os.environ.get("SBREDIS_COMPAT_PASSWORD", "")
CONNECTION_STRING = (
    f"Endpoint=sb://{HOST}{SERVICEBUS_ENDPOINT_SUFFIX}/;SharedAccessKeyName={USER};SharedAccessKey={PASSWORD};"
    "UseDevelopmentEmulator=true"
)


class Resource(NamedTuple):
    name: str


def _admin() -> Any:
    from sbredis.management import ServiceBusAdministrationClient

    return ServiceBusAdministrationClient.from_connection_string(CONNECTION_STRING)


CachedServiceBusResourceGroupPreparer = ServiceBusResourceGroupPreparer = _passthrough


def ServiceBusNamespacePreparer(*_: Any, **__: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:  # noqa: N802
    def values() -> dict[str, Any]:
        return {
            "servicebus_namespace": Resource(HOST),
            "servicebus_namespace_connection_string": CONNECTION_STRING,
            "servicebus_namespace_key_name": USER,
            "servicebus_namespace_primary_key": PASSWORD,
        }

    return lambda fn: inject(fn, values)


CachedServiceBusNamespacePreparer = ServiceBusNamespacePreparer


def _entity_preparer(
    parameter: str, create: Callable[[Any, str, dict[str, Any], dict[str, Any]], None]
) -> Callable[..., Callable[[Callable[..., Any]], Callable[..., Any]]]:
    def preparer(name_prefix: str = "", **settings: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        for key in ("use_cache", "parameter_name", "disable_recording", "playback_fake_resource", "client_kwargs"):
            settings.pop(key, None)
        settings.pop("random_name_enabled", None)

        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(fn)
            def with_entity(*args: Any, **kwargs: Any) -> Any:
                name = f"{name_prefix or parameter}{uuid.uuid4().hex[:8]}"
                with _admin() as admin:
                    create(admin, name, dict(settings), kwargs)
                kwargs[parameter] = Resource(name)
                return fn(*args, **kwargs)

            @functools.wraps(fn)
            async def with_entity_async(*args: Any, **kwargs: Any) -> Any:
                name = f"{name_prefix or parameter}{uuid.uuid4().hex[:8]}"
                with _admin() as admin:
                    create(admin, name, dict(settings), kwargs)
                kwargs[parameter] = Resource(name)
                return await fn(*args, **kwargs)

            import inspect

            wrapper = with_entity_async if inspect.iscoroutinefunction(fn) else with_entity
            signature = inspect.signature(fn)
            params = [p for n, p in signature.parameters.items() if n != parameter]
            wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
            return wrapper

        return decorate

    return preparer


def _queue(admin: Any, name: str, settings: dict[str, Any], _: dict[str, Any]) -> None:
    admin.create_queue(name, **settings)


def _topic(admin: Any, name: str, settings: dict[str, Any], _: dict[str, Any]) -> None:
    admin.create_topic(name, **settings)


def _subscription(admin: Any, name: str, settings: dict[str, Any], kwargs: dict[str, Any]) -> None:
    admin.create_subscription(kwargs["servicebus_topic"].name, name, **settings)


ServiceBusQueuePreparer = CachedServiceBusQueuePreparer = _entity_preparer("servicebus_queue", _queue)
ServiceBusTopicPreparer = CachedServiceBusTopicPreparer = _entity_preparer("servicebus_topic", _topic)
ServiceBusSubscriptionPreparer = CachedServiceBusSubscriptionPreparer = _entity_preparer(
    "servicebus_subscription", _subscription
)


def _authorization_rule(parameter: str) -> Callable[..., Callable[[Callable[..., Any]], Callable[..., Any]]]:
    def preparer(*_: Any, **__: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def values() -> dict[str, Any]:
            return {parameter: Resource(USER), f"{parameter}_connection_string": CONNECTION_STRING}

        return lambda fn: inject(fn, values)

    return preparer


ServiceBusNamespaceAuthorizationRulePreparer = _authorization_rule("servicebus_authorization_rule")
ServiceBusQueueAuthorizationRulePreparer = _authorization_rule("servicebus_queue_authorization_rule")
