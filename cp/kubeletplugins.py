"""The identity a DRA kubelet plugin on a simulated node runs with (issue #23), and what it may do.

A real plugin runs in a DaemonSet pod whose ServiceAccount token carries the node it runs on (the
`authentication.kubernetes.io/node-name` user extra). cplane has no pods for plugins, so the fleet
asks for a token of one ServiceAccount, `kube-system/dra-kubelet-plugin`, bound to each Node
(TokenRequest with `boundObjectRef` kind Node), and writes it into `ROOT/<node>/kubeconfig`.

What that identity may do is what upstream's example driver chart grants its kubelet plugin:

- RBAC (`cluster_role`): read ResourceClaims and Nodes, write ResourceSlices, and write a claim's
  `status.devices` with the node-aware verbs `associated-node:update`/`associated-node:patch` on
  `resourceclaims/driver` — only for claims allocated on the token's node (the granular status
  authorization of 1.36+, enforced by the API server's ResourceClaim admission). The chart narrows
  this to its driver with `resourceNames`; one account serves every driver here, so it is not.
- A ValidatingAdmissionPolicy (`admission_policy`) on the node-name claim, as the chart installs:
  the account may create, update and delete only ResourceSlices whose `spec.nodeName` is its node.

All of it is pure data; the server writes the objects at start-up (`api.auth.policy`), the fleet
asks for the tokens (`controllers.fleet`).
"""

from __future__ import annotations

from typing import Any

from cp import rbac

NAMESPACE = "kube-system"
ACCOUNT = "dra-kubelet-plugin"
USER = rbac.service_account_user(NAMESPACE, ACCOUNT)
ROLE = "cplane:dra-kubelet-plugin"
POLICY = "resourceslices-policy-dra-kubelet-plugin"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
# How long a plugin's token lives: a year (a kubelet rotates a pod's projected token after 80 % of
# its hour; nothing rotates these, so the fleet writes a fresh one each time it starts).
TOKEN_SECONDS = 365 * 24 * 3600
_R = "resource.k8s.io"


def service_account() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": ACCOUNT, "namespace": NAMESPACE,
                         "labels": {"app.kubernetes.io/managed-by": "cplane"}}}


def cluster_role_rules() -> list[dict[str, Any]]:
    return [
        rbac.rule(["get"], groups=[_R], resources=["resourceclaims"]),
        rbac.rule(["get", "patch", "update"], groups=[_R], resources=["resourceclaims/status"]),
        rbac.rule(["associated-node:patch", "associated-node:update"], groups=[_R],
                  resources=["resourceclaims/driver"]),
        rbac.rule(["get"], groups=[""], resources=["nodes"]),
        rbac.rule(["create", "delete", "get", "list", "patch", "update", "watch"], groups=[_R],
                  resources=["resourceslices"]),
    ]


def cluster_role() -> dict[str, Any]:
    """Reconciled at start-up like the default roles (`rbac.authorization.kubernetes.io/autoupdate`)."""
    return {"apiVersion": rbac.API_VERSION, "kind": "ClusterRole",
            "metadata": {"name": ROLE, "labels": dict(rbac.BOOTSTRAP_LABEL),
                         "annotations": {rbac.AUTOUPDATE: "true"}},
            "rules": cluster_role_rules()}


def cluster_role_binding() -> dict[str, Any]:
    return {"apiVersion": rbac.API_VERSION, "kind": "ClusterRoleBinding",
            "metadata": {"name": ROLE, "labels": dict(rbac.BOOTSTRAP_LABEL),
                         "annotations": {rbac.AUTOUPDATE: "true"}},
            "roleRef": {"apiGroup": rbac.GROUP, "kind": "ClusterRole", "name": ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}]}


def admission_policy() -> dict[str, Any]:
    """The ResourceSlice guard of upstream's example driver chart, for this account."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY, "labels": {"app.kubernetes.io/managed-by": "cplane"}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [_R], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE", "DELETE"],
                "resources": ["resourceslices"]}]},
            "matchConditions": [{"name": "isRestrictedUser",
                                 "expression": f'request.userInfo.username == "{USER}"'}],
            "variables": [
                {"name": "userNodeName",
                 "expression": f"request.userInfo.extra[?'{NODE_NAME_EXTRA}'][0].orValue('')"},
                {"name": "objectNodeName",
                 "expression": '(request.operation == "DELETE" ? oldObject : object).spec.?nodeName.orValue("")'},
            ],
            "validations": [
                {"expression": 'variables.userNodeName != ""',
                 "message": "no node association found for user, this user must run in a pod on a node and "
                            "ServiceAccountTokenPodNodeInfo must be enabled"},
                {"expression": "variables.userNodeName == variables.objectNodeName",
                 "messageExpression": "\"this user running on node '\" + variables.userNodeName + "
                                      "\"' may not modify \" + (variables.objectNodeName == \"\" ? "
                                      "\"cluster resourceslices\" : \"resourceslices on node '\" + "
                                      "variables.objectNodeName + \"'\")"},
            ],
        },
    }


def admission_policy_binding() -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": POLICY, "labels": {"app.kubernetes.io/managed-by": "cplane"}},
            "spec": {"policyName": POLICY, "validationActions": ["Deny"]}}


def token_request(*, node: str, node_uid: str = "", seconds: int = TOKEN_SECONDS) -> dict[str, Any]:
    """The TokenRequest the fleet sends for a node's plugins (bound to the Node: valid while it exists)."""
    ref: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "name": node}
    if node_uid:
        ref["uid"] = node_uid
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"boundObjectRef": ref, "expirationSeconds": seconds}}
