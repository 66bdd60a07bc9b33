package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// suite holds the run's clients, the names of the objects it owns (unique per run, so
// runs never see each other's objects) and the tally of checks.
type suite struct {
	ctx         context.Context
	cs          kubernetes.Interface
	rec         *recorder
	contentType string
	watchList   bool

	ns, nodeA, nodeB, driver, class string

	passed int
	failed []string
}

func newSuite(ctx context.Context, cs kubernetes.Interface, rec *recorder, contentType string,
	watchList bool) *suite {
	sfx := fmt.Sprintf("%06x", time.Now().UnixNano()&0xffffff)
	return &suite{ctx: ctx, cs: cs, rec: rec, contentType: contentType, watchList: watchList,
		ns: "conformance-" + sfx, nodeA: "conf-" + sfx + "-a", nodeB: "conf-" + sfx + "-b",
		driver: "conf-" + sfx + ".example.com", class: "conf-" + sfx}
}

// check runs one named check and records its verdict.
func (s *suite) check(name string, fn func() error) bool {
	start := time.Now()
	if err := fn(); err != nil {
		s.failed = append(s.failed, name)
		fmt.Printf("FAIL %s: %v\n", name, err)
		return false
	}
	s.passed++
	fmt.Printf("PASS %s (%s)\n", name, time.Since(start).Round(time.Millisecond))
	return true
}

func (s *suite) runAll() {
	if !s.check("setup: typed create of every kind", s.setup) {
		return
	}
	s.check("informers: initial sync and add/update/delete events", s.informers)
	s.check("informers: field-selected ResourceSlice informer", s.filteredSliceInformer)
	s.check("field selector: pods by spec.nodeName", s.podsByNodeName)
	s.check("field selector: slices by spec.nodeName and spec.driver", s.slicesBySelectors)
	s.check("list: limit and continue page through a collection", s.paginatedList)
	s.check("resourceslice: create round-trips every field", s.sliceRoundTrip)
	s.check("resourceslice: update and delete with preconditions", s.sliceUpdateDelete)
	s.check("update: typed update bumps resourceVersion", s.typedUpdate)
	s.check("update: stale resourceVersion is a 409 Conflict", s.staleUpdate)
	s.check("patch: merge patch", s.mergePatch)
	s.check("patch: strategic merge patch merges containers by name", s.strategicPatch)
	s.check("patch: JSON patch, and a failing test op is rejected", s.jsonPatch)
	s.check("apply: server-side apply with apply configurations", s.serverSideApply)
	s.check("apply: conflicting manager gets 409, force takes ownership", s.applyConflict)
	s.check("status: UpdateStatus on a claim writes status only", s.claimUpdateStatus)
	s.check("status: main-resource update ignores status", s.claimUpdateIgnoresStatus)
	s.check("encoding: write bodies used the configured content type", s.bodiesUsed)
}

// cleanup deletes everything the run created; it uses a fresh context so that it also
// runs after the deadline expired.
func (s *suite) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	_ = s.cs.CoreV1().Namespaces().Delete(ctx, s.ns, opts)
	for _, n := range []string{s.nodeA, s.nodeB} {
		_ = s.cs.CoreV1().Nodes().Delete(ctx, n, opts)
	}
	_ = s.cs.ResourceV1().DeviceClasses().Delete(ctx, s.class, opts)
	_ = s.cs.ResourceV1().DeviceTaintRules().Delete(ctx, s.class, opts)
	_ = s.cs.ResourceV1().ResourceSlices().DeleteCollection(ctx, opts,
		metav1.ListOptions{FieldSelector: "spec.driver=" + s.driver})
}

// pod is a pod in the run's namespace bound to node (no scheduler involved).
func (s *suite) pod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: map[string]string{"app": "conformance"}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{
				{Name: "main", Image: "registry.k8s.io/pause:3.10"},
				{Name: "side", Image: "registry.k8s.io/pause:3.10"},
			},
		},
	}
}
