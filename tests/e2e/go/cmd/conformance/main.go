// Command conformance drives a Kubernetes API server with client-go the way controllers
// and DRA drivers do, and exits non-zero on the first behaviour that differs from a real
// kube-apiserver: shared informers (watch-list on or off through client-go's
// WatchListClient gate, env KUBE_FEATURE_WatchListClient), typed writes of every patch
// type, server-side apply with apply configurations, ResourceSlice round trips, status
// updates, field selectors and optimistic concurrency.
//
// Each check prints "PASS <name>" or "FAIL <name>: <why>"; the last line is a summary.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	contentTypeProtobuf = "application/vnd.kubernetes.protobuf"
	contentTypeJSON     = "application/json"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	contentType := flag.String("content-type", contentTypeProtobuf,
		"request body encoding for built-in kinds: "+contentTypeProtobuf+
			" (as kube components configure client-go) or "+contentTypeJSON)
	timeout := flag.Duration("timeout", 90*time.Second, "deadline for the whole run")
	flag.Parse()
	if *contentType != contentTypeProtobuf && *contentType != contentTypeJSON {
		fmt.Fprintf(os.Stderr, "--content-type must be %s or %s\n", contentTypeProtobuf, contentTypeJSON)
		os.Exit(2)
	}
	os.Exit(run(*kubeconfig, *contentType, *timeout))
}

func run(kubeconfig, contentType string, timeout time.Duration) int {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeconfig: %v\n", err)
		return 2
	}
	config.ContentType = contentType
	// Checks wait on the server, not on client-side throttling.
	config.QPS, config.Burst = 200, 400
	if contentType == contentTypeProtobuf {
		// What kube-controller-manager, kube-scheduler and kubectl ask for: protobuf
		// preferred, JSON accepted (a server may answer in either).
		config.AcceptContentTypes = contentTypeProtobuf + "," + contentTypeJSON
	}
	rec := &recorder{}
	config.Wrap(rec.wrap)
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "client: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	watchList := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
	fmt.Printf("content-type=%s watch-list=%v\n", contentType, watchList)
	s := newSuite(ctx, cs, rec, contentType, watchList)
	defer s.cleanup()
	s.runAll()
	fmt.Printf("%d passed, %d failed\n", s.passed, len(s.failed))
	if len(s.failed) > 0 {
		fmt.Printf("failed: %s\n", strings.Join(s.failed, ", "))
		fmt.Fprintln(os.Stderr, "requests sent:")
		rec.dump(os.Stderr)
		return 1
	}
	return 0
}
