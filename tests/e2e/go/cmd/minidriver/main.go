// Command minidriver is the smallest complete DRA driver built on the upstream
// k8s.io/dynamic-resource-allocation/kubeletplugin helper: it registers with the
// kubelet through the plugin registry directory, publishes one node-local pool of
// devices through the helper's ResourceSlice controller, and prepares claims by writing
// one CDI spec per claim whose devices set MINI_DEVICE_<n>=<device> in the container.
//
// It prints one line per milestone on stdout ("registered", "prepared <uid> ...",
// "unprepared <uid>") and every background error from the helper as "ERROR ..." on
// stderr, so a test can follow it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

type options struct {
	kubeconfig, nodeName, driverName  string
	registrarDir, pluginsDir, cdiRoot string
	devices                           int
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig with the node's credentials")
	flag.StringVar(&o.nodeName, "node-name", "", "node to serve and publish devices for")
	flag.StringVar(&o.driverName, "driver-name", "mini.draemu.example.com", "DRA driver name")
	flag.StringVar(&o.registrarDir, "kubelet-registrar-directory-path", "/var/lib/kubelet/plugins_registry",
		"the kubelet's plugin registration directory")
	flag.StringVar(&o.pluginsDir, "kubelet-plugins-directory-path", "/var/lib/kubelet/plugins",
		"parent of the driver's data directory (<path>/<driver name>)")
	flag.StringVar(&o.cdiRoot, "cdi-root", "/var/run/cdi", "where CDI specs are written")
	flag.IntVar(&o.devices, "num-devices", 2, "devices to publish")
	flag.Parse()
	if o.nodeName == "" {
		fmt.Fprintln(os.Stderr, "--node-name is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	config, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	dataDir := o.pluginsDir + "/" + o.driverName
	for _, dir := range []string{dataDir, o.cdiRoot} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	d := &driver{name: o.driverName, node: o.nodeName, cdi: cdiWriter{root: o.cdiRoot, driver: o.driverName},
		devices: deviceNames(o.devices)}
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName(o.nodeName),
		kubeletplugin.DriverName(o.driverName),
		kubeletplugin.RegistrarDirectoryPath(o.registrarDir),
		kubeletplugin.PluginDataDirectoryPath(dataDir),
	)
	if err != nil {
		return fmt.Errorf("start kubelet plugin: %w", err)
	}
	defer helper.Stop()
	if err := helper.PublishResources(ctx, d.resources()); err != nil {
		return fmt.Errorf("publish resources: %w", err)
	}
	if err := waitRegistered(ctx, helper); err != nil {
		return err
	}
	fmt.Println("registered")
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}

// waitRegistered waits for the kubelet's NotifyRegistrationStatus call.
func waitRegistered(ctx context.Context, helper *kubeletplugin.Helper) error {
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		if status := helper.RegistrationStatus(); status != nil {
			if !status.PluginRegistered {
				return fmt.Errorf("the kubelet rejected the registration: %s", status.Error)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("stopped before the kubelet registered the plugin")
		case <-ticker.C:
		}
	}
}
