"""cp/rbac.py: rule matching, subjects, bindings, escalation coverage, messages, default roles."""

from __future__ import annotations

from typing import Any

from cp import rbac

ALICE = rbac.UserInfo(name="alice", groups=("system:authenticated",))
BOB = rbac.UserInfo(name="bob", groups=("devs", "system:authenticated"))
SA = rbac.UserInfo(name="system:serviceaccount:team:builder",
                   groups=("system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"))


def attrs(user: rbac.UserInfo, verb: str, resource: str, *, ns: str = "", group: str = "", sub: str = "",
          name: str = "") -> rbac.Attributes:
    return rbac.Attributes(user=user, verb=verb, resource=resource, namespace=ns, api_group=group,
                           subresource=sub, name=name)


def role(name: str, rules: list[dict[str, Any]], ns: str = "") -> dict[str, Any]:
    return {"kind": "Role" if ns else "ClusterRole", "metadata": {"name": name, "namespace": ns} if ns else
            {"name": name}, "rules": rules}


def bind(name: str, ref_kind: str, ref: str, subjects: list[dict[str, Any]], ns: str = "") -> dict[str, Any]:
    return {"kind": "RoleBinding" if ns else "ClusterRoleBinding",
            "metadata": {"name": name, "namespace": ns} if ns else {"name": name},
            "roleRef": {"apiGroup": rbac.GROUP, "kind": ref_kind, "name": ref}, "subjects": subjects}


def test_rule_matching() -> None:
    r = rbac.rule(["get", "list"], groups=["", "apps"], resources=["pods", "deployments/scale", "*/status"],
                  names=["a"])
    assert rbac.rule_allows(attrs(ALICE, "get", "pods", name="a"), r)
    assert not rbac.rule_allows(attrs(ALICE, "get", "pods", name="b"), r)
    assert not rbac.rule_allows(attrs(ALICE, "list", "pods"), r)  # resourceNames never match an empty name
    assert rbac.rule_allows(attrs(ALICE, "get", "deployments", group="apps", sub="scale", name="a"), r)
    assert not rbac.rule_allows(attrs(ALICE, "get", "deployments", group="apps", name="a"), r)
    assert rbac.rule_allows(attrs(ALICE, "get", "nodes", sub="status", name="a"), r)  # */status
    assert not rbac.rule_allows(attrs(ALICE, "delete", "pods", name="a"), r)
    assert not rbac.rule_allows(attrs(ALICE, "get", "pods", group="batch", name="a"), r)
    star = rbac.rule(["*"], groups=["*"], resources=["*"])
    assert rbac.rule_allows(attrs(ALICE, "escalate", "roles", group=rbac.GROUP), star)
    assert rbac.rule_allows(attrs(ALICE, "get", "pods", sub="log"), star)
    urls = rbac.rule(["get"], urls=["/healthz", "/apis/*"])
    path = lambda p: rbac.Attributes(user=ALICE, verb="get", resource_request=False, path=p)  # noqa: E731
    assert rbac.rule_allows(path("/healthz"), urls)
    assert rbac.rule_allows(path("/apis/apps/v1"), urls)
    assert not rbac.rule_allows(path("/healthz/etcd"), urls)
    assert not rbac.rule_allows(path("/api"), urls)


def test_subjects_and_binding_scopes() -> None:
    reader = role("reader", [rbac.rule(["get"], groups=[""], resources=["pods"])])
    local = role("local", [rbac.rule(["create"], groups=[""], resources=["configmaps"])], ns="team")
    policy = rbac.Policy.of([
        reader, local,
        bind("group", "ClusterRole", "reader", [{"kind": "Group", "name": "devs"}]),
        bind("sa", "Role", "local", [{"kind": "ServiceAccount", "name": "builder"}], ns="team"),
        bind("user-in-team", "ClusterRole", "reader", [{"kind": "User", "name": "alice"}], ns="team"),
        bind("dangling", "Role", "missing", [{"kind": "User", "name": "alice"}], ns="other"),
    ])
    assert policy.authorize(attrs(BOB, "get", "pods", ns="anywhere")).allowed
    assert policy.authorize(attrs(BOB, "get", "pods")).allowed  # cluster-wide
    allowed = policy.authorize(attrs(ALICE, "get", "pods", ns="team"))
    assert allowed.allowed
    assert allowed.reason == ('RBAC: allowed by RoleBinding "user-in-team/team" of ClusterRole "reader" to '
                              'User "alice"')
    assert not policy.authorize(attrs(ALICE, "get", "pods", ns="other")).allowed
    assert not policy.authorize(attrs(ALICE, "get", "pods")).allowed  # a RoleBinding grants nothing cluster-wide
    denied = policy.authorize(attrs(ALICE, "get", "pods", ns="other"))
    assert denied.reason == f'RBAC: role.{rbac.GROUP} "missing" not found'
    assert policy.authorize(attrs(SA, "create", "configmaps", ns="team")).allowed  # SA namespace defaults
    assert not policy.authorize(attrs(SA, "create", "configmaps", ns="other")).allowed
    impostor = rbac.UserInfo(name="system:serviceaccount:other:builder")
    assert not policy.authorize(attrs(impostor, "create", "configmaps", ns="team")).allowed


def test_covers_and_escalation_message() -> None:
    owner = [rbac.rule(["get", "list"], groups=[""], resources=["pods", "*/status"]),
             rbac.rule(["get"], groups=["apps"], resources=["deployments"], names=["web"])]
    assert rbac.covers(owner, [rbac.rule(["get"], groups=[""], resources=["pods", "nodes/status"])])[0]
    assert rbac.covers(owner, [rbac.rule(["get"], groups=["apps"], resources=["deployments"], names=["web"])])[0]
    ok, missing = rbac.covers(owner, [rbac.rule(["get"], groups=["apps"], resources=["deployments"])])
    assert not ok and missing == [rbac.rule(["get"], groups=["apps"], resources=["deployments"])]
    ok, missing = rbac.covers(owner, [rbac.rule(["delete", "get"], groups=[""], resources=["pods"])])
    assert not ok
    msg = rbac.escalation_message(ALICE, missing)
    assert msg == ('user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
                   'currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}')
    assert rbac.covers([rbac.rule(["*"], groups=["*"], resources=["*"]), rbac.rule(["*"], urls=["*"])],
                       rbac.default_cluster_roles()[1]["rules"])[0]


def test_forbidden_messages_follow_upstream() -> None:
    msg, details = rbac.forbidden(attrs(ALICE, "list", "pods", ns="default"))
    assert msg == 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"'
    assert details == {"kind": "pods"}
    msg, details = rbac.forbidden(attrs(ALICE, "update", "deployments", group="apps", sub="scale", name="web"))
    assert msg == ('deployments.apps "web" is forbidden: User "alice" cannot update resource "deployments/scale" '
                   'in API group "apps" at the cluster scope')
    assert details == {"name": "web", "group": "apps", "kind": "deployments"}
    msg, _ = rbac.forbidden(rbac.Attributes(user=ALICE, verb="get", resource_request=False, path="/metrics"),
                            "RBAC: x")
    assert msg == 'forbidden: User "alice" cannot get path "/metrics": RBAC: x'


def test_default_roles_nest_and_are_aggregation_free() -> None:
    roles = {r["metadata"]["name"]: r for r in rbac.default_cluster_roles()}
    for name in ("cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
                 "system:public-info-viewer", "system:kube-scheduler", "system:kube-controller-manager"):
        assert name in roles
        assert "aggregationRule" not in roles[name]
        assert roles[name]["metadata"]["labels"] == rbac.BOOTSTRAP_LABEL
    assert rbac.covers(roles["admin"]["rules"], roles["edit"]["rules"])[0]
    assert rbac.covers(roles["edit"]["rules"], roles["view"]["rules"])[0]
    assert not rbac.covers(roles["view"]["rules"], [rbac.rule(["get"], groups=[""], resources=["secrets"])])[0]
    assert not rbac.covers(roles["edit"]["rules"], [rbac.rule(["create"], groups=[rbac.GROUP],
                                                              resources=["rolebindings"])])[0]
    for account in rbac.CONTROLLER_ACCOUNTS.values():
        assert f"system:controller:{account}" in roles
    policy = rbac.default_policy()
    gc = rbac.UserInfo(name=rbac.service_account_user("kube-system", "generic-garbage-collector"))
    assert policy.authorize(attrs(gc, "delete", "pods", ns="x")).allowed
    rs = rbac.UserInfo(name=rbac.service_account_user("kube-system", "replicaset-controller"))
    assert policy.authorize(attrs(rs, "create", "pods", ns="x")).allowed
    assert not policy.authorize(attrs(rs, "create", "deployments", group="apps", ns="x")).allowed
    assert not policy.authorize(attrs(rs, "get", "secrets", ns="x")).allowed
    sched = rbac.UserInfo(name=rbac.KUBE_SCHEDULER)
    assert policy.authorize(attrs(sched, "create", "pods", sub="binding", ns="x", name="p")).allowed
    assert not policy.authorize(attrs(sched, "delete", "nodes", name="n")).allowed
    anon = rbac.UserInfo(name=rbac.ANONYMOUS, groups=(rbac.UNAUTHENTICATED,))
    assert policy.authorize(rbac.Attributes(user=anon, verb="get", resource_request=False, path="/healthz")).allowed
    assert not policy.authorize(rbac.Attributes(user=anon, verb="get", resource_request=False, path="/api")).allowed
    assert not policy.authorize(attrs(anon, "list", "pods")).allowed


def test_validation_of_rbac_objects() -> None:
    ok = bind("b", "ClusterRole", "view", [{"kind": "User", "name": "a", "apiGroup": rbac.GROUP}], ns="n")
    assert rbac.validate(ok, None) == []
    bad_ref = dict(ok, roleRef={"apiGroup": "x", "kind": "Pod", "name": ""})
    fields = {f for _t, f, _d, _v in rbac.validate(bad_ref, None)}
    assert fields == {"roleRef.apiGroup", "roleRef.kind", "roleRef.name"}
    changed = dict(ok, roleRef={"apiGroup": rbac.GROUP, "kind": "ClusterRole", "name": "edit"})
    assert [(t, f, d) for t, f, d, _ in rbac.validate(changed, ok)] == [("Invalid", "roleRef", "cannot change roleRef")]
    crb = bind("c", "Role", "r", [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "r"}])
    fields = {f for _t, f, _d, _v in rbac.validate(crb, None)}
    assert fields == {"roleRef.kind", "subjects[0].namespace", "subjects[1].kind"}
    r = role("r", [{"verbs": [], "resources": ["pods"]}, {"verbs": ["get"], "nonResourceURLs": ["/x"]}], ns="n")
    found = [(t, f) for t, f, _d, _v in rbac.validate(r, None)]
    assert found == [("Required", "rules[0].verbs"), ("Required", "rules[0].apiGroups"),
                     ("Invalid", "rules[1].nonResourceURLs")]


def test_the_fleet_simulator_may_do_what_real_plugins_kubelets_do() -> None:
    """Its kubelets wipe a dead plugin's slices (deletecollection), turn health streams into
    DeviceHealth reports and write FailedPrepareDynamicResources events."""
    policy = rbac.default_policy()
    fleet = rbac.UserInfo(name=rbac.service_account_user("kube-system", "fleet-simulator"))
    assert policy.authorize(attrs(fleet, "deletecollection", "resourceslices", group="resource.k8s.io")).allowed
    for verb in ("create", "get", "patch"):
        assert policy.authorize(attrs(fleet, verb, "devicehealths", group="sim.cplane.dev", name="x")).allowed
    assert policy.authorize(attrs(fleet, "create", "events", ns="default")).allowed
    assert not policy.authorize(attrs(fleet, "delete", "devicehealths", group="sim.cplane.dev", name="x")).allowed
