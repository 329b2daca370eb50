"""CRD conversion webhooks (`api.webhooks.conversion.convert`) against a real HTTPS conversion webhook
in the test: objects already in the desired version are not sent, converted ones come back with the
original metadata but for the webhook's labels and annotations, and every answer upstream refuses
(another uid, a failed result, a wrong count, version, kind, name or uid) is refused with its message."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from api.webhooks import client as clients
from api.webhooks import conversion
from storage import memory
from tests.webhook_servers import WebhookServer

V1, V2 = "stable.example.com/v1", "stable.example.com/v2"


def crontab(name: str, version: str = V1, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": version, "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "7",
                         "labels": {"app": name}},
            "spec": spec or {"cronSpec": "* * * * */5"}}


def v1_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    """The test webhook's conversion: v1's `cronSpec` is v2's `schedule`."""
    out = {**obj, "apiVersion": V2, "spec": {"schedule": obj["spec"].get("cronSpec")}}
    out["metadata"] = {**obj["metadata"], "labels": {**obj["metadata"].get("labels", {}), "converted": "yes"},
                       "resourceVersion": "999", "generation": 42}  # only labels and annotations are kept
    return out


def answer(review: dict[str, Any], convert: Callable[[dict[str, Any]], dict[str, Any]] = v1_to_v2,
           **response: Any) -> dict[str, Any]:
    request = review["request"]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": request["uid"], "result": {"status": "Success"},
                         "convertedObjects": [convert(o) for o in request["objects"]], **response}}


@pytest.fixture
async def hook() -> AsyncIterator[WebhookServer]:
    async with WebhookServer() as srv:
        yield srv


@pytest.fixture
async def client() -> AsyncIterator[clients.WebhookClient]:
    event_log = memory.MemoryEventLog()
    c = clients.WebhookClient(event_log=event_log)
    yield c
    await c.close()


def spec(hook: WebhookServer, path: str = "/convert", versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
    return {"strategy": "Webhook", "webhook": {"clientConfig": {"url": hook.url(path), "caBundle": hook.ca_bundle},
                                               "conversionReviewVersions": list(versions)}}


async def test_converts_what_is_not_in_the_desired_version(hook: WebhookServer,
                                                           client: clients.WebhookClient) -> None:
    hook.route("/convert", answer)
    objects = [crontab("a"), crontab("b", V2, schedule="x"), crontab("c")]
    out = await conversion.convert(conversion=spec(hook), objects=objects, desired_api_version=V2, client=client)
    assert [o["spec"] for o in out] == [{"schedule": "* * * * */5"}, {"schedule": "x"}, {"schedule": "* * * * */5"}]
    assert out[1] is objects[1]
    assert out[0]["metadata"] == {"name": "a", "namespace": "default", "uid": "uid-a", "resourceVersion": "7",
                                  "labels": {"app": "a", "converted": "yes"}}
    [review] = hook.calls["/convert"]
    assert review["apiVersion"] == "apiextensions.k8s.io/v1" and review["kind"] == "ConversionReview"
    assert review["request"]["desiredAPIVersion"] == V2
    assert [o["metadata"]["name"] for o in review["request"]["objects"]] == ["a", "c"]
    # Nothing to convert: no call.
    assert await conversion.convert(conversion=spec(hook), objects=[crontab("d", V2)], desired_api_version=V2,
                                    client=client) == [crontab("d", V2)]
    assert len(hook.calls["/convert"]) == 1


async def test_v1beta1_reviews_when_listed_first(hook: WebhookServer, client: clients.WebhookClient) -> None:
    def beta(review: dict[str, Any]) -> dict[str, Any]:
        out = answer(review)
        out["apiVersion"] = "apiextensions.k8s.io/v1beta1"
        out["response"]["uid"] = "not checked in v1beta1"
        return out

    hook.route("/beta", beta)
    out = await conversion.convert(conversion=spec(hook, "/beta", ("v1beta1", "v1")), objects=[crontab("a")],
                                   desired_api_version=V2, client=client)
    assert out[0]["apiVersion"] == V2
    assert hook.calls["/beta"][0]["apiVersion"] == "apiextensions.k8s.io/v1beta1"


def _with(changes: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def handler(review: dict[str, Any]) -> dict[str, Any]:
        out = answer(review)
        changes(out)
        return out
    return handler


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(out: dict[str, Any]) -> None:
        target = out
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


WHAT = "conversion webhook for stable.example.com/v1, Kind=CronTab"


@pytest.mark.parametrize(("change", "message"), [
    (_set(("response", "uid"), "other"), f'{WHAT} failed: expected response.uid="{{uid}}", got "other"'),
    (_set(("kind",), "AdmissionReview"), f"{WHAT} failed: expected webhook response of "
                                         "apiextensions.k8s.io/v1, Kind=ConversionReview, got "
                                         "apiextensions.k8s.io/v1, Kind=AdmissionReview"),
    (_set(("response", "result"), {"status": "Failure", "message": "cannot convert"}),
     f"{WHAT} failed: cannot convert"),
    (_set(("response", "result"), {"status": "Failure"}),
     f"{WHAT} failed: response.result.status was 'Failure', not 'Success'"),
    (_set(("response", "convertedObjects"), []), f"{WHAT} returned 0 objects, expected 1"),
    (_set(("response", "convertedObjects", 0, "apiVersion"), V1),
     f"{WHAT} returned invalid object at index 0: invalid groupVersion (expected {V2}, received {V1})"),
    (_set(("response", "convertedObjects", 0, "kind"), "Other"),
     f"{WHAT} returned invalid object at index 0: invalid kind (expected CronTab, received Other)"),
    (_set(("response", "convertedObjects", 0, "metadata", "name"), "b"),
     f"{WHAT} returned invalid object: must have the same name: a != b"),
    (_set(("response", "convertedObjects", 0, "metadata", "uid"), "x"),
     f"{WHAT} returned invalid object: must have the same UID: uid-a != x"),
    (_set(("response", "convertedObjects", 0, "metadata", "labels"), {"bad key!": "x"}),
     f"{WHAT} returned invalid metadata: metadata.labels: Invalid value: \"bad key!\": name part must consist "
     "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
     "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
])
async def test_answers_refused_as_upstream(hook: WebhookServer, client: clients.WebhookClient,
                                           change: Callable[[dict[str, Any]], None], message: str) -> None:
    hook.route("/convert", _with(change))
    with pytest.raises(conversion.ConversionError) as caught:
        await conversion.convert(conversion=spec(hook), objects=[crontab("a")], desired_api_version=V2,
                                 client=client)
    uid = hook.calls["/convert"][0]["request"]["uid"]
    assert str(caught.value) == message.replace("{uid}", uid)


async def test_transport_failures(hook: WebhookServer, client: clients.WebhookClient) -> None:
    with pytest.raises(conversion.ConversionError) as caught:
        await conversion.convert(conversion=spec(hook, "/missing"), objects=[crontab("a")], desired_api_version=V2,
                                 client=client)
    assert str(caught.value) == (f'{WHAT} failed: the server could not find the requested resource')
    with pytest.raises(conversion.ConversionError) as caught:
        await conversion.convert(conversion=spec(hook, versions=("v2",)), objects=[crontab("a")],
                                 desired_api_version=V2, client=client)
    assert str(caught.value) == "no supported conversion review versions"
