"""The controller registry: names and aliases, `--controllers`-style selections, and the argument
checks of `run_controllers`.

Out of scope: what the controllers do (their own test modules).
"""

from __future__ import annotations

import asyncio

import pytest

from controllers import registry


def test_resolve_names() -> None:
    everything = list(registry.CONTROLLERS)
    assert registry.resolve_names(None) == everything
    assert registry.resolve_names(["*"]) == everything
    assert registry.resolve_names(["namespace-controller"]) == ["namespace"]
    assert registry.resolve_names(["*", "-garbagecollector"]) == [n for n in everything if n != "garbage-collector"]
    assert registry.resolve_names(["namespace", "garbage-collector", "namespace"]) == ["namespace", "garbage-collector"]
    with pytest.raises(ValueError, match="unknown controller 'nope'"):
        registry.resolve_names(["nope"])


async def test_run_controllers_needs_one_endpoint() -> None:
    stop = asyncio.Event()
    with pytest.raises(ValueError):
        await registry.run_controllers(stop_event=stop)
    with pytest.raises(ValueError):
        await registry.run_controllers(server_url="http://127.0.0.1:1", kubeconfig="/nonexistent", stop_event=stop)
    with pytest.raises(ValueError):
        await registry.run_controllers(server_url="http://127.0.0.1:1", names=["bogus"], stop_event=stop)
