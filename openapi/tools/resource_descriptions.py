"""What `kubectl explain` says of resource.k8s.io's kinds and fields: our own words, with
upstream's facts (meanings, limits, defaults, feature gates). One table for every served
version: a (type, field) pair means the same in v1, v1beta2, v1beta1 and v1alpha3.
Read by generate_resource.py (and describe_resource.py, which rewrites the descriptions of
the schema files in place)."""

from __future__ import annotations

# type -> description
TYPES: dict[str, str] = {
    "DeviceClass": "A kind of device a claim can ask for, by name: selectors that pick the "
                   "devices of one driver (or some of them) and configuration for them. "
                   "Cluster-scoped; usually installed with a DRA driver.",
    "DeviceClassSpec": "Which devices belong to the class and how they are configured.",
    "ResourceClaim": "A request for devices. The scheduler allocates devices that match it "
                     "on a node where the pods that use it can run; the kubelet has the "
                     "drivers prepare them before those pods start.",
    "ResourceClaimSpec": "What the claim asks for. Immutable once created.",
    "ResourceClaimStatus": "What was allocated for the claim, who uses it, and what the "
                           "drivers report about the allocated devices.",
    "ResourceClaimTemplate": "A ResourceClaim to create for each pod that names the template "
                             "in spec.resourceClaims; the claim belongs to the pod and goes "
                             "away with it.",
    "ResourceClaimTemplateSpec": "The claim made from the template: its labels and "
                                 "annotations and its spec.",
    "ResourceSlice": "Devices a DRA driver publishes, one slice of a pool: on one node, on "
                     "nodes a selector picks, or on every node.",
    "ResourceSliceSpec": "The devices of the slice and where they can be used.",
    "ResourcePool": "The pool a slice belongs to: all slices of a pool at its newest "
                    "generation together list its devices.",
    "Device": "One device: its name, attributes and capacities, and how it may be shared, "
              "partitioned and reached from nodes.",
    "BasicDevice": "The attributes, capacities and node access of a device (in v1 these "
                   "are fields of the device itself).",
    "DeviceAttribute": "An attribute value; exactly one of its fields is set.",
    "DeviceCapacity": "An amount of something a device has (memory, bandwidth, cores) and "
                      "how claims may consume part of it.",
    "CapacityRequestPolicy": "How much of a capacity one claim may consume when the device "
                             "allows multiple allocations: a default and the allowed "
                             "amounts.",
    "CapacityRequestPolicyRange": "A range of allowed amounts: from min, in steps of step, "
                                  "up to max.",
    "CapacityRequirements": "The amounts of capacities a request needs from each device.",
    "Counter": "An amount of a counter.",
    "CounterSet": "A named set of counters that devices of the same pool consume from "
                  "(partitionable devices: the partitions of one GPU share its memory "
                  "slices).",
    "DeviceCounterConsumption": "What a device takes from a counter set when it is "
                                "allocated.",
    "DeviceTaint": "A taint on a device: claims that do not tolerate it do not get the "
                   "device (NoSchedule) or lose it (NoExecute).",
    "DeviceToleration": "Lets a request use devices with a matching taint.",
    "DeviceClaim": "The devices a claim asks for: its requests, constraints between them, "
                   "and configuration.",
    "DeviceRequest": "One request of a claim: an exact request for devices of one class, or "
                     "alternatives in order of preference.",
    "ExactDeviceRequest": "Devices of one class, as many as asked (or all), that every "
                          "selector accepts.",
    "DeviceSubRequest": "One alternative of a firstAvailable request.",
    "DeviceDerivedAttribute": "An attribute computed for each allocated device by a CEL "
                              "expression, usable in the claim's constraints.",
    "DeviceSelector": "A way to pick devices; exactly one field is set.",
    "CELDeviceSelector": "A CEL expression that is true for the devices to pick.",
    "DeviceConstraint": "A condition on the devices allocated for several requests together.",
    "DeviceClaimConfiguration": "Configuration for the devices of some (or all) requests of "
                                "the claim, passed to their drivers.",
    "DeviceClassConfiguration": "Configuration the class gives every device allocated "
                                "through it.",
    "OpaqueDeviceConfiguration": "Configuration in a driver's own format, which only that "
                                 "driver reads.",
    "AllocationResult": "What the scheduler allocated: the devices, and where they can be "
                        "used.",
    "DeviceAllocationResult": "The allocated devices and the configuration that applies to "
                              "them.",
    "DeviceRequestAllocationResult": "One allocated device: which request it serves and "
                                     "which device of which pool it is.",
    "DeviceAllocationConfiguration": "Configuration of allocated devices, and where it came "
                                     "from (the class or the claim).",
    "ResourceClaimConsumerReference": "A consumer the claim is reserved for (usually a pod).",
    "AllocatedDeviceStatus": "What a driver reports about one allocated device: conditions, "
                             "data, network data.",
    "NetworkDeviceData": "Network facts of an allocated device: its interface, addresses and "
                         "hardware address.",
    "DeviceTaintRule": "Taints devices that a selector picks, without changing the slices "
                       "that publish them (an administrator's maintenance marker, say).",
    "DeviceTaintRuleSpec": "Which devices to taint, and the taint.",
    "DeviceTaintRuleStatus": "Progress of the rule, as conditions (EvictionInProgress).",
    "DeviceTaintSelector": "Picks devices by driver, pool and device name; fields that are "
                           "set must all match.",
    "NodeAllocatableResource": "How an allocated device counts against a node allocatable "
                               "resource (cpu, memory): as the resource itself (mapping), "
                               "or as an overhead of using it.",
    "NodeAllocatableMapping": "An allocation expressed in a node allocatable resource: per "
                              "allocated device, or per unit of a consumed capacity.",
    "NodeAllocatableOverhead": "Extra node allocatable resource a pod needs to use the "
                               "device: per pod, per container, or both.",
    "ResourcePoolStatusRequest": "Asks for a summary of resource pools (devices in total, "
                                 "allocated, available); a controller answers in its status.",
    "ResourcePoolStatusRequestSpec": "Which pools to summarise.",
    "ResourcePoolStatusRequestStatus": "The summary of the matching pools.",
    "PoolStatus": "The devices of one pool, counted.",
    "PartitionTypeStatus": "Devices of one partition type in a pool, counted.",
    "ShareableCapacityStatus": "How much of one capacity of shareable devices is consumed.",
    "ShareableSummaryStatus": "Shareable devices of a pool: how many are fully or partly "
                              "available, and their capacities.",
}

# Fields that mean the same wherever they appear, unless FIELDS says otherwise.
COMMON: dict[str, str] = {
    "deviceClassName": "The DeviceClass whose devices may satisfy the request (its "
                       "selectors and configuration apply too).",
    "selectors": "Selectors every device must satisfy (each a CEL expression over `device`); "
                 "at most 32.",
    "allocationMode": "ExactCount (the default: `count` devices) or All (every device that "
                      "matches, at least one).",
    "count": "How many devices, when allocationMode is ExactCount (default 1).",
    "adminAccess": "Access to devices that may be in use by other claims, for monitoring or "
                   "administration; allowed only in namespaces labelled "
                   "resource.kubernetes.io/admin-access=true (gate DRAAdminAccess).",
    "tolerations": "Taints of devices this request tolerates; at most 16.",
    "capacity": "Amounts of the devices' capacities each device must provide to this request "
                "(gate DRAConsumableCapacity); with allowMultipleAllocations the amounts are "
                "consumed, and other claims share the rest.",
    "derivedAttributes": "Attributes computed for each allocated device by CEL expressions, "
                         "for constraints; at most 32.",
    "driver": "The DRA driver's name (a DNS subdomain, at most 63 characters).",
    "pool": "The resource pool, as its slices name it.",
    "device": "The device's name within its pool.",
    "requests": "Names of the claim's requests this applies to (request/subrequest for one "
                "alternative); empty means all.",
    "opaque": "Configuration in the driver's own format.",
    "config": "Configuration for the allocated devices, passed to their drivers at prepare; "
              "at most 32.",
    "nodeName": "The node whose local devices these are.",
    "nodeSelector": "Which nodes can use the devices (node selector terms, ORed).",
    "allNodes": "Every node of the cluster can use the devices (network-attached ones).",
    "taints": "Taints of the device; at most 16.",
    "attributes": "Attributes by name (an identifier, or domain/identifier); a name without "
                  "a domain is in the driver's domain. At most 32 attributes and "
                  "capacities together.",
    "bindingConditions": "Conditions the scheduler waits for in the claim's device status "
                         "before it binds the pod (an attaching fabric device, say); at most "
                         "4 (gate DRADeviceBindingConditions).",
    "bindingFailureConditions": "Conditions that, once true in the claim's device status, "
                                "make the scheduler give the device up and try again; at "
                                "most 4.",
    "bindsToNode": "Allocating the device ties the claim to the node it was allocated for, "
                   "even if the device could be reached from others.",
    "consumesCounters": "What the device takes from the pool's counter sets when allocated "
                        "(partitionable devices; gate DRAPartitionableDevices); at most 2 "
                        "entries.",
    "allowMultipleAllocations": "Several claims may be allocated this device at once, each "
                                "consuming part of its capacities (gate "
                                "DRAConsumableCapacity).",
    "nodeAllocatableResources": "How allocating the device counts against node allocatable "
                                "resources (cpu, memory) by resource name.",
    "shareID": "Tells apart the allocations of one device that allows multiple allocations "
               "(a UID).",
    "conditions": "Conditions, standard metav1.Condition entries.",
    "value": "The amount (a quantity).",
    "counters": "Counters by name, with their amounts.",
    "name": "The name.",
}

# (type, field) -> description, where COMMON's does not fit or the field is the type's own.
FIELDS: dict[tuple[str, str], str] = {
    ("DeviceClassSpec", "selectors"): "Selectors that pick the class's devices, usually "
                                      "`device.driver == \"<driver>\"`; a device must satisfy "
                                      "all of them. At most 32.",
    ("DeviceClassSpec", "config"): "Configuration for every device allocated through this "
                                   "class, passed to its driver before the claim's own; at "
                                   "most 32.",
    ("DeviceClassSpec", "extendedResourceName"): "An extended resource name (example.com/gpu) "
                                                 "that pods may ask for in "
                                                 "resources.requests; the scheduler then "
                                                 "allocates devices of this class for them "
                                                 "(gate DRAExtendedResource).",
    ("DeviceClassSpec", "suitableNodes"): "Kubernetes 1.31 only: nodes where devices of the "
                                          "class may be found.",
    ("ResourceClaimSpec", "devices"): "The devices the claim asks for.",
    ("ResourceClaimSpec", "controller"): "Kubernetes 1.31 only: a driver that allocates the "
                                         "claim itself (classic DRA).",
    ("ResourceClaimStatus", "allocation"): "The allocated devices; set once by the "
                                           "scheduler, then kept until the claim is no "
                                           "longer reserved, and only removed.",
    ("ResourceClaimStatus", "reservedFor"): "The consumers (usually pods) allowed to use the "
                                            "claim; a claim is never deallocated while "
                                            "reserved. At most 256.",
    ("ResourceClaimStatus", "devices"): "What the drivers report about the allocated "
                                        "devices, one entry per device (and share).",
    ("ResourceClaimStatus", "deallocationRequested"): "Kubernetes 1.31 only: the driver "
                                                      "must deallocate the claim.",
    ("ResourceClaimTemplateSpec", "metadata"): "Labels and annotations copied into each "
                                               "claim made from the template.",
    ("ResourceClaimTemplateSpec", "spec"): "The spec of each claim made from the template.",
    ("ResourceSliceSpec", "driver"): "The DRA driver that publishes the devices (a DNS "
                                     "subdomain, at most 63 characters); immutable.",
    ("ResourceSliceSpec", "pool"): "The resource pool the slice belongs to.",
    ("ResourceSliceSpec", "nodeName"): "The node whose local devices the slice lists "
                                       "(immutable). Exactly one of nodeName, nodeSelector, "
                                       "allNodes and perDeviceNodeSelection is set.",
    ("ResourceSliceSpec", "nodeSelector"): "The nodes that can use the slice's devices (one "
                                           "term).",
    ("ResourceSliceSpec", "allNodes"): "Every node can use the slice's devices.",
    ("ResourceSliceSpec", "perDeviceNodeSelection"): "Each device says itself which nodes "
                                                     "can use it (its nodeName, nodeSelector "
                                                     "or allNodes).",
    ("ResourceSliceSpec", "devices"): "The devices in this slice; at most 128 (64 when "
                                      "they use taints, counters or per-device node "
                                      "selection).",
    ("ResourceSliceSpec", "sharedCounters"): "Counter sets the pool's devices consume from "
                                             "(gate DRAPartitionableDevices); at most 8 sets, "
                                             "32 counters each. A slice lists either counter "
                                             "sets or devices.",
    ("ResourceSliceSpec", "partitionTypeAttribute"): "A string attribute (domain/name) that "
                                                     "names each partitionable device's "
                                                     "partition type (\"Full\", \"Half\"); "
                                                     "devices of one type consume the same.",
    ("ResourceSliceSpec", "skipNodeOperations"): "Node operations (NodePrepareResources, "
                                                 "NodeUnprepareResources) the kubelet may "
                                                 "skip for these devices: when every device "
                                                 "of a driver in a claim skips one, the call "
                                                 "is not made (gate "
                                                 "DRAOptionalNodeOperations).",
    ("ResourcePool", "name"): "The pool's name (unique per driver; usually the node's name "
                              "for node-local devices); at most 253 characters.",
    ("ResourcePool", "generation"): "Raised by the driver when the pool changes; only slices "
                                    "of the newest generation count.",
    ("ResourcePool", "resourceSliceCount"): "How many slices the pool has at this "
                                            "generation; until all are seen, the pool is "
                                            "incomplete and not used.",
    ("Device", "name"): "The device's name, unique in its pool (a DNS label).",
    ("Device", "capacity"): "Capacities by name (memory, bandwidth, ...). At most 32 "
                            "attributes and capacities together.",
    ("Device", "basic"): "v1beta1: the device's attributes, capacities and node access.",
    ("BasicDevice", "capacity"): "Capacities by name (memory, bandwidth, ...). At most 32 "
                                 "attributes and capacities together.",
    ("Device", "nodeName"): "With perDeviceNodeSelection: the node that can use this device.",
    ("Device", "nodeSelector"): "With perDeviceNodeSelection: the nodes that can use this "
                                "device.",
    ("Device", "allNodes"): "With perDeviceNodeSelection: every node can use this device.",
    ("DeviceAttribute", "int"): "A number (64-bit).",
    ("DeviceAttribute", "bool"): "True or false.",
    ("DeviceAttribute", "string"): "A string, at most 64 characters.",
    ("DeviceAttribute", "version"): "A semantic version (semver 2.0.0).",
    ("DeviceAttribute", "ints"): "A list of numbers (gate DRAListTypeAttributes).",
    ("DeviceAttribute", "bools"): "A list of booleans (gate DRAListTypeAttributes).",
    ("DeviceAttribute", "strings"): "A list of strings (gate DRAListTypeAttributes).",
    ("DeviceAttribute", "versions"): "A list of semantic versions (gate "
                                     "DRAListTypeAttributes).",
    ("DeviceCapacity", "value"): "How much the device has (a quantity).",
    ("DeviceCapacity", "requestPolicy"): "With allowMultipleAllocations: how much one claim "
                                         "may consume, and the default when it does not say.",
    ("CapacityRequestPolicy", "default"): "What a claim consumes when it does not ask for "
                                          "this capacity.",
    ("CapacityRequestPolicy", "validValues"): "The amounts a claim may consume; a request "
                                              "is rounded up to the next one. At most 10.",
    ("CapacityRequestPolicy", "validRange"): "The range a claim's amount must fall in; a "
                                             "request is rounded up to a step.",
    ("CapacityRequestPolicyRange", "min"): "The least a claim consumes.",
    ("CapacityRequestPolicyRange", "max"): "The most a claim may consume.",
    ("CapacityRequestPolicyRange", "step"): "Amounts go up from min in steps of this.",
    ("CapacityRequirements", "requests"): "Amounts by capacity name that each allocated "
                                          "device must have left.",
    ("Counter", "value"): "The amount (a quantity).",
    ("CounterSet", "name"): "The set's name, referenced by devices' consumesCounters (a DNS "
                            "label).",
    ("CounterSet", "counters"): "Counters by name with the amounts the set has; at most 32.",
    ("DeviceCounterConsumption", "counterSet"): "The counter set consumed from.",
    ("DeviceCounterConsumption", "counters"): "Counters by name with the amounts consumed.",
    ("DeviceCounterConsumption", "compatibilityGroups"): "Groups the device belongs to on "
                                                         "this counter set; devices of "
                                                         "different groups are not allocated "
                                                         "from one set together (gate "
                                                         "DRADeviceCompatibilityGroups); at "
                                                         "most 2.",
    ("DeviceTaint", "key"): "The taint's key (a label key).",
    ("DeviceTaint", "value"): "The taint's value (a label value).",
    ("DeviceTaint", "effect"): "NoSchedule (not allocated anew), NoExecute (pods using it "
                               "are evicted too) or None (only reported).",
    ("DeviceTaint", "timeAdded"): "When the taint was added (set by the apiserver).",
    ("DeviceToleration", "key"): "The taint key tolerated; empty with operator Exists "
                                 "tolerates every taint.",
    ("DeviceToleration", "operator"): "Equal (the default: key and value match) or Exists "
                                      "(any value).",
    ("DeviceToleration", "value"): "The taint value tolerated (with operator Equal).",
    ("DeviceToleration", "effect"): "The effect tolerated; empty means all.",
    ("DeviceToleration", "tolerationSeconds"): "With NoExecute: how long a device with the "
                                               "taint stays allocated before the pods are "
                                               "evicted.",
    ("DeviceClaim", "requests"): "The requests, each for one or more devices; at most 32.",
    ("DeviceClaim", "constraints"): "Conditions on the devices of several requests together "
                                    "(same PCIe root, same NUMA node); at most 32.",
    ("DeviceClaim", "config"): "Configuration for the devices of some or all requests; at "
                               "most 32.",
    ("DeviceRequest", "name"): "The request's name, referenced by constraints, config and "
                               "containers' resources.claims[].request (a DNS label).",
    ("DeviceRequest", "exactly"): "Devices of one class; exactly one of exactly and "
                                  "firstAvailable is set.",
    ("DeviceRequest", "firstAvailable"): "Alternatives in order of preference: the first one "
                                         "that can be allocated is (gate "
                                         "DRAPrioritizedList); at most 8.",
    ("DeviceSubRequest", "name"): "The alternative's name; the allocation names it "
                                  "request/subrequest (a DNS label).",
    ("DeviceSubRequest", "deviceClassName"): "The DeviceClass whose devices may satisfy "
                                             "this alternative.",
    ("DeviceDerivedAttribute", "name"): "The derived attribute's name (domain/name) as "
                                        "constraints refer to it.",
    ("DeviceDerivedAttribute", "expression"): "A CEL expression over `device` whose result "
                                              "(a bool, int, string or version, or a list "
                                              "of them) is the attribute's value.",
    ("DeviceSelector", "cel"): "A CEL expression.",
    ("CELDeviceSelector", "expression"): "A CEL expression over `device` (driver, "
                                         "attributes, capacity, allowMultipleAllocations) "
                                         "that must be true, e.g. "
                                         "`device.attributes[\"gpu.example.com\"].memory >= "
                                         "85899345920`; at most 10 KiB, and a bounded cost.",
    ("DeviceConstraint", "requests"): "The requests (or request/subrequest) the constraint "
                                      "applies to; empty means all.",
    ("DeviceConstraint", "matchAttribute"): "A fully qualified attribute name (domain/name, "
                                            "e.g. resource.kubernetes.io/numaNode) that must "
                                            "have the same value on all those devices.",
    ("DeviceConstraint", "distinctAttribute"): "A fully qualified attribute name whose value "
                                               "must differ on all those devices (gate "
                                               "DRAConsumableCapacity).",
    ("OpaqueDeviceConfiguration", "driver"): "The driver the configuration is for; other "
                                             "drivers ignore it.",
    ("OpaqueDeviceConfiguration", "parameters"): "The configuration, any JSON object; at "
                                                 "most 10 KiB.",
    ("AllocationResult", "devices"): "The allocated devices and their configuration.",
    ("AllocationResult", "nodeSelector"): "The nodes where the allocated devices can be used; "
                                          "pods using the claim are scheduled there.",
    ("AllocationResult", "allocationTimestamp"): "When the devices were allocated (for "
                                                 "binding conditions' timeout).",
    ("AllocationResult", "controller"): "Kubernetes 1.31 only: the driver that allocated the "
                                        "claim.",
    ("DeviceAllocationResult", "results"): "One entry per allocated device (and share); at "
                                           "most 32.",
    ("DeviceAllocationResult", "config"): "The configuration of the class and the claim that "
                                          "applies to the allocated devices, in order.",
    ("DeviceRequestAllocationResult", "request"): "The request (request/subrequest for an "
                                                  "alternative) the device was allocated "
                                                  "for.",
    ("DeviceRequestAllocationResult", "adminAccess"): "The device was allocated for admin "
                                                      "access (it may be in use by others).",
    ("DeviceRequestAllocationResult", "tolerations"): "The request's tolerations when it "
                                                      "was allocated.",
    ("DeviceRequestAllocationResult", "consumedCapacity"): "How much of each capacity this "
                                                           "allocation consumes (the request "
                                                           "rounded up by the device's "
                                                           "requestPolicy).",
    ("DeviceRequestAllocationResult", "skipNodeOperations"): "The slice's "
                                                             "skipNodeOperations when the "
                                                             "device was allocated.",
    ("DeviceAllocationConfiguration", "source"): "FromClass or FromClaim: where the "
                                                 "configuration came from.",
    ("ResourceClaimConsumerReference", "apiGroup"): "The consumer's API group (empty for "
                                                    "core, as for pods).",
    ("ResourceClaimConsumerReference", "resource"): "The consumer's resource, e.g. pods.",
    ("ResourceClaimConsumerReference", "name"): "The consumer's name.",
    ("ResourceClaimConsumerReference", "uid"): "The consumer's UID: a new object of the same "
                                               "name is another consumer.",
    ("AllocatedDeviceStatus", "conditions"): "The device's conditions as its driver sees "
                                             "them (binding conditions among them); at most "
                                             "8.",
    ("AllocatedDeviceStatus", "data"): "Anything else the driver reports, a JSON object; at "
                                       "most 10 KiB.",
    ("AllocatedDeviceStatus", "networkData"): "Network facts of the device.",
    ("NetworkDeviceData", "interfaceName"): "The network interface's name in the pod; at "
                                            "most 256 characters.",
    ("NetworkDeviceData", "ips"): "Addresses in CIDR form (10.1.2.3/24); at most 16.",
    ("NetworkDeviceData", "hardwareAddress"): "The MAC (or other hardware) address; at most "
                                              "128 characters.",
    ("DeviceTaintRuleSpec", "deviceSelector"): "The devices to taint; without one, no "
                                               "device.",
    ("DeviceTaintRuleSpec", "taint"): "The taint to add to each selected device.",
    ("DeviceTaintRuleStatus", "conditions"): "EvictionInProgress while pods are being "
                                             "evicted for a NoExecute taint; at most 8.",
    ("DeviceTaintSelector", "driver"): "Only devices of this driver.",
    ("DeviceTaintSelector", "pool"): "Only devices of this pool.",
    ("DeviceTaintSelector", "device"): "Only the device of this name (with driver and pool).",
    ("NodeAllocatableResource", "mapping"): "The device is the resource (a CPU driver's "
                                            "cores): its allocation counts once per claim, "
                                            "and the claim cannot be shared by pods.",
    ("NodeAllocatableResource", "overhead"): "Using the device costs the resource too (host "
                                             "memory of a GPU), for each pod.",
    ("NodeAllocatableMapping", "deviceMultiplier"): "Resource per allocated device "
                                                    "(deviceCount × this).",
    ("NodeAllocatableMapping", "capacityKey"): "A capacity of the device whose consumed "
                                               "amount, times capacityMultiplier, is the "
                                               "resource.",
    ("NodeAllocatableMapping", "capacityMultiplier"): "Resource per unit of the consumed "
                                                      "capacityKey.",
    ("NodeAllocatableOverhead", "perPod"): "Resource added once for each pod using the claim.",
    ("NodeAllocatableOverhead", "perContainer"): "Resource added for each container that "
                                                 "uses the claim.",
    ("ResourcePoolStatusRequestSpec", "driver"): "Summarise this driver's pools.",
    ("ResourcePoolStatusRequestSpec", "poolName"): "Only the pool of this name.",
    ("ResourcePoolStatusRequestSpec", "limit"): "At most this many pools (default 100, at "
                                                "most 1000).",
    ("ResourcePoolStatusRequestSpec", "defaultPartitionTypeAttribute"): "The attribute that "
                                                                        "names partition "
                                                                        "types where a "
                                                                        "slice does not "
                                                                        "say.",
    ("ResourcePoolStatusRequestStatus", "poolCount"): "How many pools matched (more than "
                                                      "listed when past the limit).",
    ("ResourcePoolStatusRequestStatus", "pools"): "One summary per pool.",
    ("ResourcePoolStatusRequestStatus", "conditions"): "Complete, or Failed with why.",
    ("PoolStatus", "driver"): "The pool's driver.",
    ("PoolStatus", "poolName"): "The pool's name.",
    ("PoolStatus", "nodeName"): "The node of a node-local pool.",
    ("PoolStatus", "generation"): "The pool generation counted.",
    ("PoolStatus", "resourceSliceCount"): "The pool's slices at that generation.",
    ("PoolStatus", "totalDevices"): "Devices in the pool.",
    ("PoolStatus", "allocatedDevices"): "Devices allocated to claims.",
    ("PoolStatus", "availableDevices"): "Devices that can still be allocated.",
    ("PoolStatus", "unavailableDevices"): "Devices that cannot be allocated (tainted, or "
                                          "their counters used up).",
    ("PoolStatus", "partitionSummary"): "Counts per partition type.",
    ("PoolStatus", "shareableSummary"): "The shareable devices and their capacities.",
    ("PoolStatus", "validationError"): "Why the pool could not be counted (incomplete, "
                                       "invalid).",
    ("PartitionTypeStatus", "type"): "The partition type.",
    ("PartitionTypeStatus", "attribute"): "The attribute that names the type.",
    ("PartitionTypeStatus", "total"): "Devices of this type.",
    ("PartitionTypeStatus", "allocatable"): "Devices of this type that can still be "
                                            "allocated.",
    ("ShareableSummaryStatus", "fullyAvailableDevices"): "Shareable devices nothing "
                                                         "consumes from.",
    ("ShareableSummaryStatus", "partiallyAvailableDevices"): "Shareable devices with some "
                                                             "capacity consumed.",
    ("ShareableSummaryStatus", "capacity"): "Per capacity: total, consumed, available.",
    ("ShareableCapacityStatus", "name"): "The capacity's name.",
    ("ShareableCapacityStatus", "total"): "Its total over the shareable devices.",
    ("ShareableCapacityStatus", "consumed"): "What claims consume of it.",
    ("ShareableCapacityStatus", "available"): "What is left.",
}


def field_description(type_name: str, field: str) -> str | None:
    """Our description of a field, or None (the generator derives one from the name)."""
    if type_name == "BasicDevice":  # v1beta1's wrapper: the fields of v1's Device
        type_name = "Device" if ("Device", field) in FIELDS else type_name
    return FIELDS.get((type_name, field)) or COMMON.get(field)
