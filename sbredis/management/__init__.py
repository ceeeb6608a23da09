"""Administration client and entity models (as azure.servicebus.management)."""

from .._core.entity import EntityStatus, QueueProperties
from .._core.resubmit import ResubmitResult
from .._core.rules import (
    CorrelationRuleFilter,
    FalseRuleFilter,
    SqlRuleAction,
    SqlRuleFilter,
    TrueRuleFilter,
)
from .._core.topic_entity import RuleProperties, SubscriptionProperties, TopicProperties
from .._models import PartitionRuntimeProperties, QueueRuntimeProperties
from .._sync._admin import ServiceBusAdministrationClient
from .._sync._resubmit import resubmit_dead_letters
from .._topic_models import SubscriptionRuntimeProperties, TopicRuntimeProperties
from ._sdk_names import AccessRights, ApiVersion, AuthorizationRule

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
