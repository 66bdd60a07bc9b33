package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
)

func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

func (s *suite) typedUpdate() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	claim, err := client.Get(s.ctx, "claim-1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	claim.Labels = map[string]string{"updated": "yes"}
	updated, err := client.Update(s.ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	switch {
	case updated.Labels["updated"] != "yes":
		return fmt.Errorf("label not stored: %v", updated.Labels)
	case updated.ResourceVersion == claim.ResourceVersion:
		return fmt.Errorf("resourceVersion unchanged after an update")
	case updated.Generation != claim.Generation:
		return fmt.Errorf("a metadata-only update changed generation %d -> %d", claim.Generation, updated.Generation)
	}
	return nil
}

func (s *suite) staleUpdate() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	old, err := client.Get(s.ctx, "claim-1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	fresh := old.DeepCopy()
	fresh.Labels["round"] = "1"
	if _, err := client.Update(s.ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return err
	}
	old.Labels["round"] = "stale"
	_, err = client.Update(s.ctx, old, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		return fmt.Errorf("want 409 Conflict, got %v", err)
	}
	want := `Operation cannot be fulfilled on resourceclaims.resource.k8s.io "claim-1": the object has been ` +
		`modified; please apply your changes to the latest version and try again`
	if err.Error() != want {
		return fmt.Errorf("message %q, want %q", err.Error(), want)
	}
	return nil
}

func (s *suite) mergePatch() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	patched, err := client.Patch(s.ctx, "claim-1", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"a":"1","b":"2"}}}`), metav1.PatchOptions{})
	if err != nil {
		return err
	}
	if patched.Annotations["a"] != "1" || patched.Annotations["b"] != "2" {
		return fmt.Errorf("annotations after patch: %v", patched.Annotations)
	}
	patched, err = client.Patch(s.ctx, "claim-1", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"a":null}}}`), metav1.PatchOptions{})
	if err != nil {
		return err
	}
	if _, still := patched.Annotations["a"]; still || patched.Annotations["b"] != "2" {
		return fmt.Errorf("null did not delete only that key: %v", patched.Annotations)
	}
	return nil
}

func (s *suite) strategicPatch() error {
	patch := `{"spec":{"containers":[{"name":"side","image":"registry.k8s.io/pause:3.9"}]}}`
	pod, err := s.cs.CoreV1().Pods(s.ns).Patch(s.ctx, "pod-a", types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{})
	if err != nil {
		return err
	}
	images := map[string]string{}
	for _, c := range pod.Spec.Containers {
		images[c.Name] = c.Image
	}
	if len(pod.Spec.Containers) != 2 || images["main"] != "registry.k8s.io/pause:3.10" ||
		images["side"] != "registry.k8s.io/pause:3.9" {
		return fmt.Errorf("containers after patch: %v (want main untouched, side's image replaced)", images)
	}
	return nil
}

func (s *suite) jsonPatch() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	patch := `[{"op":"add","path":"/metadata/annotations","value":{"j":"1"}},` +
		`{"op":"replace","path":"/metadata/annotations/j","value":"2"}]`
	patched, err := client.Patch(s.ctx, "claim-1", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return err
	}
	if len(patched.Annotations) != 1 || patched.Annotations["j"] != "2" {
		return fmt.Errorf("annotations after JSON patch: %v", patched.Annotations)
	}
	failing := `[{"op":"test","path":"/metadata/annotations/j","value":"nope"},` +
		`{"op":"remove","path":"/metadata/annotations/j"}]`
	_, err = client.Patch(s.ctx, "claim-1", types.JSONPatchType, []byte(failing), metav1.PatchOptions{})
	if statusCode(err) != http.StatusUnprocessableEntity {
		return fmt.Errorf("failing test op: want 422, got %v", err)
	}
	after, err := client.Get(s.ctx, "claim-1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if after.Annotations["j"] != "2" {
		return fmt.Errorf("a rejected patch changed the object: %v", after.Annotations)
	}
	return nil
}

func (s *suite) appliedClaim(owner string) *resourceapply.ResourceClaimApplyConfiguration {
	return resourceapply.ResourceClaim("applied", s.ns).
		WithLabels(map[string]string{"owner": owner}).
		WithSpec(resourceapply.ResourceClaimSpec().WithDevices(resourceapply.DeviceClaim().WithRequests(
			resourceapply.DeviceRequest().WithName("gpu").WithExactly(
				resourceapply.ExactDeviceRequest().WithDeviceClassName(s.class).WithCount(2)))))
}

func (s *suite) serverSideApply() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	opts := metav1.ApplyOptions{FieldManager: "conformance-a"}
	created, err := client.Apply(s.ctx, s.appliedClaim("a"), opts)
	if err != nil {
		return fmt.Errorf("first apply: %w", err)
	}
	req := created.Spec.Devices.Requests
	if len(req) != 1 || req[0].Exactly == nil || req[0].Exactly.Count != 2 || created.Labels["owner"] != "a" {
		return fmt.Errorf("applied object: labels %v, requests %+v", created.Labels, req)
	}
	var managers []string
	for _, m := range created.ManagedFields {
		managers = append(managers, m.Manager+"/"+string(m.Operation))
	}
	if strings.Join(managers, ",") != "conformance-a/Apply" {
		return fmt.Errorf("managedFields managers %v, want [conformance-a/Apply]", managers)
	}
	extracted, err := resourceapply.ExtractResourceClaim(created, "conformance-a")
	if err != nil {
		return fmt.Errorf("extract from managedFields: %w", err)
	}
	// The applier also owns what decoding defaults in its configuration (allocationMode),
	// as in kube-apiserver, where appliers share ownership of deserialization defaults.
	want := s.appliedClaim("a")
	want.Spec.Devices.Requests[0].Exactly.WithAllocationMode(resourcev1.DeviceAllocationModeExactCount)
	if got, want := toJSON(extracted.Spec), toJSON(want.Spec); got != want {
		return fmt.Errorf("extracted apply configuration %s differs from the applied one %s", got, want)
	}
	again, err := client.Apply(s.ctx, s.appliedClaim("a"), opts)
	if err != nil {
		return fmt.Errorf("repeated apply: %w", err)
	}
	if again.ResourceVersion != created.ResourceVersion {
		return fmt.Errorf("a no-op apply wrote a new resourceVersion %s -> %s", created.ResourceVersion,
			again.ResourceVersion)
	}
	return nil
}

func (s *suite) applyConflict() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	cfg := resourceapply.ResourceClaim("applied", s.ns).WithLabels(map[string]string{"owner": "b"})
	_, err := client.Apply(s.ctx, cfg, metav1.ApplyOptions{FieldManager: "conformance-b"})
	if !apierrors.IsConflict(err) {
		return fmt.Errorf("apply of a field owned by another manager: want 409 Conflict, got %v", err)
	}
	if !strings.Contains(err.Error(), `conflict with "conformance-a"`) {
		return fmt.Errorf("conflict message does not name the owner: %v", err)
	}
	forced, err := client.Apply(s.ctx, cfg, metav1.ApplyOptions{FieldManager: "conformance-b", Force: true})
	if err != nil {
		return fmt.Errorf("forced apply: %w", err)
	}
	if forced.Labels["owner"] != "b" {
		return fmt.Errorf("forced apply did not set the label: %v", forced.Labels)
	}
	for _, m := range forced.ManagedFields {
		if m.Manager == "conformance-a" && m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:owner"`) {
			return fmt.Errorf("conformance-a still owns labels.owner after a forced apply: %s", m.FieldsV1.Raw)
		}
	}
	return nil
}

func (s *suite) allocation() *resourcev1.AllocationResult {
	return &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "dev", Driver: s.driver,
			Pool: s.nodeA, Device: "dev-0"}},
	}}
}

func (s *suite) claimUpdateStatus() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	claim, err := client.Get(s.ctx, "claim-1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	claim.Status.Allocation = s.allocation()
	claim.Labels["from-status-update"] = "ignored"
	updated, err := client.UpdateStatus(s.ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(updated.Status.Allocation, s.allocation()) {
		return fmt.Errorf("status.allocation stored as %+v", updated.Status.Allocation)
	}
	if _, kept := updated.Labels["from-status-update"]; kept {
		return fmt.Errorf("a /status update changed metadata.labels")
	}
	return nil
}

func (s *suite) claimUpdateIgnoresStatus() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	claim, err := client.Get(s.ctx, "claim-1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	claim.Status.Allocation = nil
	claim.Labels["main-update"] = "yes"
	updated, err := client.Update(s.ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if updated.Status.Allocation == nil || updated.Labels["main-update"] != "yes" {
		return fmt.Errorf("main update: allocation %v, labels %v (want allocation kept, label set)",
			updated.Status.Allocation, updated.Labels)
	}
	return nil
}

// bodiesUsed checks that every create and update really went out in the configured
// encoding (so a JSON fallback cannot hide a server that rejects protobuf).
func (s *suite) bodiesUsed() error {
	writes := s.rec.matching(func(q request) bool { return q.method == "POST" || q.method == "PUT" })
	if len(writes) == 0 {
		return fmt.Errorf("no create or update was recorded")
	}
	for _, q := range writes {
		if q.contentType != s.contentType {
			return fmt.Errorf("%s %s sent Content-Type %q", q.method, q.path, q.contentType)
		}
		if q.status == http.StatusUnsupportedMediaType {
			return fmt.Errorf("%s %s: 415 Unsupported Media Type for %s", q.method, q.path, q.contentType)
		}
	}
	return nil
}
