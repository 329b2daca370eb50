"""Real DRA kubelet plugins on simulated nodes (issue #23): each fleet node's kubelet watches
`ROOT/<node>/plugins_registry` as upstream's plugin watcher does, registers DRA plugins over
pluginregistration v1 (`registration`), calls them over DRA v1 / v1beta1 and reads their
dra-health stream (`client`), keeps the registrations per node (`manager`), and does what the
kubelet's DRA manager does for pods and claims (`kubelet`). The protocols'
generated code is in `cp.kubeletapi`; docs/fleet.md, "Kubelet plugins", describes the behaviour."""

from controllers.fleet.plugins.kubelet import FAILED_PREPARE, KubeletDRA
from controllers.fleet.plugins.manager import FIELD_MANAGER, SCAN_INTERVAL, WIPE_DELAY, NodePlugins, Plugins
from controllers.fleet.plugins.registration import PluginInfo, RegistrationError

__all__ = ["FAILED_PREPARE", "FIELD_MANAGER", "SCAN_INTERVAL", "WIPE_DELAY", "KubeletDRA", "NodePlugins",
           "PluginInfo", "Plugins", "RegistrationError"]
