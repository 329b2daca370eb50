"""ResourceQuota: what objects count (`evaluators`), charging a write at admission and measuring a
namespace's usage (`charging`). Both the admission plugin (`api.admission.resourcequota`) and the
resource quota controller (`controllers.resourcequota`) run this code, so what admission charges and
what the controller recalculates agree. Pure.
"""

from __future__ import annotations

from cp.quota.charging import QuotaRefused, QuotaState, calculate_usage, check_request, evaluators_for
from cp.quota.evaluators import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    Evaluator,
    Scope,
    ScopeError,
    UsageContext,
    device_class_context,
    evaluator_for,
    is_ignored,
    pod_is_charged,
    pod_usage,
    quota_service_type,
    scopes_of,
)

__all__ = [
    "EXTENDED_RESOURCE_CLAIM_ANNOTATION", "Evaluator", "QuotaRefused", "QuotaState", "Scope", "ScopeError", "UsageContext", "calculate_usage",
    "check_request", "device_class_context", "evaluator_for", "evaluators_for", "is_ignored",
    "pod_is_charged", "pod_usage", "quota_service_type", "scopes_of",
]
