"""Builders of `log.Write`s for the storage tests, and `churn`, a random history of writes."""

from __future__ import annotations

import random
import time
from typing import Any

import msgspec

from storage import log

ACTOR = log.Actor(user="alice", field_manager="kubectl", user_agent="tests/1.0", request_id="req-1")


def pod(name: str, *, namespace: str = "default", uid: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"},
            **fields}


def added(name: str, *, namespace: str = "default", resource: str = "pods", group: str = "",
          at: float | None = None, **fields: Any) -> log.Write:
    return log.Write(type="ADDED", group=group, resource=resource, namespace=namespace, name=name,
                     object=pod(name, namespace=namespace, **fields), expected_revision=0,
                     time=time.time() if at is None else at, actor=ACTOR)


def modified(event: log.Event, *, expected: int | None = None, at: float | None = None,
             **fields: Any) -> log.Write:
    obj = msgspec.json.decode(event.object)
    obj.update(fields)
    return log.Write(type="MODIFIED", group=event.group, resource=event.resource, namespace=event.namespace,
                     name=event.name, object=obj,
                     expected_revision=event.revision if expected is None else expected,
                     time=time.time() if at is None else at, actor=ACTOR)


def deleted(event: log.Event, *, expected: int | None = None, at: float | None = None) -> log.Write:
    return log.Write(type="DELETED", group=event.group, resource=event.resource, namespace=event.namespace,
                     name=event.name, object=msgspec.json.decode(event.object),
                     expected_revision=event.revision if expected is None else expected,
                     time=time.time() if at is None else at, actor=ACTOR)


def body(event: log.Event) -> dict[str, Any]:
    return msgspec.json.decode(event.object)


async def churn(event_log: log.EventLog, *, steps: int, seed: int = 3, at: float | None = None,
                prefix: str = "p") -> None:
    rng = random.Random(seed)
    live: dict[str, log.Event] = {}
    for _ in range(steps):
        name = f"{prefix}{rng.randrange(15)}"
        current = live.get(name)
        if current is None:
            event = await event_log.append(added(name, namespace=rng.choice(["a", "b"]), at=at))
        elif rng.random() < 0.25:
            event = await event_log.append(deleted(current, at=at))
        else:
            event = await event_log.append(modified(current, spec={"r": rng.random()}, at=at))
        if event.type == "DELETED":
            live.pop(name)
        else:
            live[name] = event
