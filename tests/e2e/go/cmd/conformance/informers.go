package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// eventLog collects "ADD key", "UPDATE key", "DELETE key" per informer.
type eventLog struct {
	mu     sync.Mutex
	events map[string][]string
}

func (l *eventLog) handler(kind string) cache.ResourceEventHandler {
	add := func(verb string, obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		l.mu.Lock()
		l.events[kind] = append(l.events[kind], verb+" "+key)
		l.mu.Unlock()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { add("ADD", obj) },
		UpdateFunc: func(_, obj any) { add("UPDATE", obj) },
		DeleteFunc: func(obj any) { add("DELETE", obj) },
	}
}

func (l *eventLog) has(kind, event string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events[kind] {
		if e == event {
			return true
		}
	}
	return false
}

// watched is one informer with the collection path its reflector requests and the
// keys that must be in its cache after the initial sync.
type watched struct {
	kind     string
	path     string
	informer cache.SharedIndexInformer
	keys     []string
}

func (s *suite) informers() error {
	ctx, cancel := context.WithCancel(s.ctx)
	mark := s.rec.mark()
	f := informers.NewSharedInformerFactory(s.cs, 0)
	// Shutdown waits for the informers, which stop only once their context is done.
	defer func() { cancel(); f.Shutdown() }()
	r := f.Resource().V1()
	const res = "/apis/resource.k8s.io/v1/"
	all := []watched{
		{"pods", "/api/v1/pods", f.Core().V1().Pods().Informer(), []string{s.ns + "/pod-a", s.ns + "/pod-b"}},
		{"nodes", "/api/v1/nodes", f.Core().V1().Nodes().Informer(), []string{s.nodeA, s.nodeB}},
		{"deviceclasses", res + "deviceclasses", r.DeviceClasses().Informer(), []string{s.class}},
		{"resourceclaims", res + "resourceclaims", r.ResourceClaims().Informer(), []string{s.ns + "/claim-1"}},
		{"resourceclaimtemplates", res + "resourceclaimtemplates", r.ResourceClaimTemplates().Informer(), []string{s.ns + "/tmpl"}},
		{"resourceslices", res + "resourceslices", r.ResourceSlices().Informer(), []string{s.nodeA + "-slice", s.nodeB + "-slice"}},
		{"devicetaintrules", res + "devicetaintrules", r.DeviceTaintRules().Informer(), []string{s.class}},
	}
	log := &eventLog{events: map[string][]string{}}
	for _, w := range all {
		if _, err := w.informer.AddEventHandler(log.handler(w.kind)); err != nil {
			return err
		}
	}
	f.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	for kind, ok := range f.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync within 30s", kind)
		}
	}
	for _, w := range all {
		for _, key := range w.keys {
			if _, exists, _ := w.informer.GetStore().GetByKey(key); !exists {
				return fmt.Errorf("%s: %s missing from the cache after sync", w.kind, key)
			}
		}
	}
	if err := s.liveEvents(log); err != nil {
		return err
	}
	// Only now: without watch-list, a reflector opens its WATCH after the LIST that
	// completed the sync; the live events prove every watch is open.
	for _, w := range all {
		if err := s.initialSyncRequests(w.path, s.rec.since(mark)); err != nil {
			return fmt.Errorf("%s: %w", w.kind, err)
		}
	}
	return nil
}

// initialSyncRequests checks how the reflector filled the cache: with watch-list, one
// WATCH with sendInitialEvents=true and no LIST; without it, a LIST then a WATCH.
func (s *suite) initialSyncRequests(path string, reqs []request) error {
	var lists, watchLists, watches int
	var seen []string
	for _, q := range reqs {
		if q.method != "GET" || q.path != path {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s?%s=%d", q.path, q.query.Encode(), q.status))
		switch {
		case q.query.Get("watch") != "true":
			lists++
		case q.query.Get("sendInitialEvents") == "true":
			if q.status == 200 {
				watchLists++
			}
		default:
			watches++
		}
	}
	if s.watchList && (watchLists == 0 || lists > 0) {
		return fmt.Errorf("watch-list enabled, want a successful sendInitialEvents watch and no LIST; requests: %s",
			strings.Join(seen, " "))
	}
	if !s.watchList && (lists == 0 || watchLists > 0 || watches == 0) {
		return fmt.Errorf("watch-list disabled, want LIST then WATCH; requests: %s", strings.Join(seen, " "))
	}
	return nil
}

// liveEvents makes changes after the sync and waits for each informer to report them.
func (s *suite) liveEvents(log *eventLog) error {
	ctx, c := s.ctx, s.cs
	label := []byte(`{"metadata":{"labels":{"conformance.example.com/touched":"yes"}}}`)
	zero := int64(0)
	now := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	want := []string{}
	expect := func(kind, event string, err error) error {
		want = append(want, kind+": "+event)
		return err
	}
	steps := []func() error{
		func() error {
			_, err := c.ResourceV1().ResourceClaims(s.ns).Create(ctx, s.claim("claim-live"), metav1.CreateOptions{})
			return expect("resourceclaims", "ADD "+s.ns+"/claim-live", err)
		},
		func() error {
			_, err := c.ResourceV1().ResourceClaims(s.ns).Patch(ctx, "claim-live", types.MergePatchType, label, metav1.PatchOptions{})
			return expect("resourceclaims", "UPDATE "+s.ns+"/claim-live", err)
		},
		func() error {
			err := c.ResourceV1().ResourceClaims(s.ns).Delete(ctx, "claim-live", metav1.DeleteOptions{})
			return expect("resourceclaims", "DELETE "+s.ns+"/claim-live", err)
		},
		func() error {
			_, err := c.CoreV1().Pods(s.ns).Create(ctx, s.pod("pod-live", s.nodeA), metav1.CreateOptions{})
			return expect("pods", "ADD "+s.ns+"/pod-live", err)
		},
		func() error {
			err := c.CoreV1().Pods(s.ns).Delete(ctx, "pod-live", now)
			return expect("pods", "DELETE "+s.ns+"/pod-live", err)
		},
		func() error {
			_, err := c.CoreV1().Nodes().Patch(ctx, s.nodeA, types.StrategicMergePatchType, label, metav1.PatchOptions{})
			return expect("nodes", "UPDATE "+s.nodeA, err)
		},
		func() error {
			_, err := c.ResourceV1().DeviceClasses().Patch(ctx, s.class, types.MergePatchType, label, metav1.PatchOptions{})
			return expect("deviceclasses", "UPDATE "+s.class, err)
		},
		func() error {
			t := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl-live", Namespace: s.ns},
				Spec: resourcev1.ResourceClaimTemplateSpec{Spec: s.claimSpec()}}
			_, err := c.ResourceV1().ResourceClaimTemplates(s.ns).Create(ctx, t, metav1.CreateOptions{})
			return expect("resourceclaimtemplates", "ADD "+s.ns+"/tmpl-live", err)
		},
		func() error {
			_, err := c.ResourceV1().ResourceSlices().Create(ctx, s.slice(s.class+"-live", s.nodeA), metav1.CreateOptions{})
			return expect("resourceslices", "ADD "+s.class+"-live", err)
		},
		func() error {
			err := c.ResourceV1().ResourceSlices().Delete(ctx, s.class+"-live", metav1.DeleteOptions{})
			return expect("resourceslices", "DELETE "+s.class+"-live", err)
		},
		func() error {
			_, err := c.ResourceV1().DeviceTaintRules().Patch(ctx, s.class, types.MergePatchType, label, metav1.PatchOptions{})
			return expect("devicetaintrules", "UPDATE "+s.class, err)
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("%s: %w", want[len(want)-1], err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var missing []string
		for _, w := range want {
			kind, event, _ := strings.Cut(w, ": ")
			if !log.has(kind, event) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			return fmt.Errorf("events not delivered within 30s: %s", strings.Join(missing, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
