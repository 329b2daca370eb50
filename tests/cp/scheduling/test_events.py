"""Cluster event names: every registration of the fused core filters, DynamicResources and each
plugin class in `profiles.PLUGINS` is a known `Resource/Action` (a misspelt one would never match)."""

from __future__ import annotations

import pytest

from cp.scheduling import events, profiles


def _registrations() -> list[tuple[str, str]]:
    profiles.default_profile()  # imports the plugin modules
    out = [(name, ev) for name, evs in events.CORE_EVENTS.items() for ev in evs]
    out += [("DynamicResources", ev) for ev in events.DRA_EVENTS]
    for name, factory in sorted(profiles.PLUGINS.items()):
        out += [(name, ev) for ev in getattr(factory, "events", ())]
    return out


@pytest.mark.parametrize(("plugin", "event"), _registrations())
def test_registered_events_are_known(plugin: str, event: str) -> None:
    events.check(event)


@pytest.mark.parametrize("bad", ["Node", "Node/Added", "Nodes/Add", "node/add", "/Add"])
def test_unknown_event_names_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="unknown cluster event"):
        events.check(bad)
