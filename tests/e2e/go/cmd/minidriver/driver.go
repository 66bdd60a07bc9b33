package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// driver implements kubeletplugin.DRAPlugin for a fixed set of devices. The helper
// serializes prepare and unprepare calls (its default), so it needs no lock.
type driver struct {
	name, node string
	devices    []string
	cdi        cdiWriter
}

func deviceNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("dev-%d", i)
	}
	return names
}

func (d *driver) resources() resourceslice.DriverResources {
	devices := make([]resourceapi.Device, len(d.devices))
	for i, name := range d.devices {
		index := int64(i)
		devices[i] = resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"index": {IntValue: &index},
		}}
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		d.node: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}

func (d *driver) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (
	map[types.UID]kubeletplugin.PrepareResult, error) {
	results := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		devices, err := d.prepare(claim)
		results[claim.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
		if err == nil {
			var names []string
			for _, dev := range devices {
				names = append(names, dev.DeviceName)
			}
			fmt.Printf("prepared %s %s/%s %s\n", claim.UID, claim.Namespace, claim.Name, strings.Join(names, ","))
		}
	}
	return results, nil
}

// prepare turns the claim's allocation results for this driver into one CDI device
// per allocated device. Preparing again (after a kubelet restart) gives the same answer.
func (d *driver) prepare(claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s/%s is not allocated", claim.Namespace, claim.Name)
	}
	var devices []kubeletplugin.Device
	env := map[string]string{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != d.name {
			continue
		}
		if r.Pool != d.node || !d.known(r.Device) {
			return nil, fmt.Errorf("allocated device %s/%s is not one of this driver's", r.Pool, r.Device)
		}
		env[envName(r.Device)] = r.Device
		devices = append(devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool,
			DeviceName: r.Device, CDIDeviceIDs: []string{d.cdi.deviceID(claim.UID)}})
	}
	if len(devices) == 0 {
		return nil, errors.New("no device of this driver in the allocation")
	}
	env["MINI_CLAIM"] = claim.Namespace + "/" + claim.Name
	if err := d.cdi.write(claim.UID, env); err != nil {
		return nil, err
	}
	return devices, nil
}

func (d *driver) known(device string) bool {
	for _, name := range d.devices {
		if name == device {
			return true
		}
	}
	return false
}

func envName(device string) string {
	return "MINI_DEVICE_" + strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(device, "dev-"), "-", "_"))
}

func (d *driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (
	map[types.UID]error, error) {
	results := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		err := d.cdi.remove(claim.UID)
		results[claim.UID] = err
		if err == nil {
			fmt.Printf("unprepared %s %s\n", claim.UID, claim.NamespacedName)
		}
	}
	return results, nil
}

func (d *driver) HandleError(_ context.Context, err error, msg string) {
	fmt.Fprintf(os.Stderr, "ERROR %s: %v (recoverable: %v)\n", msg, err, errors.Is(err, kubeletplugin.ErrRecoverable))
}

// WatchHealthStatus reports every device healthy, and again well within the kubelet's
// 30-second staleness window.
func (d *driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	ticker := time.NewTicker(10 * time.Second)
	defer ticker.Stop()
	for {
		report := kubeletplugin.DeviceHealthReport{}
		for _, name := range d.devices {
			report.Devices = append(report.Devices, kubeletplugin.DeviceHealth{PoolName: d.node,
				DeviceName: name, Health: kubeletplugin.HealthStatusHealthy, LastUpdated: time.Now()})
		}
		select {
		case <-ctx.Done():
			return nil
		case reports <- report:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}
