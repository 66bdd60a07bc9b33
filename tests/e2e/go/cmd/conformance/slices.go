package main

import (
	"fmt"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
)

// partitionedPool is a pool of two slices, one with shared counters and one with devices
// consuming them, plus taints and a consumable-capacity device: everything the
// ResourceSlice controller of the kubeletplugin helper compares after each write.
func (s *suite) partitionedPool() (*resourcev1.ResourceSlice, *resourcev1.ResourceSlice) {
	pool := resourcev1.ResourcePool{Name: "roundtrip", Generation: 3, ResourceSliceCount: 2}
	q := resource.MustParse
	counters := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: s.class + "-counters"},
		Spec: resourcev1.ResourceSliceSpec{Driver: s.driver, NodeName: ptr(s.nodeA), Pool: pool,
			SharedCounters: []resourcev1.CounterSet{{Name: "gpu-0-counters", Counters: map[string]resourcev1.Counter{
				"memory": {Value: q("80Gi")}, "slices": {Value: q("7")}}}}},
	}
	added := metav1.NewTime(time.Now().Truncate(time.Second))
	consume := func(mem, n string) []resourcev1.DeviceCounterConsumption {
		return []resourcev1.DeviceCounterConsumption{{CounterSet: "gpu-0-counters",
			Counters: map[string]resourcev1.Counter{"memory": {Value: q(mem)}, "slices": {Value: q(n)}}}}
	}
	devices := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: s.class + "-devices"},
		Spec: resourcev1.ResourceSliceSpec{Driver: s.driver, NodeName: ptr(s.nodeA), Pool: pool,
			Devices: []resourcev1.Device{
				{Name: "gpu-0-full", ConsumesCounters: consume("80Gi", "7"), AllowMultipleAllocations: ptr(false),
					Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
						"full": {BoolValue: ptr(true)}, "gpu.example.com/partition": {IntValue: ptr(int64(-1))}}},
				{Name: "gpu-0-partition-0", ConsumesCounters: consume("10Gi", "1"),
					Taints: []resourcev1.DeviceTaint{{Key: "example.com/degraded", Value: "ecc",
						Effect: resourcev1.DeviceTaintEffectNoSchedule, TimeAdded: &added}},
					Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
						"full": {BoolValue: ptr(false)}, "gpu.example.com/partition": {IntValue: ptr(int64(0))}}},
				{Name: "shared-0", AllowMultipleAllocations: ptr(true),
					Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
						"memory": {Value: q("40Gi"), RequestPolicy: &resourcev1.CapacityRequestPolicy{
							Default:    ptr(q("1Gi")),
							ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: ptr(q("1Gi")), Step: ptr(q("1Gi"))},
						}},
						"bandwidth": {Value: q("100G"), RequestPolicy: &resourcev1.CapacityRequestPolicy{
							Default: ptr(q("10G")), ValidValues: []resource.Quantity{q("10G"), q("25G"), q("50G")},
						}},
					}},
			}},
	}
	return counters, devices
}

// sameSpec reports what the helper would call dropped fields.
func sameSpec(sent, got *resourcev1.ResourceSlice) error {
	if !equality.Semantic.DeepEqual(sent.Spec, got.Spec) {
		return fmt.Errorf("%s: stored spec differs from the one sent (- sent, + stored):\n%s",
			sent.Name, diff.Diff(sent.Spec, got.Spec))
	}
	return nil
}

func (s *suite) sliceRoundTrip() error {
	client := s.cs.ResourceV1().ResourceSlices()
	counters, devices := s.partitionedPool()
	for _, sent := range []*resourcev1.ResourceSlice{counters, devices} {
		created, err := client.Create(s.ctx, sent, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s: %w", sent.Name, err)
		}
		if err := sameSpec(sent, created); err != nil {
			return fmt.Errorf("create response: %w", err)
		}
		read, err := client.Get(s.ctx, sent.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := sameSpec(sent, read); err != nil {
			return fmt.Errorf("read back: %w", err)
		}
	}
	return nil
}

func (s *suite) sliceUpdateDelete() error {
	client := s.cs.ResourceV1().ResourceSlices()
	current, err := client.Get(s.ctx, s.class+"-devices", metav1.GetOptions{})
	if err != nil {
		return err
	}
	current.Spec.Devices = append(current.Spec.Devices, resourcev1.Device{Name: "gpu-0-partition-1",
		ConsumesCounters: current.Spec.Devices[1].ConsumesCounters})
	updated, err := client.Update(s.ctx, current, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if err := sameSpec(current, updated); err != nil {
		return fmt.Errorf("update response: %w", err)
	}
	if updated.Generation <= current.Generation {
		return fmt.Errorf("spec update kept metadata.generation at %d", updated.Generation)
	}
	stale := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &updated.UID,
		ResourceVersion: &current.ResourceVersion}}
	if err := client.Delete(s.ctx, updated.Name, stale); !apierrors.IsConflict(err) {
		return fmt.Errorf("delete with a stale resourceVersion precondition: want 409 Conflict, got %v", err)
	}
	exact := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &updated.UID,
		ResourceVersion: &updated.ResourceVersion}}
	if err := client.Delete(s.ctx, updated.Name, exact); err != nil {
		return fmt.Errorf("delete with matching preconditions: %w", err)
	}
	if _, err := client.Get(s.ctx, updated.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("get after delete: want 404, got %v", err)
	}
	return nil
}
