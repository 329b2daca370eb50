"""The kubelet's plugin protocols, as gRPC over unix sockets (issue #23): the `.proto` files here are
written from upstream's documented wire format (k8s.io/kubelet `pkg/apis/...`: package, service,
message and field names and numbers), and the `*_pb2.py`, `*_pb2.pyi` and `*_pb2_grpc.py` modules
beside them are generated from them by grpcio-tools (`make protos`; committed, and a test checks that
regenerating gives the same files). Pure: protobuf and grpc only.

- `pluginregistration_v1` — `pluginregistration.Registration` (GetInfo, NotifyRegistrationStatus),
  served by every plugin on its socket in the kubelet's `plugins_registry/`.
- `dra_v1`, `dra_v1beta1` — `DRAPlugin` (NodePrepareResources, NodeUnprepareResources), advertised
  in `supported_versions` as "v1.DRAPlugin" / "v1beta1.DRAPlugin".
- `drahealth_v1alpha1`, `drahealth_v1beta1`, `drahealth_v1` — `DRAResourceHealth`
  (NodeWatchResources, a server stream), advertised as "v1alpha1.DRAResourceHealth" etc.
"""

from __future__ import annotations

# The names a DRA plugin lists in `PluginInfo.supported_versions` ("<gRPC package>.<service>", the
# last component of the package for the DRA service, as upstream's constants are).
DRA_PLUGIN_TYPE = "DRAPlugin"
DRA_V1 = "v1.DRAPlugin"
DRA_V1BETA1 = "v1beta1.DRAPlugin"
HEALTH_V1 = "v1.DRAResourceHealth"
HEALTH_V1BETA1 = "v1beta1.DRAResourceHealth"
HEALTH_V1ALPHA1 = "v1alpha1.DRAResourceHealth"

PROTOS = ("pluginregistration_v1", "dra_v1", "dra_v1beta1",
          "drahealth_v1alpha1", "drahealth_v1beta1", "drahealth_v1")
