"""Async administration client (as azure.servicebus.aio.management)."""

from ..._core.entity import EntityStatus, QueueProperties
from ..._core.resubmit import ResubmitResult
from ..._core.rules import (
    CorrelationRuleFilter,
    FalseRuleFilter,
    SqlRuleAction,
    SqlRuleFilter,
    TrueRuleFilter,
)
from ..._core.topic_entity import RuleProperties, SubscriptionProperties, TopicProperties
from ..._models import PartitionRuntimeProperties, QueueRuntimeProperties
from ..._topic_models import SubscriptionRuntimeProperties, TopicRuntimeProperties
from ...management._sdk_names import AccessRights, ApiVersion, AuthorizationRule
from .._admin import ServiceBusAdministrationClient
from .._resubmit import resubmit_dead_letters

__all__ = [
    "AccessRights",
    "ApiVersion",
    "AuthorizationRule",
    "CorrelationRuleFilter",
    "EntityStatus",
    "FalseRuleFilter",
    "PartitionRuntimeProperties",
    "QueueProperties",
    "QueueRuntimeProperties",
    "ResubmitResult",
    "RuleProperties",
    "ServiceBusAdministrationClient",
    "SqlRuleAction",
    "SqlRuleFilter",
    "SubscriptionProperties",
    "SubscriptionRuntimeProperties",
    "TopicProperties",
    "TopicRuntimeProperties",
    "TrueRuleFilter",
    "resubmit_dead_letters",
]
