"""The protobuf message descriptions `cp.protobuf` decodes request bodies with: one compact string per
message of the kinds we serve (and what they embed), and the (apiVersion, kind) of a body to its
message.

The descriptions follow the `generated.proto` files of kubernetes/api and apimachinery for 1.37
(numbers from there; JSON names and pointer/omitempty facts from `types.go`); the format is below.
This module is data, kept apart from the decoder so that a new kind adds lines here only. Pure.
"""

from __future__ import annotations

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

PACKAGES: dict[str, dict[str, str]] = {
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
META_PKG = "io.k8s.apimachinery.pkg.apis.meta.v1"
CORE_PKG = "io.k8s.api.core.v1"

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
