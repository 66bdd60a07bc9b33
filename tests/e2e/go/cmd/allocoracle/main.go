// allocoracle runs upstream's structured DRA allocator (k8s.io/dynamic-resource-allocation
// v0.37.2, package structured) on objects given as JSON, as kube-scheduler's
// DynamicResources plugin does: the allocator features come from the feature gates as
// the plugin's AllocatorFeatures maps them, NewAllocator picks the tier (stable,
// incubating or experimental) those features need, and the devices in use are gathered
// from the allocated claims as the plugin's claim tracker gathers them. draemu's
// allocator is compared with it by tests/e2e/allocator/.
//
// One JSON case per input line, one JSON answer per output line, so that one process
// answers a whole test session:
//
//	{"id": "...", "gates": {"DRAConsumableCapacity": true, ...},
//	 "classes": [DeviceClass...], "slices": [ResourceSlice...],
//	 "allocated": [ResourceClaim with status.allocation...],
//	 "claims": [ResourceClaim to allocate...], "node": Node,
//	 "runs": 3, "timeoutMillis": 5000}
//
// The answer: the tier, the status ("Allocated", "Unsatisfiable" for no solution,
// "NodeError" for an error wrapping structured.ErrFailedAllocationOnNode (the node is
// unsuitable), "Error" for any other (fatal for the scheduling attempt), "Timeout"),
// the error text, the results (one AllocationResult per claim) and, when the case ran
// more than once and the runs disagreed (upstream's stable tier visits pools in Go map
// order), the distinct outcomes seen.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

type input struct {
	ID            string                       `json:"id"`
	Gates         map[string]bool              `json:"gates"`
	Classes       []*resourceapi.DeviceClass   `json:"classes"`
	Slices        []*resourceapi.ResourceSlice `json:"slices"`
	Allocated     []*resourceapi.ResourceClaim `json:"allocated"`
	Claims        []*resourceapi.ResourceClaim `json:"claims"`
	Node          *v1.Node                     `json:"node"`
	Runs          int                          `json:"runs"`
	TimeoutMillis int                          `json:"timeoutMillis"`
}

type output struct {
	ID       string                          `json:"id"`
	Tier     string                          `json:"tier,omitempty"`
	Status   string                          `json:"status"`
	Error    string                          `json:"error,omitempty"`
	Results  []resourceapi.AllocationResult `json:"results,omitempty"`
	Variants []string                        `json:"variants,omitempty"`
	Micros   int64                           `json:"micros"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		var c input
		var o output
		if err := decode(in.Bytes(), &c); err != nil {
			o = output{Status: "BadInput", Error: err.Error()}
		} else {
			o = run(c)
		}
		o.ID = c.ID
		if err := enc.Encode(o); err != nil {
			panic(err)
		}
		// One answer per line, at once: the caller waits for it before the next case.
		if err := out.Flush(); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func decode(line []byte, c *input) error {
	d := json.NewDecoder(bytes.NewReader(line))
	// A field the v1 Go types do not know is the generator's mistake: refuse it rather
	// than let upstream decide on less than draemu was given.
	d.DisallowUnknownFields()
	return d.Decode(c)
}

// features maps feature gates to allocator features as kube-scheduler's
// dynamicresources.AllocatorFeatures does (v1.37.2).
func features(g map[string]bool) structured.Features {
	return structured.Features{
		AdminAccess:             g["DRAAdminAccess"],
		PrioritizedList:         g["DRAPrioritizedList"],
		PartitionableDevices:    g["DRAPartitionableDevices"],
		DeviceTaints:            g["DRADeviceTaints"],
		DeviceBindingAndStatus:  g["DRADeviceBindingConditions"] && g["DRAResourceClaimDeviceStatus"],
		ConsumableCapacity:      g["DRAConsumableCapacity"],
		FractionalCapacityRange: g["DRAFractionalCapacityRange"],
		ListTypeAttributes:      g["DRAListTypeAttributes"],
		OptionalNodeOperations:  g["DRAOptionalNodeOperations"],
		DerivedAttributes:       g["DRADerivedAttributes"],
		CompatibilityGroups:     g["DRADeviceCompatibilityGroups"],
	}
}

// allocatedState is what the scheduler's claim tracker gathers from allocated claims
// (allocateddevices.go, dra_manager.go GatherAllocatedState / ListAllAllocatedDevices).
func allocatedState(claims []*resourceapi.ResourceClaim, consumable bool) structured.AllocatedState {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, result := range claim.Status.Allocation.Devices.Results {
			if result.AdminAccess != nil && *result.AdminAccess {
				continue // admin access never makes a device busy
			}
			id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
			if consumable && result.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
				if result.ConsumedCapacity != nil {
					state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
				}
				continue
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	return state
}

type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, name := range names {
		out = append(out, l[name])
	}
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	// As the scheduler's informer lister (client-go's generated one) answers.
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclass"), name)
}

func run(c input) output {
	if c.Node == nil {
		return output{Status: "BadInput", Error: "no node"}
	}
	f := features(c.Gates)
	classes := classLister{}
	for _, class := range c.Classes {
		classes[class.Name] = class
	}
	runs := max(c.Runs, 1)
	timeout := time.Duration(max(c.TimeoutMillis, 1)) * time.Millisecond
	if c.TimeoutMillis == 0 {
		timeout = 10 * time.Second
	}
	var first output
	seen := map[string]bool{}
	var variants []string
	start := time.Now()
	for i := 0; i < runs; i++ {
		o := once(c, f, classes, timeout)
		sig := signature(o)
		if i == 0 {
			first = o
		}
		if !seen[sig] {
			seen[sig] = true
			variants = append(variants, sig)
		}
		if o.Status == "Timeout" {
			break
		}
	}
	if len(variants) > 1 {
		first.Variants = variants
	}
	first.Micros = time.Since(start).Microseconds() / int64(runs)
	return first
}

func once(c input, f structured.Features, classes classLister, timeout time.Duration) output {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A fresh CEL cache per run, as a fresh scheduler has (the cache holds compiled
	// expressions only, so this changes nothing but the time taken).
	celCache := cel.NewCache(10, cel.Features{
		EnableConsumableCapacity: f.ConsumableCapacity,
		EnableListTypeAttributes: f.ListTypeAttributes,
	})
	state := allocatedState(c.Allocated, c.Gates["DRAConsumableCapacity"])
	alloc, err := structured.NewAllocator(ctx, f, state, classes, c.Slices, celCache)
	if err != nil {
		return output{Status: "Error", Error: "new allocator: " + err.Error()}
	}
	tier := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", alloc), "*"), ".Allocator")
	results, err := alloc.Allocate(ctx, c.Node, c.Claims)
	o := output{Tier: tier}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		o.Status = "Timeout"
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		o.Status, o.Error = "NodeError", err.Error()
	case err != nil:
		o.Status, o.Error = "Error", err.Error()
	case results == nil:
		o.Status = "Unsatisfiable"
	default:
		o.Status, o.Results = "Allocated", results
	}
	return o
}

// signature: what must be the same for two runs to be the same outcome (share IDs are
// random, so only their presence counts).
func signature(o output) string {
	var b strings.Builder
	b.WriteString(o.Status)
	b.WriteString(" " + o.Error)
	for i, r := range o.Results {
		fmt.Fprintf(&b, " | claim %d:", i)
		for _, d := range r.Devices.Results {
			fmt.Fprintf(&b, " %s=%s/%s/%s", d.Request, d.Driver, d.Pool, d.Device)
			if d.ShareID != nil {
				b.WriteString("(share)")
			}
		}
	}
	return b.String()
}
