"""Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).

Since 1.35, client-go's typed clients send writes as protobuf and never fall back to JSON
on a 415 (`../shared/reference/kubectl-compat.md` §7). Observed with kubectl 1.37.1, the
protobuf writers to kinds we serve are `create namespace`, `create configmap`, `create
deployment`, `autoscale` (an autoscaling/v2 HPA), `debug` (the Pod it creates, for
`--copy-to` and `node/...`) and `drain --disable-eviction` (DeleteOptions in the DELETE
body); `drain`'s Evictions, `run`, `create -f`, `apply`, `delete`, `scale` and the patching
commands send JSON. Go controllers and DRA drivers built on client-go send protobuf for
every built-in kind, hence the tables cover all the kinds in `cp.resources`.

A body is the 4-byte prefix `k8s\\x00` followed by a `runtime.Unknown` message: `typeMeta`
(apiVersion, kind), `raw` (the typed message), `contentEncoding` and `contentType` (both
empty). `decode` turns it into the dict the JSON path would have produced from the same
object as Go's `encoding/json` writes it:

- JSON field names; inlined Go structs (`LocalObjectReference`, `ProbeHandler`,
  `VolumeSource`...) merge into their parent;
- scalars that Go writes with `omitempty` are left out when zero. gogo-protobuf puts every
  non-pointer field on the wire even when zero, so a scalar that is present is kept only
  when it is a pointer in Go (`replicas`, `immutable`...) or has no `omitempty` (these
  carry `!` in the tables); nested messages that are present are always kept, as Go's
  JSON writes `"spec": {}`;
- empty lists and maps are left out (the wire cannot tell nil from empty), except that a
  list Go writes without `omitempty` (`containers`, HPA `status.currentMetrics`...) is
  `null` when absent, as Go writes a nil slice;
- `Time` is RFC 3339 in seconds, `MicroTime` with six fractional digits, and a zero time
  is `null` (left out for `creationTimestamp`, which is `omitzero`); `Quantity` is its
  string; `IntOrString` an int or a string; `bytes` values (ConfigMap `binaryData`) are
  base64; `RawExtension` and `FieldsV1` are the JSON they carry.

Fields the tables do not know are skipped, as upstream does, so `fieldValidation=Strict`
cannot flag them. The message descriptions follow the `generated.proto` files of
kubernetes/api and apimachinery for 1.37 (numbers from there; JSON names and pointer/
omitempty facts from `types.go`). Known gaps: four alpha fields added late in 1.37 whose
field numbers were not available: `NodeSystemInfo.runningInUserNamespace`,
`DeviceCounterConsumption.compatibilityGroups` and `derivedAttributes` of
`ExactDeviceRequest`/`DeviceSubRequest`; they are dropped if sent.

Pure; no I/O. The tables are compiled on the first call.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
from typing import Any

from cp import errors

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# --------------------------------------------------------------------------------------------
# Message descriptions.
#
# One string per message: comma-separated fields `NUMBER jsonName[:type][flag]`.
#   type   s (default) | i32 | i64 | bool | bytes | [T] repeated | {T} map<string, T>
#          | a message of the same package, else of meta/v1, else of core/v1
#          | Time | MicroTime | Quantity | IntOrString | RawExtension | FieldsV1
#   flag   ! keep the value even when zero (a Go pointer, or no `omitempty`); on a list,
#            write `null` when it is absent (no `omitempty`)
#          ? leave a zero time out (`omitzero`)
#   `NUMBER ...Message` inlines an embedded Go struct into the parent's JSON object.
# Dicts are keyed by message name and grouped by the package's OpenAPI prefix, so that
# "io.k8s.api.core.v1.PodSpec" names the description of PodSpec.
# --------------------------------------------------------------------------------------------

_META: dict[str, str] = {  # io.k8s.apimachinery.pkg.apis.meta.v1
    "DeleteOptions": (
        "1 gracePeriodSeconds:i64!, 2 preconditions:Preconditions, 3 orphanDependents:bool!, "
        "4 propagationPolicy!, 5 dryRun:[s], 6 ignoreStoreReadErrorWithClusterBreakingPotential:bool!"),
    "ObjectMeta": (
        "1 name, 2 generateName, 3 namespace, 4 selfLink, 5 uid, 6 resourceVersion, 7 generation:i64, "
        "8 creationTimestamp:Time?, 9 deletionTimestamp:Time, 10 deletionGracePeriodSeconds:i64!, "
        "11 labels:{s}, 12 annotations:{s}, 13 ownerReferences:[OwnerReference], 14 finalizers:[s], "
        "17 managedFields:[ManagedFieldsEntry]"),
    "Preconditions": "1 uid!, 2 resourceVersion!",
    "OwnerReference": (
        "5 apiVersion!, 1 kind!, 3 name!, 4 uid!, 6 controller:bool!, 7 blockOwnerDeletion:bool!"),
    "ManagedFieldsEntry": (
        "1 manager, 2 operation, 3 apiVersion, 4 time:Time, 6 fieldsType, 7 fieldsV1:FieldsV1, "
        "8 subresource"),
    "LabelSelector": "1 matchLabels:{s}, 2 matchExpressions:[LabelSelectorRequirement]",
    "Condition": (
        "1 type!, 2 status!, 3 observedGeneration:i64, 4 lastTransitionTime:Time, 5 reason!, 6 message!"),
    "LabelSelectorRequirement": "1 key!, 2 operator!, 3 values:[s]",
    "FieldSelectorRequirement": "1 key!, 2 operator!, 3 values:[s]",  # issue #10 (SelfSubjectAccessReview)
}
_CORE: dict[str, str] = {  # io.k8s.api.core.v1
    "Namespace": "1 metadata:ObjectMeta, 2 spec:NamespaceSpec, 3 status:NamespaceStatus",
    "Node": "1 metadata:ObjectMeta, 2 spec:NodeSpec, 3 status:NodeStatus",
    "Pod": "1 metadata:ObjectMeta, 2 spec:PodSpec, 3 status:PodStatus",
    "Event": (
        "1 metadata:ObjectMeta, 2 involvedObject:ObjectReference, 3 reason, 4 message, "
        "5 source:EventSource, 6 firstTimestamp:Time, 7 lastTimestamp:Time, 8 count:i32, 9 type, "
        "10 eventTime:MicroTime, 11 series:EventSeries, 12 action, 13 related:ObjectReference, "
        "14 reportingComponent!, 15 reportingInstance!"),
    "ConfigMap": "1 metadata:ObjectMeta, 4 immutable:bool!, 2 data:{s}, 3 binaryData:{bytes}",
    "Binding": "1 metadata:ObjectMeta, 2 target:ObjectReference",
    "ResourceClaim": "1 name!, 2 request",
    "NamespaceSpec": "1 finalizers:[s]",
    "NamespaceStatus": "1 phase, 2 conditions:[NamespaceCondition]",
    "NodeSpec": (
        "1 podCIDR, 7 podCIDRs:[s], 3 providerID, 4 unschedulable:bool, 5 taints:[Taint], "
        "6 configSource:NodeConfigSource, 2 externalID, 8 podPreemptionPolicy:NodePodPreemptionPolicy"),
    "NodeStatus": (
        "1 capacity:{Quantity}, 2 allocatable:{Quantity}, 3 phase, 4 conditions:[NodeCondition], "
        "5 addresses:[NodeAddress], 6 daemonEndpoints:NodeDaemonEndpoints, 7 nodeInfo:NodeSystemInfo, "
        "8 images:[ContainerImage], 9 volumesInUse:[s], 10 volumesAttached:[AttachedVolume], "
        "11 config:NodeConfigStatus, 12 runtimeHandlers:[NodeRuntimeHandler], 13 features:NodeFeatures, "
        "14 declaredFeatures:[s]"),
    "PodSpec": (
        "1 volumes:[Volume], 20 initContainers:[Container], 2 containers:[Container]!, "
        "34 ephemeralContainers:[EphemeralContainer], 3 restartPolicy, "
        "4 terminationGracePeriodSeconds:i64!, 5 activeDeadlineSeconds:i64!, 6 dnsPolicy, "
        "7 nodeSelector:{s}, 8 serviceAccountName, 9 serviceAccount, "
        "21 automountServiceAccountToken:bool!, 10 nodeName, 11 hostNetwork:bool, 12 hostPID:bool, "
        "13 hostIPC:bool, 27 shareProcessNamespace:bool!, 14 securityContext:PodSecurityContext, "
        "15 imagePullSecrets:[LocalObjectReference], 16 hostname, 17 subdomain, 18 affinity:Affinity, "
        "19 schedulerName, 22 tolerations:[Toleration], 23 hostAliases:[HostAlias], "
        "24 priorityClassName, 25 priority:i32!, 26 dnsConfig:PodDNSConfig, "
        "28 readinessGates:[PodReadinessGate], 29 runtimeClassName!, 30 enableServiceLinks:bool!, "
        "31 preemptionPolicy!, 32 overhead:{Quantity}, "
        "33 topologySpreadConstraints:[TopologySpreadConstraint], 35 setHostnameAsFQDN:bool!, "
        "36 os:PodOS, 37 hostUsers:bool!, 38 schedulingGates:[PodSchedulingGate], "
        "39 resourceClaims:[PodResourceClaim], 40 resources:ResourceRequirements, 41 hostnameOverride!, "
        "43 schedulingGroup:PodSchedulingGroup, 44 evictionResponders:[EvictionResponder]"),
    "PodStatus": (
        "17 observedGeneration:i64, 1 phase, 2 conditions:[PodCondition], 3 message, 4 reason, "
        "11 nominatedNodeName, 5 hostIP, 16 hostIPs:[HostIP], 6 podIP, 12 podIPs:[PodIP], "
        "7 startTime:Time, 10 initContainerStatuses:[ContainerStatus], "
        "8 containerStatuses:[ContainerStatus], 9 qosClass, "
        "13 ephemeralContainerStatuses:[ContainerStatus], 14 resize, "
        "15 resourceClaimStatuses:[PodResourceClaimStatus], "
        "18 extendedResourceClaimStatus:PodExtendedResourceClaimStatus, "
        "19 allocatedResources:{Quantity}, 20 resources:ResourceRequirements, "
        "21 nodeAllocatableResourceClaimStatuses:[NodeAllocatableResourceClaimStatus], "
        "22 volumeHealth:[PodVolumeHealth]"),
    "ObjectReference": "1 kind, 2 namespace, 3 name, 4 uid, 5 apiVersion, 6 resourceVersion, 7 fieldPath",
    "EventSource": "1 component, 2 host",
    "EventSeries": "1 count:i32, 2 lastObservedTime:MicroTime",
    "NamespaceCondition": "1 type!, 2 status!, 4 lastTransitionTime:Time, 5 reason, 6 message",
    "Taint": "1 key!, 2 value, 3 effect!, 4 timeAdded:Time",
    "NodeConfigSource": "2 configMap:ConfigMapNodeConfigSource",
    "NodePodPreemptionPolicy": "1 disableResizePreemption:[s]",
    "NodeCondition": (
        "1 type!, 2 status!, 3 lastHeartbeatTime:Time, 4 lastTransitionTime:Time, 5 reason, 6 message"),
    "NodeAddress": "1 type!, 2 address!",
    "NodeDaemonEndpoints": "1 kubeletEndpoint:DaemonEndpoint",
    "NodeSystemInfo": (
        "1 machineID!, 2 systemUUID!, 3 bootID!, 4 kernelVersion!, 5 osImage!, "
        "6 containerRuntimeVersion!, 7 kubeletVersion!, 8 kubeProxyVersion!, 9 operatingSystem!, "
        "10 architecture!, 11 swap:NodeSwapStatus"),
    "ContainerImage": "1 names:[s]!, 2 sizeBytes:i64",
    "AttachedVolume": "1 name!, 2 devicePath!",
    "NodeConfigStatus": (
        "1 assigned:NodeConfigSource, 2 active:NodeConfigSource, 3 lastKnownGood:NodeConfigSource, "
        "4 error"),
    "NodeRuntimeHandler": "1 name!, 2 features:NodeRuntimeHandlerFeatures",
    "NodeFeatures": "1 supplementalGroupsPolicy:bool!",
    "Volume": "1 name!, 2 ...VolumeSource",
    "Container": (
        "1 name!, 2 image, 3 command:[s], 4 args:[s], 5 workingDir, 6 ports:[ContainerPort], "
        "19 envFrom:[EnvFromSource], 7 env:[EnvVar], 8 resources:ResourceRequirements, "
        "23 resizePolicy:[ContainerResizePolicy], 24 restartPolicy!, "
        "25 restartPolicyRules:[ContainerRestartRule], 9 volumeMounts:[VolumeMount], "
        "21 volumeDevices:[VolumeDevice], 10 livenessProbe:Probe, 11 readinessProbe:Probe, "
        "22 startupProbe:Probe, 12 lifecycle:Lifecycle, 13 terminationMessagePath, "
        "20 terminationMessagePolicy, 14 imagePullPolicy, 15 securityContext:SecurityContext, "
        "16 stdin:bool, 17 stdinOnce:bool, 18 tty:bool"),
    "EphemeralContainer": "1 ...Container, 2 targetContainerName",
    "PodSecurityContext": (
        "1 seLinuxOptions:SELinuxOptions, 8 windowsOptions:WindowsSecurityContextOptions, "
        "2 runAsUser:i64!, 6 runAsGroup:i64!, 3 runAsNonRoot:bool!, 4 supplementalGroups:[i64], "
        "12 supplementalGroupsPolicy!, 5 fsGroup:i64!, 7 sysctls:[Sysctl], 9 fsGroupChangePolicy!, "
        "10 seccompProfile:SeccompProfile, 11 appArmorProfile:AppArmorProfile, 13 seLinuxChangePolicy!"),
    "LocalObjectReference": "1 name",
    "Affinity": "1 nodeAffinity:NodeAffinity, 2 podAffinity:PodAffinity, 3 podAntiAffinity:PodAntiAffinity",
    "Toleration": "1 key, 2 operator, 3 value, 4 effect, 5 tolerationSeconds:i64!",
    "HostAlias": "1 ip!, 2 hostnames:[s]",
    "PodDNSConfig": "1 nameservers:[s], 2 searches:[s], 3 options:[PodDNSConfigOption]",
    "PodReadinessGate": "1 conditionType!",
    "TopologySpreadConstraint": (
        "1 maxSkew:i32!, 2 topologyKey!, 3 whenUnsatisfiable!, 4 labelSelector:LabelSelector, "
        "5 minDomains:i32!, 6 nodeAffinityPolicy!, 7 nodeTaintsPolicy!, 8 matchLabelKeys:[s]"),
    "PodOS": "1 name!",
    "PodSchedulingGate": "1 name!",
    "PodResourceClaim": "1 name!, 3 resourceClaimName!, 4 resourceClaimTemplateName!",
    "ResourceRequirements": "1 limits:{Quantity}, 2 requests:{Quantity}, 3 claims:[ResourceClaim]",
    "PodSchedulingGroup": "1 podGroupName!",
    "EvictionResponder": "1 name!, 2 priority:i32!",
    "PodCondition": (
        "1 type!, 7 observedGeneration:i64, 2 status!, 3 lastProbeTime:Time, 4 lastTransitionTime:Time, "
        "5 reason, 6 message"),
    "HostIP": "1 ip!",
    "PodIP": "1 ip!",
    "ContainerStatus": (
        "1 name!, 2 state:ContainerState, 3 lastState:ContainerState, 4 ready:bool!, "
        "5 restartCount:i32!, 6 image!, 7 imageID!, 8 containerID, 9 started:bool!, "
        "10 allocatedResources:{Quantity}, 11 resources:ResourceRequirements, "
        "12 volumeMounts:[VolumeMountStatus], 13 user:ContainerUser, "
        "14 allocatedResourcesStatus:[ResourceStatus], 15 stopSignal!"),
    "PodResourceClaimStatus": "1 name!, 2 resourceClaimName!",
    "PodExtendedResourceClaimStatus": (
        "1 requestMappings:[ContainerExtendedResourceRequest]!, 2 resourceClaimName!"),
    "NodeAllocatableResourceClaimStatus": (
        "1 resourceClaimName!, 2 containers:[s], 4 mapping:[NodeAllocatableMappedResources], "
        "5 overhead:[NodeAllocatableOverheadResources]"),
    "PodVolumeHealth": "1 name!, 2 healthConditions:[VolumeHealthCondition], 3 lastTransitionTime:Time",
    "PodTemplateSpec": "1 metadata:ObjectMeta, 2 spec:PodSpec",
    "NodeSelector": "1 nodeSelectorTerms:[NodeSelectorTerm]!",
    "ConfigMapNodeConfigSource": "1 namespace!, 2 name!, 3 uid, 4 resourceVersion, 5 kubeletConfigKey!",
    "DaemonEndpoint": "1 Port:i32!",
    "NodeSwapStatus": "1 capacity:i64!",
    "NodeRuntimeHandlerFeatures": "1 recursiveReadOnlyMounts:bool!, 2 userNamespaces:bool!",
    "VolumeSource": (
        "1 hostPath:HostPathVolumeSource, 2 emptyDir:EmptyDirVolumeSource, "
        "3 gcePersistentDisk:GCEPersistentDiskVolumeSource, "
        "4 awsElasticBlockStore:AWSElasticBlockStoreVolumeSource, 5 gitRepo:GitRepoVolumeSource, "
        "6 secret:SecretVolumeSource, 7 nfs:NFSVolumeSource, 8 iscsi:ISCSIVolumeSource, "
        "9 glusterfs:GlusterfsVolumeSource, 10 persistentVolumeClaim:PersistentVolumeClaimVolumeSource, "
        "11 rbd:RBDVolumeSource, 12 flexVolume:FlexVolumeSource, 13 cinder:CinderVolumeSource, "
        "14 cephfs:CephFSVolumeSource, 15 flocker:FlockerVolumeSource, "
        "16 downwardAPI:DownwardAPIVolumeSource, 17 fc:FCVolumeSource, "
        "18 azureFile:AzureFileVolumeSource, 19 configMap:ConfigMapVolumeSource, "
        "20 vsphereVolume:VsphereVirtualDiskVolumeSource, 21 quobyte:QuobyteVolumeSource, "
        "22 azureDisk:AzureDiskVolumeSource, 23 photonPersistentDisk:PhotonPersistentDiskVolumeSource, "
        "26 projected:ProjectedVolumeSource, 24 portworxVolume:PortworxVolumeSource, "
        "25 scaleIO:ScaleIOVolumeSource, 27 storageos:StorageOSVolumeSource, 28 csi:CSIVolumeSource, "
        "29 ephemeral:EphemeralVolumeSource, 30 image:ImageVolumeSource"),
    "ContainerPort": "1 name, 2 hostPort:i32, 3 containerPort:i32!, 4 protocol, 5 hostIP",
    "EnvFromSource": "1 prefix, 2 configMapRef:ConfigMapEnvSource, 3 secretRef:SecretEnvSource",
    "EnvVar": "1 name!, 2 value, 3 valueFrom:EnvVarSource",
    "ContainerResizePolicy": "1 resourceName!, 2 restartPolicy!",
    "ContainerRestartRule": "1 action, 2 exitCodes:ContainerRestartRuleOnExitCodes",
    "VolumeMount": (
        "1 name!, 2 readOnly:bool, 7 recursiveReadOnly!, 3 mountPath!, 4 subPath, 5 mountPropagation!, "
        "6 subPathExpr, 8 bindMountOptions:[s]"),
    "VolumeDevice": "1 name!, 2 devicePath!",
    "Probe": (
        "1 ...ProbeHandler, 2 initialDelaySeconds:i32, 3 timeoutSeconds:i32, 4 periodSeconds:i32, "
        "5 successThreshold:i32, 6 failureThreshold:i32, 7 terminationGracePeriodSeconds:i64!"),
    "Lifecycle": "1 postStart:LifecycleHandler, 2 preStop:LifecycleHandler, 3 stopSignal!",
    "SecurityContext": (
        "1 capabilities:Capabilities, 2 privileged:bool!, 3 seLinuxOptions:SELinuxOptions, "
        "10 windowsOptions:WindowsSecurityContextOptions, 4 runAsUser:i64!, 8 runAsGroup:i64!, "
        "5 runAsNonRoot:bool!, 6 readOnlyRootFilesystem:bool!, 7 allowPrivilegeEscalation:bool!, "
        "9 procMount!, 11 seccompProfile:SeccompProfile, 12 appArmorProfile:AppArmorProfile"),
    "SELinuxOptions": "1 user, 2 role, 3 type, 4 level",
    "WindowsSecurityContextOptions": (
        "1 gmsaCredentialSpecName!, 2 gmsaCredentialSpec!, 3 runAsUserName!, 4 hostProcess:bool!"),
    "Sysctl": "1 name!, 2 value!",
    "SeccompProfile": "1 type!, 2 localhostProfile!",
    "AppArmorProfile": "1 type!, 2 localhostProfile!",
    "NodeAffinity": (
        "1 requiredDuringSchedulingIgnoredDuringExecution:NodeSelector, "
        "2 preferredDuringSchedulingIgnoredDuringExecution:[PreferredSchedulingTerm]"),
    "PodAffinity": (
        "1 requiredDuringSchedulingIgnoredDuringExecution:[PodAffinityTerm], "
        "2 preferredDuringSchedulingIgnoredDuringExecution:[WeightedPodAffinityTerm]"),
    "PodAntiAffinity": (
        "1 requiredDuringSchedulingIgnoredDuringExecution:[PodAffinityTerm], "
        "2 preferredDuringSchedulingIgnoredDuringExecution:[WeightedPodAffinityTerm]"),
    "PodDNSConfigOption": "1 name, 2 value!",
    "ContainerState": (
        "1 waiting:ContainerStateWaiting, 2 running:ContainerStateRunning, "
        "3 terminated:ContainerStateTerminated"),
    "VolumeMountStatus": (
        "1 name!, 2 mountPath!, 3 readOnly:bool, 4 recursiveReadOnly!, 5 volumeStatus:VolumeStatus"),
    "ContainerUser": "1 linux:LinuxContainerUser",
    "ResourceStatus": "1 name!, 2 resources:[ResourceHealth]",
    "ContainerExtendedResourceRequest": "1 containerName!, 2 resourceName!, 3 requestName!",
    "NodeAllocatableMappedResources": "1 name!, 2 quantity:Quantity",
    "NodeAllocatableOverheadResources": "1 name!, 2 perPod:Quantity, 3 perContainer:Quantity",
    "VolumeHealthCondition": "1 status!, 2 reason!, 3 message",
    "NodeSelectorTerm": (
        "1 matchExpressions:[NodeSelectorRequirement], 2 matchFields:[NodeSelectorRequirement]"),
    "HostPathVolumeSource": "1 path!, 2 type!",
    "EmptyDirVolumeSource": "1 medium, 2 sizeLimit:Quantity, 3 mode:i32!",
    "GCEPersistentDiskVolumeSource": "1 pdName!, 2 fsType, 3 partition:i32, 4 readOnly:bool",
    "AWSElasticBlockStoreVolumeSource": "1 volumeID!, 2 fsType, 3 partition:i32, 4 readOnly:bool",
    "GitRepoVolumeSource": "1 repository!, 2 revision, 3 directory",
    "SecretVolumeSource": (
        "1 secretName, 2 items:[KeyToPath], 3 defaultMode:i32!, 4 optional:bool!, 5 defaultUser:i64!"),
    "NFSVolumeSource": "1 server!, 2 path!, 3 readOnly:bool",
    "ISCSIVolumeSource": (
        "1 targetPortal!, 2 iqn!, 3 lun:i32!, 4 iscsiInterface, 5 fsType, 6 readOnly:bool, "
        "7 portals:[s], 8 chapAuthDiscovery:bool, 11 chapAuthSession:bool, "
        "10 secretRef:LocalObjectReference, 12 initiatorName!"),
    "GlusterfsVolumeSource": "1 endpoints!, 2 path!, 3 readOnly:bool",
    "PersistentVolumeClaimVolumeSource": "1 claimName!, 2 readOnly:bool",
    "RBDVolumeSource": (
        "1 monitors:[s]!, 2 image!, 3 fsType, 4 pool, 5 user, 6 keyring, "
        "7 secretRef:LocalObjectReference, 8 readOnly:bool"),
    "FlexVolumeSource": (
        "1 driver!, 2 fsType, 3 secretRef:LocalObjectReference, 4 readOnly:bool, 5 options:{s}"),
    "CinderVolumeSource": "1 volumeID!, 2 fsType, 3 readOnly:bool, 4 secretRef:LocalObjectReference",
    "CephFSVolumeSource": (
        "1 monitors:[s]!, 2 path, 3 user, 4 secretFile, 5 secretRef:LocalObjectReference, "
        "6 readOnly:bool"),
    "FlockerVolumeSource": "1 datasetName, 2 datasetUUID",
    "DownwardAPIVolumeSource": "1 items:[DownwardAPIVolumeFile], 2 defaultMode:i32!, 3 defaultUser:i64!",
    "FCVolumeSource": "1 targetWWNs:[s], 2 lun:i32!, 3 fsType, 4 readOnly:bool, 5 wwids:[s]",
    "AzureFileVolumeSource": "1 secretName!, 2 shareName!, 3 readOnly:bool",
    "ConfigMapVolumeSource": (
        "1 ...LocalObjectReference, 2 items:[KeyToPath], 3 defaultMode:i32!, 4 optional:bool!, "
        "5 defaultUser:i64!"),
    "VsphereVirtualDiskVolumeSource": "1 volumePath!, 2 fsType, 3 storagePolicyName, 4 storagePolicyID",
    "QuobyteVolumeSource": "1 registry!, 2 volume!, 3 readOnly:bool, 4 user, 5 group, 6 tenant",
    "AzureDiskVolumeSource": "1 diskName!, 2 diskURI!, 3 cachingMode!, 4 fsType!, 5 readOnly:bool!, 6 kind!",
    "PhotonPersistentDiskVolumeSource": "1 pdID!, 2 fsType",
    "ProjectedVolumeSource": "1 sources:[VolumeProjection]!, 2 defaultMode:i32!, 3 defaultUser:i64!",
    "PortworxVolumeSource": "1 volumeID!, 2 fsType, 3 readOnly:bool",
    "ScaleIOVolumeSource": (
        "1 gateway!, 2 system!, 3 secretRef:LocalObjectReference, 4 sslEnabled:bool, 5 protectionDomain, "
        "6 storagePool, 7 storageMode, 8 volumeName, 9 fsType, 10 readOnly:bool"),
    "StorageOSVolumeSource": (
        "1 volumeName, 2 volumeNamespace, 3 fsType, 4 readOnly:bool, 5 secretRef:LocalObjectReference"),
    "CSIVolumeSource": (
        "1 driver!, 2 readOnly:bool!, 3 fsType!, 4 volumeAttributes:{s}, "
        "5 nodePublishSecretRef:LocalObjectReference"),
    "EphemeralVolumeSource": "1 volumeClaimTemplate:PersistentVolumeClaimTemplate",
    "ImageVolumeSource": "1 reference, 2 pullPolicy",
    "ConfigMapEnvSource": "1 ...LocalObjectReference, 2 optional:bool!",
    "SecretEnvSource": "1 ...LocalObjectReference, 2 optional:bool!",
    "EnvVarSource": (
        "1 fieldRef:ObjectFieldSelector, 2 resourceFieldRef:ResourceFieldSelector, "
        "3 configMapKeyRef:ConfigMapKeySelector, 4 secretKeyRef:SecretKeySelector, "
        "5 fileKeyRef:FileKeySelector"),
    "ContainerRestartRuleOnExitCodes": "1 operator, 2 values:[i32]",
    "ProbeHandler": (
        "1 exec:ExecAction, 2 httpGet:HTTPGetAction, 3 tcpSocket:TCPSocketAction, 4 grpc:GRPCAction"),
    "LifecycleHandler": (
        "1 exec:ExecAction, 2 httpGet:HTTPGetAction, 3 tcpSocket:TCPSocketAction, 4 sleep:SleepAction"),
    "Capabilities": "1 add:[s], 2 drop:[s]",
    "PreferredSchedulingTerm": "1 weight:i32!, 2 preference:NodeSelectorTerm",
    "PodAffinityTerm": (
        "1 labelSelector:LabelSelector, 2 namespaces:[s], 3 topologyKey!, "
        "4 namespaceSelector:LabelSelector, 5 matchLabelKeys:[s], 6 mismatchLabelKeys:[s]"),
    "WeightedPodAffinityTerm": "1 weight:i32!, 2 podAffinityTerm:PodAffinityTerm",
    "ContainerStateWaiting": "1 reason, 2 message",
    "ContainerStateRunning": "1 startedAt:Time",
    "ContainerStateTerminated": (
        "1 exitCode:i32!, 2 signal:i32, 3 reason, 4 message, 5 startedAt:Time, 6 finishedAt:Time, "
        "7 containerID"),
    "VolumeStatus": "1 image:ImageVolumeStatus",
    "LinuxContainerUser": "1 uid:i64!, 2 gid:i64!, 3 supplementalGroups:[i64]",
    "ResourceHealth": "1 resourceID!, 2 health, 6 message!",
    "NodeSelectorRequirement": "1 key!, 2 operator!, 3 values:[s]",
    "KeyToPath": "1 key!, 2 path!, 3 mode:i32!, 4 user:i64!",
    "DownwardAPIVolumeFile": (
        "1 path!, 2 fieldRef:ObjectFieldSelector, 3 resourceFieldRef:ResourceFieldSelector, 4 mode:i32!, "
        "5 user:i64!"),
    "VolumeProjection": (
        "1 secret:SecretProjection, 2 downwardAPI:DownwardAPIProjection, "
        "3 configMap:ConfigMapProjection, 4 serviceAccountToken:ServiceAccountTokenProjection, "
        "5 clusterTrustBundle:ClusterTrustBundleProjection, 6 podCertificate:PodCertificateProjection"),
    "PersistentVolumeClaimTemplate": "1 metadata:ObjectMeta, 2 spec:PersistentVolumeClaimSpec",
    "ObjectFieldSelector": "1 apiVersion, 2 fieldPath!",
    "ResourceFieldSelector": "1 containerName, 2 resource!, 3 divisor:Quantity",
    "ConfigMapKeySelector": "1 ...LocalObjectReference, 2 key!, 3 optional:bool!",
    "SecretKeySelector": "1 ...LocalObjectReference, 2 key!, 3 optional:bool!",
    "FileKeySelector": "1 volumeName!, 2 path!, 3 key!, 4 optional:bool!",
    "ExecAction": "1 command:[s]",
    "HTTPGetAction": "1 path, 2 port:IntOrString, 3 host, 4 scheme, 5 httpHeaders:[HTTPHeader], 6 protocol!",
    "TCPSocketAction": "1 port:IntOrString, 2 host",
    "GRPCAction": "1 port:i32!, 2 service!, 3 mode!",
    "SleepAction": "1 seconds:i64!",
    "ImageVolumeStatus": "1 imageRef",
    "SecretProjection": "1 ...LocalObjectReference, 2 items:[KeyToPath], 4 optional:bool!",
    "DownwardAPIProjection": "1 items:[DownwardAPIVolumeFile]",
    "ConfigMapProjection": "1 ...LocalObjectReference, 2 items:[KeyToPath], 4 optional:bool!",
    "ServiceAccountTokenProjection": "1 audience, 2 expirationSeconds:i64!, 3 path!, 4 user:i64!",
    "ClusterTrustBundleProjection": (
        "1 name!, 2 signerName!, 3 labelSelector:LabelSelector, 5 optional:bool!, 4 path!, 6 user:i64!"),
    "PodCertificateProjection": (
        "1 signerName, 2 keyType, 3 maxExpirationSeconds:i32!, 4 credentialBundlePath, 5 keyPath, "
        "6 certificateChainPath, 7 userAnnotations:{s}, 8 user:i64!"),
    "PersistentVolumeClaimSpec": (
        "1 accessModes:[s], 4 selector:LabelSelector, 2 resources:VolumeResourceRequirements, "
        "3 volumeName, 5 storageClassName!, 6 volumeMode!, 7 dataSource:TypedLocalObjectReference, "
        "8 dataSourceRef:TypedObjectReference, 9 volumeAttributesClassName!"),
    "HTTPHeader": "1 name!, 2 value!",
    "VolumeResourceRequirements": "1 limits:{Quantity}, 2 requests:{Quantity}",
    "TypedLocalObjectReference": "1 apiGroup!, 2 kind!, 3 name!",
    "TypedObjectReference": "1 apiGroup!, 2 kind!, 3 name!, 4 namespace!",
}
_APPS: dict[str, str] = {  # io.k8s.api.apps.v1
    "Deployment": "1 metadata:ObjectMeta, 2 spec:DeploymentSpec, 3 status:DeploymentStatus",
    "ReplicaSet": "1 metadata:ObjectMeta, 2 spec:ReplicaSetSpec, 3 status:ReplicaSetStatus",
    "DeploymentSpec": (
        "1 replicas:i32!, 2 selector:LabelSelector, 3 template:PodTemplateSpec, "
        "4 strategy:DeploymentStrategy, 5 minReadySeconds:i32, 6 revisionHistoryLimit:i32!, "
        "7 paused:bool, 9 progressDeadlineSeconds:i32!"),
    "DeploymentStatus": (
        "1 observedGeneration:i64, 2 replicas:i32, 3 updatedReplicas:i32, 7 readyReplicas:i32, "
        "4 availableReplicas:i32, 5 unavailableReplicas:i32, 9 terminatingReplicas:i32!, "
        "6 conditions:[DeploymentCondition], 8 collisionCount:i32!"),
    "ReplicaSetSpec": (
        "1 replicas:i32!, 4 minReadySeconds:i32, 2 selector:LabelSelector, 3 template:PodTemplateSpec"),
    "ReplicaSetStatus": (
        "1 replicas:i32!, 2 fullyLabeledReplicas:i32, 4 readyReplicas:i32, 5 availableReplicas:i32, "
        "7 terminatingReplicas:i32!, 3 observedGeneration:i64, 6 conditions:[ReplicaSetCondition]"),
    "DeploymentStrategy": "1 type, 2 rollingUpdate:RollingUpdateDeployment",
    "DeploymentCondition": (
        "1 type!, 2 status!, 6 lastUpdateTime:Time, 7 lastTransitionTime:Time, 4 reason, 5 message"),
    "ReplicaSetCondition": "1 type!, 2 status!, 3 lastTransitionTime:Time, 4 reason, 5 message",
    "RollingUpdateDeployment": "1 maxUnavailable:IntOrString, 2 maxSurge:IntOrString",
}
_AUTOSCALING: dict[str, str] = {  # io.k8s.api.autoscaling.v2
    "HorizontalPodAutoscaler": (
        "1 metadata:ObjectMeta, 2 spec:HorizontalPodAutoscalerSpec, "
        "3 status:HorizontalPodAutoscalerStatus"),
    "HorizontalPodAutoscalerSpec": (
        "1 scaleTargetRef:CrossVersionObjectReference, 2 minReplicas:i32!, 3 maxReplicas:i32!, "
        "4 metrics:[MetricSpec], 5 behavior:HorizontalPodAutoscalerBehavior"),
    "HorizontalPodAutoscalerStatus": (
        "1 observedGeneration:i64!, 2 lastScaleTime:Time, 3 currentReplicas:i32, 4 desiredReplicas:i32!, "
        "5 currentMetrics:[MetricStatus]!, 6 conditions:[HorizontalPodAutoscalerCondition]"),
    "CrossVersionObjectReference": "1 kind!, 2 name!, 3 apiVersion",
    "MetricSpec": (
        "1 type!, 2 object:ObjectMetricSource, 3 pods:PodsMetricSource, 4 resource:ResourceMetricSource, "
        "7 containerResource:ContainerResourceMetricSource, 5 external:ExternalMetricSource"),
    "HorizontalPodAutoscalerBehavior": "1 scaleUp:HPAScalingRules, 2 scaleDown:HPAScalingRules",
    "MetricStatus": (
        "1 type!, 2 object:ObjectMetricStatus, 3 pods:PodsMetricStatus, 4 resource:ResourceMetricStatus, "
        "7 containerResource:ContainerResourceMetricStatus, 5 external:ExternalMetricStatus"),
    "HorizontalPodAutoscalerCondition": (
        "1 type!, 2 status!, 3 lastTransitionTime:Time, 4 reason, 5 message, 6 observedGeneration:i64!"),
    "ObjectMetricSource": (
        "1 describedObject:CrossVersionObjectReference, 2 target:MetricTarget, "
        "3 metric:MetricIdentifier"),
    "PodsMetricSource": "1 metric:MetricIdentifier, 2 target:MetricTarget",
    "ResourceMetricSource": "1 name!, 2 target:MetricTarget",
    "ContainerResourceMetricSource": "1 name!, 2 target:MetricTarget, 3 container!",
    "ExternalMetricSource": "1 metric:MetricIdentifier, 2 target:MetricTarget",
    "HPAScalingRules": (
        "3 stabilizationWindowSeconds:i32!, 1 selectPolicy!, 2 policies:[HPAScalingPolicy], "
        "4 tolerance:Quantity"),
    "ObjectMetricStatus": (
        "1 metric:MetricIdentifier, 2 current:MetricValueStatus, "
        "3 describedObject:CrossVersionObjectReference"),
    "PodsMetricStatus": "1 metric:MetricIdentifier, 2 current:MetricValueStatus",
    "ResourceMetricStatus": "1 name!, 2 current:MetricValueStatus",
    "ContainerResourceMetricStatus": "1 name!, 2 current:MetricValueStatus, 3 container!",
    "ExternalMetricStatus": "1 metric:MetricIdentifier, 2 current:MetricValueStatus",
    "MetricTarget": "1 type!, 2 value:Quantity, 3 averageValue:Quantity, 4 averageUtilization:i32!",
    "MetricIdentifier": "1 name!, 2 selector:LabelSelector",
    "HPAScalingPolicy": "1 type!, 2 value:i32!, 3 periodSeconds:i32!",
    "MetricValueStatus": "1 value:Quantity, 2 averageValue:Quantity, 3 averageUtilization:i32!",
}
_AUTOSCALINGV1: dict[str, str] = {  # io.k8s.api.autoscaling.v1
    "Scale": "1 metadata:ObjectMeta, 2 spec:ScaleSpec, 3 status:ScaleStatus",
    "ScaleSpec": "1 replicas:i32",
    "ScaleStatus": "1 replicas:i32!, 2 selector",
}
_COORDINATION: dict[str, str] = {  # io.k8s.api.coordination.v1
    "Lease": "1 metadata:ObjectMeta, 2 spec:LeaseSpec",
    "LeaseSpec": (
        "1 holderIdentity!, 2 leaseDurationSeconds:i32!, 3 acquireTime:MicroTime, 4 renewTime:MicroTime, "
        "5 leaseTransitions:i32!, 6 strategy!, 7 preferredHolder!"),
}
_POLICY: dict[str, str] = {  # io.k8s.api.policy.v1
    "Eviction": "1 metadata:ObjectMeta, 2 deleteOptions:DeleteOptions",
}
_RBAC: dict[str, str] = {  # io.k8s.api.rbac.v1 (issue #10)
    "Role": "1 metadata:ObjectMeta, 2 rules:[PolicyRule]!",
    "ClusterRole": "1 metadata:ObjectMeta, 2 rules:[PolicyRule]!, 3 aggregationRule:AggregationRule",
    "RoleBinding": "1 metadata:ObjectMeta, 2 subjects:[Subject], 3 roleRef:RoleRef",
    "ClusterRoleBinding": "1 metadata:ObjectMeta, 2 subjects:[Subject], 3 roleRef:RoleRef",
    "PolicyRule": "1 verbs:[s]!, 2 apiGroups:[s], 3 resources:[s], 4 resourceNames:[s], 5 nonResourceURLs:[s]",
    "AggregationRule": "1 clusterRoleSelectors:[LabelSelector]",
    "Subject": "1 kind!, 2 apiGroup, 3 name!, 4 namespace",
    "RoleRef": "1 apiGroup!, 2 kind!, 3 name!",
}
_AUTHORIZATION: dict[str, str] = {  # io.k8s.api.authorization.v1 (issue #10: kubectl auth can-i)
    "SelfSubjectAccessReview": (
        "1 metadata:ObjectMeta, 2 spec:SelfSubjectAccessReviewSpec, 3 status:SubjectAccessReviewStatus"),
    "SelfSubjectAccessReviewSpec": "1 resourceAttributes:ResourceAttributes, 2 nonResourceAttributes:NonResourceAttributes",
    "ResourceAttributes": (
        "1 namespace, 2 verb, 3 group, 4 version, 5 resource, 6 subresource, 7 name, "
        "8 fieldSelector:FieldSelectorAttributes, 9 labelSelector:LabelSelectorAttributes"),
    "FieldSelectorAttributes": "1 rawSelector, 2 requirements:[FieldSelectorRequirement]",
    "LabelSelectorAttributes": "1 rawSelector, 2 requirements:[LabelSelectorRequirement]",
    "NonResourceAttributes": "1 path, 2 verb",
    "SubjectAccessReviewStatus": "1 allowed:bool!, 4 denied:bool, 2 reason, 3 evaluationError",
    "SelfSubjectRulesReview": "1 metadata:ObjectMeta, 2 spec:SelfSubjectRulesReviewSpec, 3 status:SubjectRulesReviewStatus",
    "SelfSubjectRulesReviewSpec": "1 namespace",
    "SubjectRulesReviewStatus": (
        "1 resourceRules:[ResourceRule]!, 2 nonResourceRules:[NonResourceRule]!, 3 incomplete:bool!, "
        "4 evaluationError"),
    "ResourceRule": "1 verbs:[s]!, 2 apiGroups:[s], 3 resources:[s], 4 resourceNames:[s]",
    "NonResourceRule": "1 verbs:[s]!, 2 nonResourceURLs:[s]",
}
_AUTHENTICATION: dict[str, str] = {  # io.k8s.api.authentication.v1 (issue #10: kubectl auth whoami)
    "SelfSubjectReview": "1 metadata:ObjectMeta, 2 status:SelfSubjectReviewStatus",
    "SelfSubjectReviewStatus": "1 userInfo:UserInfo",
    "UserInfo": "1 username, 2 uid, 3 groups:[s]",  # 4 extra (map of ExtraValue lists): not decoded
}
_RESOURCE: dict[str, str] = {  # io.k8s.api.resource.v1
    "ResourceClaim": "1 metadata:ObjectMeta, 2 spec:ResourceClaimSpec, 3 status:ResourceClaimStatus",
    "DeviceClass": "1 metadata:ObjectMeta, 2 spec:DeviceClassSpec",
    "ResourceClaimTemplate": "1 metadata:ObjectMeta, 2 spec:ResourceClaimTemplateSpec",
    "ResourceSlice": "1 metadata:ObjectMeta, 2 spec:ResourceSliceSpec",
    "DeviceTaintRule": "1 metadata:ObjectMeta, 2 spec:DeviceTaintRuleSpec, 3 status:DeviceTaintRuleStatus",
    "DeviceClassSpec": (
        "1 selectors:[DeviceSelector], 2 config:[DeviceClassConfiguration], 4 extendedResourceName!"),
    "ResourceClaimSpec": "1 devices:DeviceClaim",
    "ResourceClaimStatus": (
        "1 allocation:AllocationResult, 2 reservedFor:[ResourceClaimConsumerReference], "
        "4 devices:[AllocatedDeviceStatus]"),
    "ResourceClaimTemplateSpec": "1 metadata:ObjectMeta, 2 spec:ResourceClaimSpec",
    "ResourceSliceSpec": (
        "1 driver!, 2 pool:ResourcePool, 3 nodeName!, 4 nodeSelector:NodeSelector, 5 allNodes:bool!, "
        "6 devices:[Device], 7 perDeviceNodeSelection:bool!, 8 sharedCounters:[CounterSet], "
        "9 partitionTypeAttribute!, 10 skipNodeOperations:[s]"),
    "DeviceTaintRuleSpec": "1 deviceSelector:DeviceTaintSelector, 2 taint:DeviceTaint",
    "DeviceTaintRuleStatus": "1 conditions:[Condition]",
    "DeviceSelector": "1 cel:CELDeviceSelector",
    "DeviceClassConfiguration": "1 ...DeviceConfiguration",
    "DeviceClaim": (
        "1 requests:[DeviceRequest]!, 2 constraints:[DeviceConstraint], "
        "3 config:[DeviceClaimConfiguration]"),
    "AllocationResult": (
        "1 devices:DeviceAllocationResult, 3 nodeSelector:NodeSelector, 5 allocationTimestamp:Time"),
    "ResourceClaimConsumerReference": "1 apiGroup, 3 resource!, 4 name!, 5 uid!",
    "AllocatedDeviceStatus": (
        "1 driver!, 2 pool!, 3 device!, 7 shareID!, 4 conditions:[Condition]!, 5 data:RawExtension, "
        "6 networkData:NetworkDeviceData"),
    "ResourcePool": "1 name!, 2 generation:i64!, 3 resourceSliceCount:i64!",
    "Device": (
        "1 name!, 2 attributes:{DeviceAttribute}, 3 capacity:{DeviceCapacity}, "
        "4 consumesCounters:[DeviceCounterConsumption], 5 nodeName!, 6 nodeSelector:NodeSelector, "
        "7 allNodes:bool!, 8 taints:[DeviceTaint], 9 bindsToNode:bool!, 10 bindingConditions:[s], "
        "11 bindingFailureConditions:[s], 12 allowMultipleAllocations:bool!, "
        "14 nodeAllocatableResources:{NodeAllocatableResource}"),
    "CounterSet": "1 name!, 2 counters:{Counter}",
    "DeviceTaintSelector": "2 driver!, 3 pool!, 4 device!",
    "DeviceTaint": "1 key!, 2 value, 3 effect!, 4 timeAdded:Time",
    "CELDeviceSelector": "1 expression!",
    "DeviceConfiguration": "1 opaque:OpaqueDeviceConfiguration",
    "DeviceRequest": "1 name!, 2 exactly:ExactDeviceRequest, 3 firstAvailable:[DeviceSubRequest]",
    "DeviceConstraint": "1 requests:[s], 2 matchAttribute!, 3 distinctAttribute!",
    "DeviceClaimConfiguration": "1 requests:[s], 2 ...DeviceConfiguration",
    "DeviceAllocationResult": (
        "1 results:[DeviceRequestAllocationResult], 2 config:[DeviceAllocationConfiguration]"),
    "NetworkDeviceData": "1 interfaceName, 2 ips:[s], 3 hardwareAddress",
    "DeviceAttribute": (
        "2 int:i64!, 3 bool:bool!, 4 string!, 5 version!, 6 ints:[i64], 7 bools:[bool], 8 strings:[s], "
        "9 versions:[s]"),
    "DeviceCapacity": "1 value:Quantity, 2 requestPolicy:CapacityRequestPolicy",
    "DeviceCounterConsumption": "1 counterSet!, 2 counters:{Counter}",
    "NodeAllocatableResource": "3 mapping:NodeAllocatableMapping, 4 overhead:NodeAllocatableOverhead",
    "Counter": "1 value:Quantity",
    "OpaqueDeviceConfiguration": "1 driver!, 2 parameters:RawExtension",
    "ExactDeviceRequest": (
        "1 deviceClassName!, 2 selectors:[DeviceSelector], 3 allocationMode, 4 count:i64, "
        "5 adminAccess:bool!, 6 tolerations:[DeviceToleration], 7 capacity:CapacityRequirements"),
    "DeviceSubRequest": (
        "1 name!, 2 deviceClassName!, 3 selectors:[DeviceSelector], 4 allocationMode, 5 count:i64, "
        "6 tolerations:[DeviceToleration], 7 capacity:CapacityRequirements"),
    "DeviceRequestAllocationResult": (
        "1 request!, 2 driver!, 3 pool!, 4 device!, 5 adminAccess:bool!, "
        "6 tolerations:[DeviceToleration], 7 bindingConditions:[s], 8 bindingFailureConditions:[s], "
        "9 shareID!, 10 consumedCapacity:{Quantity}, 11 skipNodeOperations:[s]"),
    "DeviceAllocationConfiguration": "1 source!, 2 requests:[s], 3 ...DeviceConfiguration",
    "CapacityRequestPolicy": (
        "1 default:Quantity, 3 validValues:[Quantity], 4 validRange:CapacityRequestPolicyRange"),
    "NodeAllocatableMapping": "1 capacityKey!, 2 capacityMultiplier:Quantity, 3 deviceMultiplier:Quantity",
    "NodeAllocatableOverhead": "1 perPod:Quantity, 2 perContainer:Quantity",
    "DeviceToleration": "1 key, 2 operator, 3 value, 4 effect, 5 tolerationSeconds:i64!",
    "CapacityRequirements": "1 requests:{Quantity}",
    "CapacityRequestPolicyRange": "1 min:Quantity, 2 max:Quantity, 3 step:Quantity",
}

_PACKAGES: dict[str, dict[str, str]] = {
    "io.k8s.apimachinery.pkg.apis.meta.v1": _META,
    "io.k8s.api.core.v1": _CORE,
    "io.k8s.api.apps.v1": _APPS,
    "io.k8s.api.autoscaling.v2": _AUTOSCALING,
    "io.k8s.api.autoscaling.v1": _AUTOSCALINGV1,
    "io.k8s.api.coordination.v1": _COORDINATION,
    "io.k8s.api.policy.v1": _POLICY,
    "io.k8s.api.resource.v1": _RESOURCE,
    "io.k8s.api.rbac.v1": _RBAC,
    "io.k8s.api.authorization.v1": _AUTHORIZATION,
    "io.k8s.api.authentication.v1": _AUTHENTICATION,
}
_META_PKG = "io.k8s.apimachinery.pkg.apis.meta.v1"
_CORE_PKG = "io.k8s.api.core.v1"

# (apiVersion, kind) of a body -> its message. DeleteOptions is registered in every group
# version, so client-go labels it with the version of the client that sends it.
_KINDS: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "io.k8s.api.core.v1.Namespace",
    ("v1", "Node"): "io.k8s.api.core.v1.Node",
    ("v1", "Pod"): "io.k8s.api.core.v1.Pod",
    ("v1", "Binding"): "io.k8s.api.core.v1.Binding",
    ("v1", "Event"): "io.k8s.api.core.v1.Event",
    ("v1", "ConfigMap"): "io.k8s.api.core.v1.ConfigMap",
    ("apps/v1", "Deployment"): "io.k8s.api.apps.v1.Deployment",
    ("apps/v1", "ReplicaSet"): "io.k8s.api.apps.v1.ReplicaSet",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    ("autoscaling/v1", "Scale"): "io.k8s.api.autoscaling.v1.Scale",
    ("coordination.k8s.io/v1", "Lease"): "io.k8s.api.coordination.v1.Lease",
    ("policy/v1", "Eviction"): "io.k8s.api.policy.v1.Eviction",
    ("resource.k8s.io/v1", "DeviceClass"): "io.k8s.api.resource.v1.DeviceClass",
    ("resource.k8s.io/v1", "ResourceClaim"): "io.k8s.api.resource.v1.ResourceClaim",
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): "io.k8s.api.resource.v1.ResourceClaimTemplate",
    ("resource.k8s.io/v1", "ResourceSlice"): "io.k8s.api.resource.v1.ResourceSlice",
    ("resource.k8s.io/v1", "DeviceTaintRule"): "io.k8s.api.resource.v1.DeviceTaintRule",
    ("rbac.authorization.k8s.io/v1", "Role"): "io.k8s.api.rbac.v1.Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "io.k8s.api.rbac.v1.ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "io.k8s.api.rbac.v1.RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "io.k8s.api.rbac.v1.ClusterRoleBinding",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "io.k8s.api.authentication.v1.SelfSubjectReview",
}
_DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"


def message_for(*, api_version: str, kind: str) -> str | None:
    """The OpenAPI-style name of the message a body of this type decodes with, or None."""
    if kind == "DeleteOptions":
        return _DELETE_OPTIONS
    return _KINDS.get((api_version, kind))


def supported_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) pairs `decode` accepts, besides DeleteOptions of any version."""
    return sorted(_KINDS)


# --------------------------------------------------------------------------------------------
# Compiled form.
# --------------------------------------------------------------------------------------------

# Field kinds.
(_STR, _INT64, _INT32, _BOOL, _BYTES, _MSG,
 _TIME, _MICROTIME, _QUANTITY, _INTSTR, _RAWEXT, _FIELDSV1) = range(12)
_SCALARS = {"s": _STR, "i64": _INT64, "i32": _INT32, "bool": _BOOL, "bytes": _BYTES}
_SPECIALS = {"Time": _TIME, "MicroTime": _MICROTIME, "Quantity": _QUANTITY, "IntOrString": _INTSTR,
             "RawExtension": _RAWEXT, "FieldsV1": _FIELDSV1}
_VARINT_KINDS = frozenset((_INT64, _INT32, _BOOL))


class Field:
    """One compiled field of a message description."""

    __slots__ = ("inline", "keep", "kind", "map", "message", "name", "omitzero", "repeated")

    def __init__(self, *, name: str, kind: int, message: str, repeated: bool, map: bool,
                 keep: bool, omitzero: bool, inline: bool) -> None:
        self.name = name
        self.kind = kind
        self.message = message  # full name, for _MSG and inlined fields
        self.repeated = repeated
        self.map = map
        self.keep = keep
        self.omitzero = omitzero
        self.inline = inline


class Message:
    """A compiled description: fields by number, and the lists that are `null` when absent."""

    __slots__ = ("fields", "nulls")

    def __init__(self, *, fields: dict[int, Field]) -> None:
        self.fields = fields
        self.nulls: tuple[str, ...] = ()


def _resolve(*, name: str, package: str) -> str:
    for pkg in (package, _META_PKG, _CORE_PKG):
        if name in _PACKAGES[pkg]:
            return f"{pkg}.{name}"
    raise ValueError(f"protobuf tables: unknown message {name!r} referenced from {package}")


def _compile_field(*, token: str, package: str) -> tuple[int, Field]:
    number, _, rest = token.strip().partition(" ")
    inline = rest.startswith("...")
    if inline:
        name, type_, flag = "", rest[3:], ""
    else:
        flag = rest[-1] if rest[-1] in "!?" else ""
        name, _, type_ = rest.rstrip("!?").partition(":")
    type_ = type_ or "s"
    repeated = type_.startswith("[")
    is_map = type_.startswith("{")
    if repeated or is_map:
        type_ = type_[1:-1]
    message = ""
    if type_ in _SCALARS:
        kind = _SCALARS[type_]
        if is_map and kind not in (_STR, _BYTES):
            raise ValueError(f"protobuf tables: map of {type_} is not supported ({token!r})")
    elif type_ in _SPECIALS:
        kind = _SPECIALS[type_]
    else:
        kind = _MSG
        message = _resolve(name=type_, package=package)
    return int(number), Field(name=name, kind=kind, message=message, repeated=repeated, map=is_map,
                               keep=flag == "!", omitzero=flag == "?", inline=inline)


@functools.cache
def messages() -> dict[str, Message]:
    """Every message description, by full name (e.g. `io.k8s.api.core.v1.PodSpec`)."""
    out: dict[str, Message] = {}
    for package, table in _PACKAGES.items():
        for name, spec in table.items():
            fields: dict[int, Field] = {}
            for token in spec.split(","):
                number, field = _compile_field(token=token, package=package)
                if number in fields:
                    raise ValueError(f"protobuf tables: {name} repeats field {number}")
                fields[number] = field
            out[f"{package}.{name}"] = Message(fields=fields)

    def nulls(message: Message) -> tuple[str, ...]:
        names: list[str] = []
        for field in message.fields.values():
            if field.inline:
                names.extend(nulls(out[field.message]))
            elif field.repeated and field.keep:
                names.append(field.name)
        return tuple(names)

    for message in out.values():
        message.nulls = nulls(message)
    return out


# --------------------------------------------------------------------------------------------
# Wire format.
# --------------------------------------------------------------------------------------------

class _Malformed(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.path: list[str] = []


_WIRE_NAMES = ("varint", "64-bit", "length-delimited", "start-group", "end-group", "32-bit")
_MAX_GROUP_DEPTH = 64


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise _Malformed("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Malformed("varint longer than 10 bytes")


def _read_field(buf: bytes, pos: int, end: int) -> tuple[int, int, int, int]:
    """One field at `pos`: (number, wire type, value, next position).

    The value is the integer for varints, and the start offset for length-delimited fields
    (the data is `buf[value:next]`); it is 0 for the skipped fixed-size and group fields.
    """
    tag, pos = _varint(buf, pos, end)
    number, wire = tag >> 3, tag & 7
    if number == 0:
        raise _Malformed("field number 0")
    if wire == 0:
        value, pos = _varint(buf, pos, end)
        return number, wire, value, pos
    if wire == 2:
        length, pos = _varint(buf, pos, end)
        if length > end - pos:
            raise _Malformed("truncated length-delimited field")
        return number, wire, pos, pos + length
    if wire in (1, 5):
        pos += 8 if wire == 1 else 4
        if pos > end:
            raise _Malformed("truncated fixed-size field")
        return number, wire, 0, pos
    if wire == 3:
        return number, wire, 0, _skip_group(buf, pos, end, number)
    raise _Malformed(f"invalid wire type {wire}")


def _skip_group(buf: bytes, pos: int, end: int, number: int) -> int:
    """Skip a (long deprecated) group up to its matching end-group tag."""
    open_groups = [number]
    while open_groups:
        if pos >= end:
            raise _Malformed("unterminated group")
        tag, pos = _varint(buf, pos, end)
        inner, wire = tag >> 3, tag & 7
        if wire == 4:
            if inner != open_groups.pop():
                raise _Malformed("mismatched end-group")
        elif wire == 3:
            open_groups.append(inner)
            if len(open_groups) > _MAX_GROUP_DEPTH:
                raise _Malformed("groups nested too deeply")
        elif wire == 0:
            _, pos = _varint(buf, pos, end)
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise _Malformed(f"invalid wire type {wire}")
        if pos > end:
            raise _Malformed("truncated group")
    return pos


def _signed64(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _text(buf: bytes, start: int, end: int) -> str:
    # Go does not check UTF-8 here; its JSON encoder then writes U+FFFD for bad bytes.
    return buf[start:end].decode("utf-8", "replace")


# --------------------------------------------------------------------------------------------
# Decoding.
# --------------------------------------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _time(buf: bytes, start: int, end: int, *, micro: bool) -> str | None:
    """metav1.Time / MicroTime: {1: seconds, 2: nanos}; an empty message is the zero time."""
    if start == end:
        return None
    seconds = nanos = 0
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        if number in (1, 2):
            if wire != 0:
                raise _Malformed(f"time field {number} has wire type {_WIRE_NAMES[wire]}")
            if number == 1:
                seconds = _signed64(value)
            else:
                nanos = _signed32(value)
    try:
        t = _EPOCH + datetime.timedelta(seconds=seconds, microseconds=nanos // 1000)
    except OverflowError:
        raise _Malformed(f"time out of range: {seconds}s") from None
    text = (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}")
    return f"{text}.{t.microsecond:06d}Z" if micro else f"{text}Z"


def _quantity(buf: bytes, start: int, end: int) -> str:
    """resource.Quantity: {1: string}, already in canonical form; absent means zero."""
    out = "0"
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise _Malformed(f"quantity has wire type {_WIRE_NAMES[wire]}")
            out = _text(buf, value, pos) or "0"
    return out


def _int_or_string(buf: bytes, start: int, end: int) -> int | str:
    """intstr.IntOrString: {1: type (0 int, 1 string), 2: intVal, 3: strVal}."""
    type_, int_val, str_val = 0, 0, ""
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        if number in (1, 2):
            if wire != 0:
                raise _Malformed(f"int-or-string field {number} has wire type {_WIRE_NAMES[wire]}")
            if number == 1:
                type_ = _signed64(value)
            else:
                int_val = _signed32(value)
        elif number == 3:
            if wire != 2:
                raise _Malformed(f"int-or-string field 3 has wire type {_WIRE_NAMES[wire]}")
            str_val = _text(buf, value, pos)
    return str_val if type_ == 1 else int_val


def _embedded_json(buf: bytes, start: int, end: int, *, what: str) -> Any:
    """RawExtension / FieldsV1: {1: raw}, where raw is JSON; no data is null."""
    raw = b""
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise _Malformed(f"{what} has wire type {_WIRE_NAMES[wire]}")
            raw = buf[value:pos]
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise _Malformed(f"{what} does not hold JSON") from None


def _special(kind: int, buf: bytes, start: int, end: int) -> Any:
    if kind == _TIME:
        return _time(buf, start, end, micro=False)
    if kind == _MICROTIME:
        return _time(buf, start, end, micro=True)
    if kind == _QUANTITY:
        return _quantity(buf, start, end)
    if kind == _INTSTR:
        return _int_or_string(buf, start, end)
    return _embedded_json(buf, start, end, what="RawExtension" if kind == _RAWEXT else "FieldsV1")


def _scalar(kind: int, value: int) -> int | bool:
    if kind == _INT64:
        return _signed64(value)
    if kind == _INT32:
        return _signed32(value)
    return value != 0


def _value(field: Field, buf: bytes, start: int, end: int, table: dict[str, Message]) -> Any:
    """A length-delimited value of `field`'s type (not a map)."""
    kind = field.kind
    if kind == _STR:
        return _text(buf, start, end)
    if kind == _BYTES:
        return base64.b64encode(buf[start:end]).decode("ascii")
    if kind == _MSG:
        out: dict[str, Any] = {}
        _decode_into(buf, start, end, table[field.message], table, out)
        return out
    return _special(kind, buf, start, end)


def _map_entry(field: Field, buf: bytes, start: int, end: int,
               table: dict[str, Message]) -> tuple[str, Any]:
    key = ""
    value: Any = None
    pos = start
    while pos < end:
        number, wire, at, pos = _read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise _Malformed(f"map key has wire type {_WIRE_NAMES[wire]}")
            key = _text(buf, at, pos)
        elif number == 2:
            if wire != 2:
                raise _Malformed(f"map value has wire type {_WIRE_NAMES[wire]}")
            value = _value(field, buf, at, pos, table)
    if value is None:  # absent value: the zero value of its type
        value = _value(field, buf, end, end, table)
    return key, value


def _decode_into(buf: bytes, start: int, end: int, message: Message, table: dict[str, Message],
                 out: dict[str, Any]) -> None:
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        field = message.fields.get(number)
        if field is None:
            continue  # unknown field: skipped, as upstream does
        try:
            _apply(field, wire, value, pos, buf, table, out)
        except _Malformed as e:
            if field.name:
                e.path.insert(0, field.name)
            raise
    for name in message.nulls:
        out.setdefault(name, None)


def _apply(field: Field, wire: int, value: int, end: int, buf: bytes, table: dict[str, Message],
           out: dict[str, Any]) -> None:
    kind = field.kind
    name = field.name
    if kind in _VARINT_KINDS and not field.map:
        if wire == 0:
            scalar = _scalar(kind, value)
            if field.repeated:
                _list(out, name).append(scalar)
            elif scalar or field.keep:
                out[name] = scalar
            else:
                out.pop(name, None)
            return
        if wire == 2 and field.repeated:  # packed
            items = _list(out, name)
            pos = value
            while pos < end:
                item, pos = _varint(buf, pos, end)
                items.append(_scalar(kind, item))
            if not items:
                del out[name]
            return
        raise _Malformed(f"wire type {_WIRE_NAMES[wire]} where a varint was expected")
    if wire != 2:
        raise _Malformed(f"wire type {_WIRE_NAMES[wire]} where length-delimited data was expected")
    if field.map:
        key, item = _map_entry(field, buf, value, end, table)
        entries = out.get(name)
        if entries is None:
            entries = out[name] = {}
        entries[key] = item
    elif field.inline:
        _decode_into(buf, value, end, table[field.message], table, out)
    elif field.repeated:
        _list(out, name).append(_value(field, buf, value, end, table))
    elif kind == _MSG:
        # A repeated occurrence of a singular message merges into the first, as in proto.
        sub = out.get(name)
        if not isinstance(sub, dict):
            sub = out[name] = {}
        _decode_into(buf, value, end, table[field.message], table, sub)
    else:
        item = _value(field, buf, value, end, table)
        if kind in (_STR, _BYTES) and not item and not field.keep:
            out.pop(name, None)
        elif item is None and field.omitzero:
            out.pop(name, None)
        else:
            out[name] = item


def _list(out: dict[str, Any], name: str) -> list[Any]:
    items: list[Any] | None = out.get(name)
    if items is None:  # absent, or a null from an earlier occurrence of the parent message
        items = out[name] = []
    return items


def _envelope(body: bytes) -> tuple[str, str, int, int]:
    """The runtime.Unknown after the prefix: (apiVersion, kind, raw start, raw end)."""
    api_version = kind = encoding = content_type = ""
    raw = (0, 0)
    pos, end = len(MAGIC), len(body)
    while pos < end:
        number, wire, value, pos = _read_field(body, pos, end)
        if number not in (1, 2, 3, 4):
            continue
        if wire != 2:
            raise _Malformed(f"runtime.Unknown field {number} has wire type {_WIRE_NAMES[wire]}")
        if number == 1:
            tpos = value
            while tpos < pos:
                tnum, twire, tvalue, tpos = _read_field(body, tpos, pos)
                if tnum in (1, 2):
                    if twire != 2:
                        raise _Malformed(f"typeMeta field {tnum} has wire type {_WIRE_NAMES[twire]}")
                    if tnum == 1:
                        api_version = _text(body, tvalue, tpos)
                    else:
                        kind = _text(body, tvalue, tpos)
        elif number == 2:
            raw = (value, pos)
        elif number == 3:
            encoding = _text(body, value, pos)
        else:
            content_type = _text(body, value, pos)
    if encoding:
        raise _Malformed(f"unsupported contentEncoding {encoding!r}")
    if content_type and content_type != PROTOBUF:
        raise _Malformed(f"unsupported contentType {content_type!r} in runtime.Unknown")
    return api_version, kind, raw[0], raw[1]


def decode(body: bytes) -> dict[str, Any]:
    """Decode a protobuf request body into the JSON-shaped dict of the object it carries.

    Raises `BadRequest` for malformed data and `UnsupportedMediaType` for kinds without a
    message description here.
    """
    body = bytes(body)
    if not body.startswith(MAGIC):
        raise errors.BadRequest(
            "the body is not a Kubernetes protobuf message: it must start with the prefix "
            f"{MAGIC!r} ({PROTOBUF})")
    try:
        api_version, kind, start, end = _envelope(body)
    except _Malformed as e:
        raise errors.BadRequest(f"malformed protobuf body: {e.detail}") from None
    if not kind:
        raise errors.BadRequest("malformed protobuf body: Object 'Kind' is missing")
    if not api_version:
        raise errors.BadRequest("malformed protobuf body: Object 'apiVersion' is missing")
    name = message_for(api_version=api_version, kind=kind)
    if name is None:
        raise errors.UnsupportedMediaType(
            f"this server cannot decode {kind} ({api_version}) from {PROTOBUF}; "
            "send it as application/json")
    table = messages()
    out: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    try:
        _decode_into(body, start, end, table[name], table, out)
    except _Malformed as e:
        where = ".".join(e.path)
        raise errors.BadRequest(
            f"malformed protobuf body for {kind} ({api_version})"
            + (f" at {where}" if where else "") + f": {e.detail}") from None
    return out
