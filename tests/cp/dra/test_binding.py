"""Binding conditions of allocated devices (`cp.dra.binding`): upstream's `isClaimReadyForBinding`,
`isClaimTimeout` and `hasBindingConditions` (pkg/scheduler/framework/plugins/dynamicresources), as
data: the claim's allocation results and status.devices, and the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from cp import clock as clocks
from cp.dra import binding

T0 = 1_700_000_000.0


def result(device: str = "dev-1", *, bc: list[str] | None = None, bfc: list[str] | None = None,
           pool: str = "pool-1") -> dict[str, Any]:
    r: dict[str, Any] = {"request": "req-0", "driver": "drv.example.com", "pool": pool, "device": device}
    if bc is not None:
        r["bindingConditions"] = bc
    if bfc is not None:
        r["bindingFailureConditions"] = bfc
    return r


def status(device: str = "dev-1", *conds: tuple[str, str], pool: str = "pool-1", share: str | None = None
           ) -> dict[str, Any]:
    entry: dict[str, Any] = {"driver": "drv.example.com", "pool": pool, "device": device,
                             "conditions": [{"type": t, "status": st, "reason": f"R{t}", "message": f"m {t}",
                                             "lastTransitionTime": clocks.rfc3339(T0)} for t, st in conds]}
    if share:
        entry["shareID"] = share
    return entry


def claim(*results: dict[str, Any], devices: list[dict[str, Any]] | None = None,
          stamp: float | None = T0, allocated: bool = True) -> dict[str, Any]:
    st: dict[str, Any] = {}
    if allocated:
        st["allocation"] = {"devices": {"results": list(results)}}
        if stamp is not None:
            st["allocation"]["allocationTimestamp"] = clocks.rfc3339(stamp)
    if devices is not None:
        st["devices"] = devices
    return {"metadata": {"name": "claim-1", "namespace": "default"}, "status": st}


READY_CASES = [
    # (name, claim, ready | error message)
    ("not-allocated", claim(allocated=False), False),
    ("no-binding-conditions", claim(result()), True),
    ("no-device-status-yet", claim(result(bc=["attached"], bfc=["failed"])), False),
    ("condition-missing", claim(result(bc=["attached"], bfc=["failed"]), devices=[status()]), False),
    ("condition-false", claim(result(bc=["attached"], bfc=["failed"]),
                              devices=[status("dev-1", ("attached", "False"))]), False),
    ("condition-true", claim(result(bc=["attached"], bfc=["failed"]),
                             devices=[status("dev-1", ("attached", "True"))]), True),
    ("one-of-two-conditions", claim(result(bc=["attached", "initialized"], bfc=["failed"]),
                                    devices=[status("dev-1", ("attached", "True"))]), False),
    ("all-conditions-of-all-devices",
     claim(result("dev-1", bc=["attached"], bfc=["failed"]), result("dev-2", bc=["attached"], bfc=["failed"]),
           devices=[status("dev-1", ("attached", "True")), status("dev-2", ("attached", "True"))]), True),
    ("second-device-pending",
     claim(result("dev-1", bc=["attached"], bfc=["failed"]), result("dev-2", bc=["attached"], bfc=["failed"]),
           devices=[status("dev-1", ("attached", "True"))]), False),
    ("status-of-another-pool-does-not-count",
     claim(result(bc=["attached"], bfc=["failed"]), devices=[status("dev-1", ("attached", "True"), pool="pool-2")]),
     False),
    ("share-id-is-not-compared",
     claim(result(bc=["attached"], bfc=["failed"]), devices=[status("dev-1", ("attached", "True"), share="x")]), True),
    ("failure-condition-true",
     claim(result(bc=["attached"], bfc=["failed"]), devices=[status("dev-1", ("attached", "False"), ("failed", "True"))]),
     'device binding failed: claim=claim-1, reason=Rfailed, message="m failed"'),
    ("failure-wins-over-ready",
     claim(result(bc=["attached"], bfc=["failed"]), devices=[status("dev-1", ("attached", "True"), ("failed", "True"))]),
     'device binding failed: claim=claim-1, reason=Rfailed, message="m failed"'),
    ("failure-condition-false",
     claim(result(bc=["attached"], bfc=["failed"]), devices=[status("dev-1", ("attached", "True"), ("failed", "False"))]),
     True),
    ("failure-of-a-device-without-binding-conditions-is-ignored",
     claim(result(bfc=["failed"]), devices=[status("dev-1", ("failed", "True"))]), True),
]


@pytest.mark.parametrize(("name", "obj", "want"), READY_CASES, ids=[c[0] for c in READY_CASES])
def test_claim_ready_for_binding(name: str, obj: dict[str, Any], want: bool | str) -> None:
    if isinstance(want, str):
        with pytest.raises(binding.BindingFailed) as exc:
            binding.claim_ready_for_binding(obj)
        assert str(exc.value) == want
    else:
        assert binding.claim_ready_for_binding(obj) is want


TIMEOUT_CASES = [
    # (name, claim, now, timed out) with a 600 s binding timeout
    ("within-the-timeout", claim(result(bc=["attached"], bfc=["failed"])), T0 + 599, False),
    ("exactly-at-the-timeout", claim(result(bc=["attached"], bfc=["failed"])), T0 + 600, False),
    ("past-the-timeout", claim(result(bc=["attached"], bfc=["failed"])), T0 + 601, True),
    ("no-allocation-timestamp", claim(result(bc=["attached"], bfc=["failed"]), stamp=None), T0 + 6000, False),
    ("no-binding-conditions", claim(result()), T0 + 6000, False),
    ("not-allocated", claim(allocated=False), T0 + 6000, False),
]


@pytest.mark.parametrize(("name", "obj", "now", "want"), TIMEOUT_CASES, ids=[c[0] for c in TIMEOUT_CASES])
def test_claim_timed_out(name: str, obj: dict[str, Any], now: float, want: bool) -> None:
    assert binding.claim_timed_out(obj, now=now, timeout=600.0) is want


def test_claims_have_binding_conditions() -> None:
    assert not binding.claims_have_binding_conditions([claim(result()), None, claim(allocated=False)])
    assert binding.claims_have_binding_conditions([claim(result()), claim(result(bc=["attached"], bfc=["f"]))])
    assert binding.allocation_has_binding_conditions({"devices": {"results": [result(bc=["attached"], bfc=["f"])]}})
    assert not binding.allocation_has_binding_conditions(None)
