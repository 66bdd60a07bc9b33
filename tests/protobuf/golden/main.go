// Writes golden pairs for draemu's protobuf decoder: each object of the Kubernetes Go
// types, encoded by apimachinery's protobuf serializer (`<name>.pb`, what client-go
// sends) and by encoding/json (`<name>.json`, what a JSON client sends).
//
//	cd tests/protobuf/golden && go run . ../fixtures/golden
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certsv1 "k8s.io/api/certificates/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

func ptr[T any](v T) *T { return &v }

var (
	created = metav1.NewTime(time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC))
	micro   = metav1.NewMicroTime(time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC))
	before  = metav1.NewTime(time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC))
)

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "default", GenerateName: "gen-", UID: "0b4f2b5e-1",
		ResourceVersion: "42", Generation: 3, CreationTimestamp: created,
		DeletionGracePeriodSeconds: ptr[int64](0),
		Labels:                     map[string]string{"app": "demo", "empty": ""},
		Annotations:                map[string]string{"note": "héllo ✓"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1",
			Controller: ptr(true), BlockOwnerDeletion: ptr(false)}},
		Finalizers: []string{"a/b", "c/d"},
		ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "v1", Time: &created, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{}}}}`)}}},
	}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox",
			RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}},
		Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1.27", Command: []string{"sh", "-c"}, Args: []string{""},
			WorkingDir: "/w",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80,
				Protocol: corev1.ProtocolTCP}, {ContainerPort: 0, HostPort: 8080}},
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
					Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}}},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{"cpu": resource.MustParse("0.25")},
				Claims:   []corev1.ResourceClaim{{Name: "gpu", Request: "r0"}}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/healthz", Port: intstr.FromInt32(8080)}}, InitialDelaySeconds: 5,
				TerminationGracePeriodSeconds: ptr[int64](0)},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{
				Port: intstr.FromString("http")}}},
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr[int64](0), RunAsNonRoot: ptr(false),
				Privileged: ptr(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true}},
		}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox", Stdin: true}, TargetContainerName: "app"}},
		Volumes: []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultMode: ptr[int32](0o644),
				Items: []corev1.KeyToPath{{Key: "k", Path: "p"}}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("64Mi"))}}},
		},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr[int64](0),
		ActiveDeadlineSeconds:         ptr[int64](-1),
		NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
		AutomountServiceAccountToken:  ptr(false),
		EnableServiceLinks:            ptr(false),
		SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr[int64](2000),
			Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}},
		Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr[int64](0)}},
		Priority:        ptr[int32](-5),
		Overhead:        corev1.ResourceList{"memory": resource.MustParse("120Mi")},
		ResourceClaims:  []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr("gpu-template")}},
		HostNetwork:     false,
		SchedulingGates: []corev1.PodSchedulingGate{{Name: "wait"}},
	}
}

// A CRD whose schema uses every form of apiextensions' unions and embedded JSON.
func crd() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string", MinLength: ptr[int64](0), Pattern: "^[a-z]+$",
		Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"bb"`)}}}
	schema := apiextensionsv1.JSONSchemaProps{
		Type: "object", Description: "a widget", Required: []string{"spec"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", XPreserveUnknownFields: ptr(false),
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"replicas": {Type: "integer", Format: "int32", Minimum: ptr(0.0), Maximum: ptr(10.0),
						ExclusiveMaximum: true, Default: &apiextensionsv1.JSON{Raw: []byte(`1`)}},
					"ratio":  {Type: "number", MultipleOf: ptr(0.25), Maximum: ptr(1e21), Minimum: ptr(-1.5)},
					"name":   str,
					"tags":   {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}, XListType: ptr("set")},
					"tuple":  {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextensionsv1.JSONSchemaProps{str, {Type: "integer"}}}},
					"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
					"closed": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: false}},
					"port":   {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
					"embedded": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: ptr(true),
						Nullable: true, Example: &apiextensionsv1.JSON{Raw: []byte(`{"kind":"Pod"}`)}},
				},
				Dependencies: apiextensionsv1.JSONSchemaDependencies{
					"name":  {Property: []string{"replicas"}},
					"ratio": {Schema: &apiextensionsv1.JSONSchemaProps{Required: []string{"replicas"}}}},
				XValidations: apiextensionsv1.ValidationRules{{Rule: "self.replicas <= 10", Message: "too many",
					Reason: ptr(apiextensionsv1.FieldValueInvalid), FieldPath: ".replicas", OptionalOldSelf: ptr(false)}}},
			"status": {Type: "object", XPreserveUnknownFields: ptr(true),
				ExternalDocs: &apiextensionsv1.ExternalDocumentation{URL: "https://example.com"}},
		},
	}
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget",
				Kind: "Widget", ListKind: "WidgetList", ShortNames: []string{"wd"}, Categories: []string{"all"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true, Deprecated: true, DeprecationWarning: ptr(""),
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas",
						StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr(".status.selector")}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Replicas",
					Type: "integer", JSONPath: ".spec.replicas", Priority: 0}},
				SelectableFields: []apiextensionsv1.SelectableField{{JSONPath: ".spec.name"}},
			}, {Name: "v2", Served: false, Storage: false,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr(true)}}}},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte{1, 2, 3},
						Service: &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "conv", Path: ptr("/crdconvert"), Port: ptr[int32](9443)}}}},
			PreserveUnknownFields: false,
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established,
				Status: apiextensionsv1.ConditionTrue, LastTransitionTime: created, Reason: "InitialNamesAccepted"}},
			AcceptedNames:  apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			StoredVersions: []string{"v1"}},
	}
}

func objects() map[string]runtime.Object {
	gpuConfig := runtime.RawExtension{Raw: []byte(`{"apiVersion":"gpu.example.com/v1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}}`)}
	selector := []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
		Expression: `device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "A100"`}}}
	objs := map[string]runtime.Object{
		"pod": &corev1.Pod{ObjectMeta: meta("pod"), Spec: podSpec(), Status: corev1.PodStatus{
			Phase: corev1.PodRunning, StartTime: &created, PodIP: "10.0.0.1",
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: before}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, RestartCount: 0, Image: "nginx",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}}},
			ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("pod-gpu-x")}}}},
		"node": &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}},
			Spec: corev1.NodeSpec{PodCIDR: "10.244.0.0/24", Unschedulable: true,
				Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &created}}},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{"cpu": resource.MustParse("8"), "pods": resource.MustParse("110")},
				Allocatable: corev1.ResourceList{"cpu": resource.MustParse("7800m")},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
					LastHeartbeatTime: created, LastTransitionTime: created, Reason: "KubeletReady"}},
				Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.2"}},
				DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
				NodeInfo:        corev1.NodeSystemInfo{MachineID: "m", BootID: "b", KubeletVersion: "v1.37.0", OperatingSystem: "linux", Architecture: "amd64"}}},
		"event": &corev1.Event{ObjectMeta: meta("pod.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod", UID: "u"},
			Reason: "Scheduled", Message: "Successfully assigned", Source: corev1.EventSource{Component: "default-scheduler"},
			FirstTimestamp: created, LastTimestamp: created, Count: 1, Type: "Normal", EventTime: micro,
			Series: &corev1.EventSeries{Count: 2, LastObservedTime: micro}, ReportingController: "scheduler"},
		"events-event": &eventsv1.Event{ObjectMeta: meta("e"), EventTime: micro, ReportingController: "kubelet",
			ReportingInstance: "node-1", Action: "Pulling", Reason: "Pulling", Regarding: corev1.ObjectReference{Kind: "Pod", Name: "p"},
			Related: &corev1.ObjectReference{Kind: "Node", Name: "node-1"}, Note: "pulling", Type: "Normal",
			DeprecatedFirstTimestamp: created, DeprecatedCount: 0},
		"configmap": &corev1.ConfigMap{ObjectMeta: meta("cm"), Immutable: ptr(false),
			Data: map[string]string{"a": "1", "": "empty key"}, BinaryData: map[string][]byte{"bin": {0, 1, 2, 255}, "none": {}}},
		"secret": &corev1.Secret{ObjectMeta: meta("s"), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"password": []byte("s3cr3t"), "blob": {0xde, 0xad, 0xbe, 0xef}}, StringData: map[string]string{"x": "y"}},
		"serviceaccount": &corev1.ServiceAccount{ObjectMeta: meta("sa"), AutomountServiceAccountToken: ptr(false),
			Secrets: []corev1.ObjectReference{{Name: "tok"}}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}},
		"binding": &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "default"},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}},
		"namespace": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "b"}},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		"deployment": &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{
			Replicas: ptr[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: podSpec()},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromString("25%"))}},
			RevisionHistoryLimit: ptr[int32](0), Paused: false, ProgressDeadlineSeconds: ptr[int32](600)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 0, CollisionCount: ptr[int32](0)}},
		"replicaset": &appsv1.ReplicaSet{ObjectMeta: meta("rs"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}},
			Status: appsv1.ReplicaSetStatus{Replicas: 0}},
		"job": &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{Parallelism: ptr[int32](2), Completions: ptr[int32](4),
			BackoffLimit: ptr[int32](0), TTLSecondsAfterFinished: ptr[int32](0), Suspend: ptr(false),
			CompletionMode: ptr(batchv1.IndexedCompletion), ManualSelector: ptr(false),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 42}}}}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"echo", "hi"}}}}}},
			Status: batchv1.JobStatus{StartTime: &created, Active: 1, Ready: ptr[int32](0),
				Conditions: []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse, LastProbeTime: created}}}},
		"lease": &coordv1.Lease{ObjectMeta: meta("node-1"), Spec: coordv1.LeaseSpec{HolderIdentity: ptr(""),
			LeaseDurationSeconds: ptr[int32](40), RenewTime: &micro, AcquireTime: &micro, LeaseTransitions: ptr[int32](0)}},
		"selfsubjectaccessreview": &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: "default", Verb: "create", Group: "resource.k8s.io",
				Resource: "resourceclaims", Subresource: "status",
				LabelSelector: &authzv1.LabelSelectorAttributes{RawSelector: "a=b"}}}},
		"selfsubjectrulesreview": &authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: "default"}},
		"selfsubjectreview": &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{
			Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"},
			Extra: map[string]authnv1.ExtraValue{"scopes": {"a", "b"}, "none": {}}}}},
		"eviction": &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "default"},
			DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0), DryRun: []string{"All"},
				Preconditions: &metav1.Preconditions{UID: ptr(types.UID("u1")), ResourceVersion: ptr("7")}}},
		"deleteoptions": &metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](30), OrphanDependents: ptr(false),
			PropagationPolicy: ptr(metav1.DeletePropagationForeground), IgnoreStoreReadErrorWithClusterBreakingPotential: ptr(false)},
		"scale": &autoscalingv1.Scale{ObjectMeta: meta("d"), Spec: autoscalingv1.ScaleSpec{Replicas: 0},
			Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=d"}},
		"deviceclass": &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"}, Spec: resourcev1.DeviceClassSpec{
			Selectors: selector, ExtendedResourceName: ptr("example.com/gpu"),
			Config: []resourcev1.DeviceClassConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: gpuConfig}}}}}},
		"resourceclaim": &resourcev1.ResourceClaim{ObjectMeta: meta("claim"), Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{
				{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com", Selectors: selector,
					AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2, AdminAccess: ptr(false),
					Tolerations: []resourcev1.DeviceToleration{{Key: "k", Operator: resourcev1.DeviceTolerationOpExists,
						Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: ptr[int64](0)}},
					Capacity: &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("10Gi")}}}},
				{Name: "nic", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "fast", DeviceClassName: "nic",
					AllocationMode: resourcev1.DeviceAllocationModeAll}, {Name: "slow", DeviceClassName: "nic"}}}},
			Constraints: []resourcev1.DeviceConstraint{{Requests: []string{"gpu"}, MatchAttribute: ptr(resourcev1.FullyQualifiedName("gpu.example.com/numa"))}},
			Config: []resourcev1.DeviceClaimConfiguration{{Requests: []string{"gpu"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: gpuConfig}}}}}},
			Status: resourcev1.ResourceClaimStatus{
				Allocation: &resourcev1.AllocationResult{AllocationTimestamp: &created,
					Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
						Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0", AdminAccess: ptr(false),
						ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("10Gi")}}},
						Config: []resourcev1.DeviceAllocationConfiguration{{Source: resourcev1.AllocationConfigSourceClaim,
							Requests: []string{"gpu"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
								Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: gpuConfig}}}}},
					NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
						Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}},
				ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "pod", UID: "u"}},
				Devices: []resourcev1.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0",
					Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 0,
						LastTransitionTime: created, Reason: "Prepared", Message: ""}},
					Data:        &runtime.RawExtension{Raw: []byte(`{"uuid":"GPU-1","list":[1,2.5,null,true]}`)},
					NetworkData: &resourcev1.NetworkDeviceData{InterfaceName: "eth1", IPs: []string{"10.1.0.2/24"}, HardwareAddress: "aa:bb"}}}}},
		"resourceclaimtemplate": &resourcev1.ResourceClaimTemplate{ObjectMeta: meta("tpl"), Spec: resourcev1.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": "y"}},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
				Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}},
		"resourceslice": &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "node-1", Generation: 0, ResourceSliceCount: 1},
			NodeName: ptr("node-1"), PerDeviceNodeSelection: ptr(false),
			SharedCounters: []resourcev1.CounterSet{{Name: "gpu-0-counters", Counters: map[string]resourcev1.Counter{"memory": {Value: resource.MustParse("40Gi")}}}},
			Devices: []resourcev1.Device{{Name: "gpu-0",
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
					"model": {StringValue: ptr("A100")}, "index": {IntValue: ptr[int64](0)}, "mig": {BoolValue: ptr(false)},
					"driverVersion": {VersionValue: ptr("1.2.3")}, "numa": {IntValues: []int64{-1, 0, 1 << 40}},
					"flags": {BoolValues: []bool{true, false}}, "names": {StringValues: []string{"a", ""}}},
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
					"memory": {Value: resource.MustParse("40Gi"), RequestPolicy: &resourcev1.CapacityRequestPolicy{Default: ptr(resource.MustParse("1Gi")),
						ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: ptr(resource.MustParse("1Gi")), Step: ptr(resource.MustParse("1Gi"))}}},
					"cores": {Value: resource.MustParse("0")}},
				ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: "gpu-0-counters",
					Counters: map[string]resourcev1.Counter{"memory": {Value: resource.MustParse("40Gi")}}}},
				Taints:                   []resourcev1.DeviceTaint{{Key: "broken", Effect: resourcev1.DeviceTaintEffectNoSchedule, TimeAdded: &created}},
				AllowMultipleAllocations: ptr(true), BindsToNode: ptr(false)}}}},
		"devicetaintrule": &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr("gpu.example.com"), Pool: ptr(""), Device: ptr("gpu-0")},
			Taint:          resourcev1.DeviceTaint{Key: "k", Value: "v", Effect: resourcev1.DeviceTaintEffectNoExecute}}},
		"resourceslice-v1beta1": &resourcev1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1beta1.ResourceSliceSpec{
			Driver: "gpu.example.com", Pool: resourcev1beta1.ResourcePool{Name: "p", ResourceSliceCount: 1}, AllNodes: true,
			Devices: []resourcev1beta1.Device{{Name: "d", Basic: &resourcev1beta1.BasicDevice{
				Attributes: map[resourcev1beta1.QualifiedName]resourcev1beta1.DeviceAttribute{"a": {IntValue: ptr[int64](-7)}},
				Capacity:   map[resourcev1beta1.QualifiedName]resourcev1beta1.DeviceCapacity{"memory": {Value: resource.MustParse("1Gi")}}}}}}},
		"resourceclaim-v1beta1": &resourcev1beta1.ResourceClaim{ObjectMeta: meta("c"), Spec: resourcev1beta1.ResourceClaimSpec{
			Devices: resourcev1beta1.DeviceClaim{Requests: []resourcev1beta1.DeviceRequest{{Name: "gpu", DeviceClassName: "gpu.example.com",
				AllocationMode: resourcev1beta1.DeviceAllocationModeExactCount, Count: 1, AdminAccess: ptr(false)}}}}},
		"resourceclaim-v1beta2": &resourcev1beta2.ResourceClaim{ObjectMeta: meta("c"), Spec: resourcev1beta2.ResourceClaimSpec{
			Devices: resourcev1beta2.DeviceClaim{Requests: []resourcev1beta2.DeviceRequest{{Name: "gpu",
				Exactly: &resourcev1beta2.ExactDeviceRequest{DeviceClassName: "gpu.example.com", Count: 1}}}}}},
		"deviceclass-v1beta1": &resourcev1beta1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: resourcev1beta1.DeviceClassSpec{
			Selectors: []resourcev1beta1.DeviceSelector{{CEL: &resourcev1beta1.CELDeviceSelector{Expression: "true"}}},
			Config: []resourcev1beta1.DeviceClassConfiguration{{DeviceConfiguration: resourcev1beta1.DeviceConfiguration{
				Opaque: &resourcev1beta1.OpaqueDeviceConfiguration{Driver: "d", Parameters: gpuConfig}}}}}},
		"resourceclaimtemplate-v1beta1": &resourcev1beta1.ResourceClaimTemplate{ObjectMeta: meta("t"), Spec: resourcev1beta1.ResourceClaimTemplateSpec{
			Spec: resourcev1beta1.ResourceClaimSpec{Devices: resourcev1beta1.DeviceClaim{Requests: []resourcev1beta1.DeviceRequest{{
				Name: "r", FirstAvailable: []resourcev1beta1.DeviceSubRequest{{Name: "a", DeviceClassName: "c", Count: 0}}}}}}}},
		"deviceclass-v1beta2": &resourcev1beta2.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: resourcev1beta2.DeviceClassSpec{
			ExtendedResourceName: ptr(""), Config: []resourcev1beta2.DeviceClassConfiguration{{DeviceConfiguration: resourcev1beta2.DeviceConfiguration{
				Opaque: &resourcev1beta2.OpaqueDeviceConfiguration{Driver: "d", Parameters: runtime.RawExtension{Raw: []byte(`{}`)}}}}}}},
		"devicetaintrule-v1beta2": &resourcev1beta2.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: resourcev1beta2.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1beta2.DeviceTaintSelector{Device: ptr("gpu-0")},
			Taint:          resourcev1beta2.DeviceTaint{Key: "k", Effect: resourcev1beta2.DeviceTaintEffectNoSchedule, TimeAdded: &created}}},
		"resourceclaimtemplate-v1beta2": &resourcev1beta2.ResourceClaimTemplate{ObjectMeta: meta("t"), Spec: resourcev1beta2.ResourceClaimTemplateSpec{
			Spec: resourcev1beta2.ResourceClaimSpec{Devices: resourcev1beta2.DeviceClaim{Requests: []resourcev1beta2.DeviceRequest{{
				Name: "r", Exactly: &resourcev1beta2.ExactDeviceRequest{DeviceClassName: "c", AllocationMode: resourcev1beta2.DeviceAllocationModeAll}}}}}}},
		"resourceslice-v1beta2": &resourcev1beta2.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1beta2.ResourceSliceSpec{
			Driver: "nic.example.com", Pool: resourcev1beta2.ResourcePool{Name: "p", Generation: 7, ResourceSliceCount: 2},
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "rack", Operator: corev1.NodeSelectorOpExists}}}}},
			Devices: []resourcev1beta2.Device{{Name: "nic-0", AllNodes: ptr(false),
				Attributes: map[resourcev1beta2.QualifiedName]resourcev1beta2.DeviceAttribute{"speed": {StringValue: ptr("")}},
				Capacity:   map[resourcev1beta2.QualifiedName]resourcev1beta2.DeviceCapacity{"bandwidth": {Value: resource.MustParse("100G")}}}}}},
		"devicetaintrule-v1alpha3": &resourcev1alpha3.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: resourcev1alpha3.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1alpha3.DeviceTaintSelector{Driver: ptr("d"), Pool: ptr("p")},
			Taint:          resourcev1alpha3.DeviceTaint{Key: "k", Value: "v", Effect: resourcev1alpha3.DeviceTaintEffectNoExecute}}},
		"resourcepoolstatusrequest-v1alpha3": &resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: metav1.ObjectMeta{Name: "q"},
			Spec: resourcev1alpha3.ResourcePoolStatusRequestSpec{Driver: "gpu.example.com", PoolName: ptr("node-1"), Limit: ptr[int32](0)}},
	}
	for name, obj := range moreObjects() {
		objs[name] = obj
	}
	return objs
}

// The kinds the real kube-scheduler and kube-controller-manager write, and the rest of
// what draemu serves for them.
func moreObjects() map[string]runtime.Object {
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo"}}, Spec: podSpec()}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}}}
	claimSpec := corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{"storage": resource.MustParse("1Gi")}},
		StorageClassName: ptr(""), VolumeMode: ptr(corev1.PersistentVolumeFilesystem)}
	maxUnavailable := intstr.FromString("25%")
	return map[string]runtime.Object{
		"service": &corev1.Service{ObjectMeta: meta("svc"), Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http"), NodePort: 30080},
				{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353), AppProtocol: ptr("dns")}},
			Selector: map[string]string{"app": "demo"}, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Type: corev1.ServiceTypeNodePort, SessionAffinity: corev1.ServiceAffinityNone, PublishNotReadyAddresses: false,
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster, InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster)},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}}},
		"endpoints": &corev1.Endpoints{ObjectMeta: meta("svc"), Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1", Hostname: "web-0", NodeName: ptr("node-1"),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u2"}}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.2"}},
			Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP, AppProtocol: ptr("http")}}}}},
		"persistentvolume": &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{"storage": resource.MustParse("10Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data", Type: ptr(corev1.HostPathDirectoryOrCreate)}},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "c"},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "fast", MountOptions: []string{"ro"}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound, LastPhaseTransitionTime: &created}},
		"persistentvolumeclaim": &corev1.PersistentVolumeClaim{ObjectMeta: meta("data"), Spec: claimSpec,
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{"storage": resource.MustParse("1Gi")}}},
		"replicationcontroller": &corev1.ReplicationController{ObjectMeta: meta("rc"), Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr[int32](0), MinReadySeconds: 5, Selector: map[string]string{"app": "demo"}, Template: &template},
			Status: corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1, ObservedGeneration: 3}},
		"resourcequota": &corev1.ResourceQuota{ObjectMeta: meta("q"), Spec: corev1.ResourceQuotaSpec{
			Hard:   corev1.ResourceList{"pods": resource.MustParse("10"), "requests.cpu": resource.MustParse("4"), "gpu.example.com.deviceclass.resource.k8s.io/devices": resource.MustParse("2")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating},
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
				ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}},
			Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"pods": resource.MustParse("10")}, Used: corev1.ResourceList{"pods": resource.MustParse("0")}}},
		"limitrange": &corev1.LimitRange{ObjectMeta: meta("lr"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"cpu": resource.MustParse("2")},
			Default: corev1.ResourceList{"memory": resource.MustParse("256Mi")}, MaxLimitRequestRatio: corev1.ResourceList{"cpu": resource.MustParse("4")}}}}},
		"podtemplate": &corev1.PodTemplate{ObjectMeta: meta("pt"), Template: template},
		"daemonset": &appsv1.DaemonSet{ObjectMeta: meta("ds"), Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable, MaxSurge: ptr(intstr.FromInt32(0))}},
			MinReadySeconds: 0, RevisionHistoryLimit: ptr[int32](10)},
			Status: appsv1.DaemonSetStatus{CurrentNumberScheduled: 0, NumberMisscheduled: 0, DesiredNumberScheduled: 3, NumberReady: 2,
				ObservedGeneration: 3, UpdatedNumberScheduled: 3, NumberAvailable: 2, NumberUnavailable: 1, CollisionCount: ptr[int32](0),
				Conditions: []appsv1.DaemonSetCondition{{Type: "X", Status: corev1.ConditionTrue, LastTransitionTime: created}}}},
		"statefulset": &appsv1.StatefulSet{ObjectMeta: meta("db"), Spec: appsv1.StatefulSetSpec{Replicas: ptr[int32](3), Selector: selector,
			Template: template, ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claimSpec}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr[int32](0), MaxUnavailable: &maxUnavailable}},
			RevisionHistoryLimit: ptr[int32](10), Ordinals: &appsv1.StatefulSetOrdinals{Start: 0},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 0, ReadyReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-2",
				CollisionCount: ptr[int32](0), AvailableReplicas: 0}},
		"controllerrevision": &appsv1.ControllerRevision{ObjectMeta: meta("ds-5d4b"),
			Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"demo"}}}}}`)}, Revision: 0},
		"horizontalpodautoscaler": &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("hpa"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr[int32](1), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](0)}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](300),
				Tolerance: ptr(resource.MustParse("0.1")), Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 0, LastScaleTime: &created}},
		"cronjob": &batchv1.CronJob{ObjectMeta: meta("cj"), Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", TimeZone: ptr("Europe/Berlin"),
			StartingDeadlineSeconds: ptr[int64](0), ConcurrencyPolicy: batchv1.ForbidConcurrent, Suspend: ptr(false),
			JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
				Spec: batchv1.JobSpec{BackoffLimit: ptr[int32](0), Template: template}},
			SuccessfulJobsHistoryLimit: ptr[int32](3), FailedJobsHistoryLimit: ptr[int32](1)},
			Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Kind: "Job", Namespace: "default", Name: "cj-1", UID: "u3", APIVersion: "batch/v1", ResourceVersion: "7"}},
				LastScheduleTime: &created, LastSuccessfulTime: &before}},
		"endpointslice": &discoveryv1.EndpointSlice{ObjectMeta: meta("svc-abc"), AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)},
				Hostname:   ptr("web-0"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u2"},
				DeprecatedTopology: map[string]string{"a": "b"}, NodeName: ptr("node-1"), Zone: ptr(""),
				Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "z"}}}}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr(""), Protocol: ptr(corev1.ProtocolTCP), Port: ptr[int32](8080), AppProtocol: ptr("http")}}},
		"poddisruptionbudget": &policyv1.PodDisruptionBudget{ObjectMeta: meta("pdb"), Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{},
			UnhealthyPodEvictionPolicy: ptr(policyv1.AlwaysAllow)},
			Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 3, DisruptedPods: map[string]metav1.Time{"p": created},
				DisruptionsAllowed: 0, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3,
				Conditions: []metav1.Condition{{Type: "DisruptionAllowed", Status: metav1.ConditionFalse, ObservedGeneration: 3,
					LastTransitionTime: created, Reason: "InsufficientPods", Message: ""}}}},
		"role": &rbacv1.Role{ObjectMeta: meta("r"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""},
			Resources: []string{"pods"}, ResourceNames: []string{"a"}}}},
		"clusterrole": &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cr"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"},
			NonResourceURLs: []string{"/healthz"}}},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"agg": "true"}}}}},
		"rolebinding": &rbacv1.RoleBinding{ObjectMeta: meta("rb"), Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"},
			{Kind: "ServiceAccount", Name: "default", Namespace: "default"}}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "r"}},
		"clusterrolebinding": &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"},
			Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:nodes"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cr"}},
		"priorityclass": &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 0, GlobalDefault: false,
			Description: "d", PreemptionPolicy: ptr(corev1.PreemptNever)},
		"workload": &schedulingv1beta1.Workload{ObjectMeta: meta("w"), Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: "batch", Kind: "Job", Name: "j"},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{Name: "workers",
				SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 0}},
				ResourceClaims: []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr("t")},
					{Name: "shared", ResourceClaimName: ptr("c")}},
				DisruptionMode: &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}},
				Priority:       ptr[int32](0), PreemptionPolicy: ptr(schedulingv1beta1.PreemptNever)},
				{Name: "basic", SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}}}}},
		"podgroup": &schedulingv1beta1.PodGroup{ObjectMeta: meta("pg"), Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:       &schedulingv1beta1.WorkloadReference{WorkloadName: "w", TemplateName: "workers"},
			SchedulingPolicy:  schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}},
			ResourceClaims:    []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr("t")}},
			PriorityClassName: "high"},
			Status: schedulingv1beta1.PodGroupStatus{Conditions: []metav1.Condition{{Type: "PodGroupInitiallyScheduled",
				Status: metav1.ConditionFalse, Reason: "Unschedulable", Message: "m", LastTransitionTime: created}}}},
		"storageclass": &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "example.com/csi",
			Parameters: map[string]string{"type": "ssd"}, ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimDelete),
			AllowVolumeExpansion: ptr(false), VolumeBindingMode: ptr(storagev1.VolumeBindingWaitForFirstConsumer),
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"a"}}}}}},
		"csinode": &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1",
			Annotations:     map[string]string{"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "u4"}}},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "example.com/csi", NodeID: "n1", TopologyKeys: []string{"zone"},
				Allocatable: &storagev1.VolumeNodeResources{Count: ptr[int32](0)}}}}},
		"csidriver": &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "example.com/csi"}, Spec: storagev1.CSIDriverSpec{
			AttachRequired: ptr(false), PodInfoOnMount: ptr(true), VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			StorageCapacity: ptr(false), FSGroupPolicy: ptr(storagev1.FileFSGroupPolicy), RequiresRepublish: ptr(false),
			TokenRequests: []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr[int64](600)}}}},
		"csistoragecapacity": &storagev1.CSIStorageCapacity{ObjectMeta: meta("cap"), StorageClassName: "fast",
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}, Capacity: ptr(resource.MustParse("100Gi")),
			MaximumVolumeSize: ptr(resource.MustParse("0"))},
		"volumeattachment": &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va"}, Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "example.com/csi", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pv")}, NodeName: "node-1"},
			Status: storagev1.VolumeAttachmentStatus{Attached: false, AttachmentMetadata: map[string]string{"k": ""},
				AttachError: &storagev1.VolumeError{Time: created, Message: "m", ErrorCode: ptr[int32](0)}}},
		"certificatesigningrequest": &certsv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"}, Spec: certsv1.CertificateSigningRequestSpec{
			Request: []byte("-----BEGIN CERTIFICATE REQUEST-----\n"), SignerName: "kubernetes.io/kube-apiserver-client",
			ExpirationSeconds: ptr[int32](3600), Usages: []certsv1.KeyUsage{certsv1.UsageClientAuth}, Username: "alice",
			Groups: []string{"g"}, Extra: map[string]certsv1.ExtraValue{"scopes": {"a", "b"}}},
			Status: certsv1.CertificateSigningRequestStatus{Conditions: []certsv1.CertificateSigningRequestCondition{{
				Type: certsv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", LastUpdateTime: created}}}},
		"tokenrequest": &authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "default"},
			Spec: authnv1.TokenRequestSpec{Audiences: []string{"a"}, ExpirationSeconds: ptr[int64](600),
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "u1"}}},
		"clustertrustbundle": &certsv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:signer:abc"},
			Spec: certsv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: "-----BEGIN CERTIFICATE-----\n"}},
		"podcertificaterequest": &certsv1.PodCertificateRequest{ObjectMeta: meta("pcr"), Spec: certsv1.PodCertificateRequestSpec{
			SignerName: "example.com/signer", PodName: "p", PodUID: "u6", ServiceAccountName: "default", ServiceAccountUID: "u7",
			NodeName: "node-1", NodeUID: "u8", MaxExpirationSeconds: ptr[int32](86400), StubPKCS10Request: []byte{1, 2, 3},
			UnverifiedUserAnnotations: map[string]string{"a": "b"}},
			Status: certsv1.PodCertificateRequestStatus{CertificateChain: "chain", NotBefore: &created, BeginRefreshAt: &created, NotAfter: &created}},
		"servicecidr": &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12"}},
			Status: networkingv1.ServiceCIDRStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue,
				LastTransitionTime: created, Reason: "", Message: ""}}}},
		"ipaddress": &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.1"}, Spec: networkingv1.IPAddressSpec{
			ParentRef: &networkingv1.ParentReference{Group: "", Resource: "services", Namespace: "default", Name: "kubernetes"}}},
		"ingress": &networkingv1.Ingress{ObjectMeta: meta("web"), Spec: networkingv1.IngressSpec{
			IngressClassName: ptr("nginx"), TLS: []networkingv1.IngressTLS{{Hosts: []string{"web.example.com"}, SecretName: "tls"}},
			Rules: []networkingv1.IngressRule{{Host: "web.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/",
					PathType: ptr(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
						Service: &networkingv1.IngressServiceBackend{Name: "web",
							Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
		"ingressclass": &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
			Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}},
		"networkpolicy": &networkingv1.NetworkPolicy{ObjectMeta: meta("np"), Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{
				Protocol: ptr(corev1.ProtocolTCP), Port: ptr(intstr.FromInt32(80))}}}}}},
		"runtimeclass": &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nvidia"}, Handler: "nvidia"},
		"volumeattributesclass": &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, DriverName: "example.com/csi",
			Parameters: map[string]string{"iops": "100"}},
		"customresourcedefinition": crd(),
		"flowschema": &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "fs"},
			Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl"},
				MatchingPrecedence: 0, DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:authenticated"}},
						{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "kube-system", Name: "*"}}},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""},
						Resources: []string{"pods"}, ClusterScope: false, Namespaces: []string{"*"}}},
					NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}}}},
			Status: flowcontrolv1.FlowSchemaStatus{Conditions: []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling,
				Status: flowcontrolv1.ConditionFalse, LastTransitionTime: created, Reason: "Found", Message: "ok"}}}},
		"prioritylevelconfiguration": &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "pl"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr[int32](0),
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
						Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 6, QueueLengthLimit: 50}},
					LendablePercent: ptr[int32](0), BorrowingLimitPercent: ptr[int32](100)}}},
		"prioritylevelconfiguration-exempt": &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "ex"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt,
				Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr[int32](0)}}},
		"apiservice": &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
			Spec: apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "api", Port: ptr[int32](7443)},
				Group: "wardle.example.com", Version: "v1alpha1", CABundle: []byte{0, 1, 255},
				GroupPriorityMinimum: 2000, VersionPriority: 200},
			Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{
				Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse, LastTransitionTime: created,
				Reason: "MissingEndpoints", Message: "no endpoints"}}}},
		"apiservice-local": &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.apps"},
			Spec: apiregistrationv1.APIServiceSpec{Group: "apps", Version: "v1", InsecureSkipTLSVerify: false,
				GroupPriorityMinimum: 17800, VersionPriority: 15}},
		"storageversionmigration": &storagemigrationv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Spec: storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}},
			Status: storagemigrationv1.StorageVersionMigrationStatus{ResourceVersion: "5", Conditions: []metav1.Condition{{
				Type: "Running", Status: metav1.ConditionFalse, LastTransitionTime: created, Reason: "r"}}}},
		"validatingadmissionpolicy": &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "vap"},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				ParamKind: &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Create},
						Rule: admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"},
							Scope: ptr(admissionv1.NamespacedScope)}}}},
					NamespaceSelector: &metav1.LabelSelector{}, MatchPolicy: ptr(admissionv1.Equivalent)},
				Validations:      []admissionv1.Validation{{Expression: "object.spec.replicas <= 5", Message: "m", Reason: ptr(metav1.StatusReasonInvalid)}},
				FailurePolicy:    ptr(admissionv1.Fail),
				AuditAnnotations: []admissionv1.AuditAnnotation{{Key: "k", ValueExpression: "'v'"}},
				MatchConditions:  []admissionv1.MatchCondition{{Name: "c", Expression: "true"}},
				Variables:        []admissionv1.Variable{{Name: "v", Expression: "1"}}},
			Status: admissionv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 3, TypeChecking: &admissionv1.TypeChecking{
				ExpressionWarnings: []admissionv1.ExpressionWarning{{FieldRef: "spec.validations[0].expression", Warning: "w"}}}}},
		"validatingadmissionpolicybinding": &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "vapb"},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "vap",
				ParamRef:          &admissionv1.ParamRef{Name: "p", Namespace: "default", ParameterNotFoundAction: ptr(admissionv1.DenyAction)},
				ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny, admissionv1.Audit}}},
		"mutatingadmissionpolicy": &admissionv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "map"},
			Spec: admissionv1.MutatingAdmissionPolicySpec{
				ParamKind: &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
						Rule: admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}},
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e": "true"}}, MatchPolicy: ptr(admissionv1.Equivalent)},
				Variables: []admissionv1.Variable{{Name: "v", Expression: "1"}},
				Mutations: []admissionv1.Mutation{
					{PatchType: admissionv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionv1.ApplyConfiguration{
						Expression: "Object{spec: Object.spec{replicas: 1337}}"}},
					{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{
						Expression: `[JSONPatch{op: "add", path: "/metadata/labels/a", value: "b"}]`}}},
				FailurePolicy:      ptr(admissionv1.Fail),
				MatchConditions:    []admissionv1.MatchCondition{{Name: "c", Expression: "true"}},
				ReinvocationPolicy: admissionv1.IfNeededReinvocationPolicy}},
		"mutatingadmissionpolicybinding": &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "mapb"},
			Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "map",
				ParamRef: &admissionv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"p": "q"}},
					ParameterNotFoundAction: ptr(admissionv1.AllowAction)},
				MatchResources: &admissionv1.MatchResources{ObjectSelector: &metav1.LabelSelector{}}}},
		"validatingwebhookconfiguration": &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "vwc"},
			Webhooks: []admissionv1.ValidatingWebhook{{Name: "v.example.com", ClientConfig: admissionv1.WebhookClientConfig{
				Service:  &admissionv1.ServiceReference{Namespace: "default", Name: "svc", Path: ptr("/validate"), Port: ptr[int32](443)},
				CABundle: []byte("ca")}, SideEffects: ptr(admissionv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds: ptr[int32](0), FailurePolicy: ptr(admissionv1.Ignore)}}},
		"mutatingwebhookconfiguration": &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mwc"},
			Webhooks: []admissionv1.MutatingWebhook{{Name: "m.example.com", ClientConfig: admissionv1.WebhookClientConfig{URL: ptr("https://x/mutate")},
				SideEffects: ptr(admissionv1.SideEffectClassNoneOnDryRun), AdmissionReviewVersions: []string{"v1", "v1beta1"},
				ReinvocationPolicy: ptr(admissionv1.IfNeededReinvocationPolicy),
				ObjectSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}}},
		"tokenreview": &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: "abc", Audiences: []string{"api"}}},
		"subjectaccessreview": &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods",
				LabelSelector: &authzv1.LabelSelectorAttributes{RawSelector: "a=b"}},
			User: "alice", Groups: []string{"g"}, Extra: map[string]authzv1.ExtraValue{"k": {"v"}}, UID: "u5"}},
		"localsubjectaccessreview": &authzv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
			Spec: authzv1.SubjectAccessReviewSpec{NonResourceAttributes: &authzv1.NonResourceAttributes{Path: "/x", Verb: "get"}, User: "bob"}},
	}
}

func main() {
	out := os.Args[1]
	if err := os.MkdirAll(out, 0o755); err != nil {
		panic(err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		coordv1.AddToScheme, eventsv1.AddToScheme, authzv1.AddToScheme, authnv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv1.AddToScheme, resourcev1.AddToScheme, resourcev1beta1.AddToScheme, resourcev1beta2.AddToScheme,
		resourcev1alpha3.AddToScheme, autoscalingv2.AddToScheme, certsv1.AddToScheme, discoveryv1.AddToScheme,
		rbacv1.AddToScheme, schedulingv1.AddToScheme, schedulingv1beta1.AddToScheme, storagev1.AddToScheme, admissionv1.AddToScheme,
		networkingv1.AddToScheme, storagemigrationv1.AddToScheme, nodev1.AddToScheme,
		flowcontrolv1.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	serializer := protobuf.NewSerializer(scheme, scheme)
	for name, obj := range objects() {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		var pb bytes.Buffer
		if err := serializer.Encode(obj, &pb); err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		js, err := json.Marshal(obj)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		write(filepath.Join(out, name+".pb"), pb.Bytes())
		write(filepath.Join(out, name+".json"), append(js, '\n'))
	}
}

func write(path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		panic(err)
	}
}
