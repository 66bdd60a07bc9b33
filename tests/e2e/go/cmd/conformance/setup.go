package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

// setup creates one object of every kind the informers watch, before they start, so the
// initial sync (LIST or watch-list) has something to deliver.
func (s *suite) setup() error {
	ctx, c := s.ctx, s.cs
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: s.ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	for _, n := range []string{s.nodeA, s.nodeB} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n,
			Labels: map[string]string{"conformance.example.com/node": n}}}
		if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("node %s: %w", n, err)
		}
	}
	if _, err := c.ResourceV1().DeviceClasses().Create(ctx, s.deviceClass(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("deviceclass: %w", err)
	}
	for _, n := range []string{s.nodeA, s.nodeB} {
		if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s.slice(n+"-slice", n), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("resourceslice for %s: %w", n, err)
		}
	}
	if _, err := c.ResourceV1().DeviceTaintRules().Create(ctx, s.taintRule(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("devicetaintrule: %w", err)
	}
	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "tmpl", Namespace: s.ns},
		Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: s.claimSpec()},
	}
	if _, err := c.ResourceV1().ResourceClaimTemplates(s.ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("resourceclaimtemplate: %w", err)
	}
	if _, err := c.ResourceV1().ResourceClaims(s.ns).Create(ctx, s.claim("claim-1"), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("resourceclaim: %w", err)
	}
	for name, node := range map[string]string{"pod-a": s.nodeA, "pod-b": s.nodeB} {
		if _, err := c.CoreV1().Pods(s.ns).Create(ctx, s.pod(name, node), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pod %s: %w", name, err)
		}
	}
	return nil
}

func (s *suite) deviceClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: s.class},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", s.driver)},
		}}},
	}
}

func (s *suite) taintRule() *resourcev1.DeviceTaintRule {
	return &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: s.class},
		Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr(s.driver), Pool: ptr(s.nodeB)},
			Taint: resourcev1.DeviceTaint{Key: "conformance.example.com/maintenance",
				Value: "planned", Effect: resourcev1.DeviceTaintEffectNoSchedule},
		},
	}
}

func (s *suite) claimSpec() resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{
			Name:    "dev",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: s.class},
		}},
	}}
}

func (s *suite) claim(name string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec:       s.claimSpec(),
	}
}

// slice is a node-local pool of two devices with typed attributes, capacities and an
// explicit allowMultipleAllocations=false: the fields a driver's helper compares after
// every write.
func (s *suite) slice(name, node string) *resourcev1.ResourceSlice {
	devices := make([]resourcev1.Device, 2)
	for i := range devices {
		devices[i] = resourcev1.Device{
			Name: fmt.Sprintf("dev-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"index":         {IntValue: ptr(int64(i))},
				"model":         {StringValue: ptr("LATEST-GPU-MODEL")},
				"healthy":       {BoolValue: ptr(true)},
				"driverVersion": {VersionValue: ptr("1.0.0")},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				"memory":  {Value: resource.MustParse("80Gi")},
				"compute": {Value: resource.MustParse("100")},
			},
			AllowMultipleAllocations: ptr(false),
		}
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   s.driver,
			NodeName: ptr(node),
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}
}
