package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

func sameNames(got []string, want ...string) error {
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("got %v, want %v", got, want)
	}
	return nil
}

func (s *suite) podsByNodeName() error {
	list, err := s.cs.CoreV1().Pods(s.ns).List(s.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + s.nodeB})
	if err != nil {
		return err
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	if err := sameNames(names, "pod-b"); err != nil {
		return fmt.Errorf("spec.nodeName=%s: %w", s.nodeB, err)
	}
	// The selector kubelets use across namespaces.
	list, err = s.cs.CoreV1().Pods("").List(s.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + s.nodeA})
	if err != nil {
		return err
	}
	names = nil
	for _, p := range list.Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return sameNames(names, s.ns+"/pod-a")
}

func (s *suite) sliceNames(selector string) ([]string, error) {
	list, err := s.cs.ResourceV1().ResourceSlices().List(s.ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", selector, err)
	}
	var names []string
	for _, sl := range list.Items {
		names = append(names, sl.Name)
	}
	return names, nil
}

func (s *suite) slicesBySelectors() error {
	cases := map[string][]string{
		"spec.driver=" + s.driver:                                {s.nodeA + "-slice", s.nodeB + "-slice"},
		"spec.nodeName=" + s.nodeA:                               {s.nodeA + "-slice"},
		"spec.driver=" + s.driver + ",spec.nodeName=" + s.nodeB:  {s.nodeB + "-slice"},
		"spec.driver=other.example.com,spec.nodeName=" + s.nodeB: nil,
	}
	for selector, want := range cases {
		got, err := s.sliceNames(selector)
		if err != nil {
			return err
		}
		if err := sameNames(got, want...); err != nil {
			return fmt.Errorf("%s: %w", selector, err)
		}
	}
	return nil
}

// filteredSliceInformer is how the kubeletplugin helper watches its own slices: an
// informer whose list and watch carry spec.driver and spec.nodeName selectors.
func (s *suite) filteredSliceInformer() error {
	ctx, cancel := context.WithCancel(s.ctx)
	selector := "spec.driver=" + s.driver + ",spec.nodeName=" + s.nodeA
	f := informers.NewSharedInformerFactoryWithOptions(s.cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = selector }))
	// Shutdown waits for the informers, which stop only once their context is done.
	defer func() { cancel(); f.Shutdown() }()
	inf := f.Resource().V1().ResourceSlices().Informer()
	log := &eventLog{events: map[string][]string{}}
	if _, err := inf.AddEventHandler(log.handler("slices")); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("did not sync")
	}
	if err := sameNames(inf.GetStore().ListKeys(), s.nodeA+"-slice"); err != nil {
		return fmt.Errorf("cache after sync: %w", err)
	}
	other := s.slice(s.class+"-other-node", s.nodeB)
	mine := s.slice(s.class+"-mine", s.nodeA)
	// Gone again before the next check counts this driver's slices.
	defer func() {
		for _, name := range []string{other.Name, mine.Name} {
			_ = s.cs.ResourceV1().ResourceSlices().Delete(s.ctx, name, metav1.DeleteOptions{})
		}
	}()
	other.Spec.Pool.Name = "other"
	if _, err := s.cs.ResourceV1().ResourceSlices().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		return err
	}
	mine.Spec.Pool.Name = "mine"
	if _, err := s.cs.ResourceV1().ResourceSlices().Create(ctx, mine, metav1.CreateOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for !log.has("slices", "ADD "+mine.Name) {
		if time.Now().After(deadline) {
			return fmt.Errorf("no ADD for %s within 30s", mine.Name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Both creates went through the same watch, in order: once the later one arrived, the
	// earlier one would have too if the filter let it through.
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, e := range log.events["slices"] {
		if strings.HasSuffix(e, " "+other.Name) {
			return fmt.Errorf("slice on %s delivered to the informer for %s: %s", s.nodeB, s.nodeA, e)
		}
	}
	return nil
}

// paginatedList reads the run's claims two at a time, as client-go's pager does: every
// page but the last carries a continue token, and the pages together are the full list
// at one resourceVersion.
func (s *suite) paginatedList() error {
	client := s.cs.ResourceV1().ResourceClaims(s.ns)
	for i := range 3 {
		if _, err := client.Create(s.ctx, s.claim(fmt.Sprintf("page-%d", i)), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	full, err := client.List(s.ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var want []string
	for _, c := range full.Items {
		want = append(want, c.Name)
	}
	var got []string
	opts := metav1.ListOptions{Limit: 2}
	for pages := 1; ; pages++ {
		page, err := client.List(s.ctx, opts)
		if err != nil {
			return fmt.Errorf("page %d: %w", pages, err)
		}
		if len(page.Items) > 2 {
			return fmt.Errorf("page %d has %d items, limit was 2", pages, len(page.Items))
		}
		for _, c := range page.Items {
			got = append(got, c.Name)
		}
		if page.Continue == "" {
			break
		}
		if pages > len(want) {
			return fmt.Errorf("more pages than items: the continue token does not advance")
		}
		opts.Continue = page.Continue
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("pages gave %v, one list gave %v", got, want)
	}
	return nil
}
