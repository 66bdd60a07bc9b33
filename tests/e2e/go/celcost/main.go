// celcost evaluates CEL expressions with the real cel-go and Kubernetes CEL libraries and
// prints their estimated and actual costs, so that draemu's cost model can be compared
// with upstream's (tests/cel/test_cel_cost_upstream.py).
//
// One JSON case per input line, one JSON answer per output line:
//
//	{"kind": "dra", "expression": "...", "device": {"driver": "...", "attributes": {...}, "capacity": {...}}}
//	{"kind": "policy", "expression": "...", "variables": {"object": {...}}}
//	{"kind": "crd", "crd": {...apiextensions.k8s.io/v1 CRD...}, "object": {...}}
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"

	resourceapi "k8s.io/api/resource/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	crdcel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type input struct {
	Kind       string                                    `json:"kind"`
	Expression string                                    `json:"expression"`
	Device     *resourceapi.Device                       `json:"device"`
	Driver     string                                    `json:"driver"`
	Variables  map[string]any                            `json:"variables"`
	CRD        *apiextensionsv1.CustomResourceDefinition `json:"crd"`
	Object     map[string]any                            `json:"object"`
}

type output struct {
	MaxCost      *uint64  `json:"maxCost,omitempty"`
	CompileError string   `json:"compileError,omitempty"`
	ActualCost   *uint64  `json:"actualCost,omitempty"`
	Result       any      `json:"result,omitempty"`
	Error        string   `json:"error,omitempty"`
	Errors       []string `json:"errors,omitempty"`
	Remaining    *int64   `json:"remaining,omitempty"`
	Micros       int64    `json:"micros"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		var o output
		if err := decode(in.Bytes(), &c); err != nil {
			o.Error = "bad input: " + err.Error()
		} else {
			switch c.Kind {
			case "dra":
				o = runDRA(c)
			case "policy":
				o = runPolicy(c)
			case "crd":
				o = runCRD(c)
			default:
				o.Error = "unknown kind " + c.Kind
			}
		}
		if err := out.Encode(o); err != nil {
			panic(err)
		}
	}
}

// decode reads a case with integers as int64 (as the apiserver's unstructured objects
// hold them), not float64.
func decode(line []byte, c *input) error {
	if err := json.Unmarshal(line, c); err != nil {
		return err
	}
	var raw struct {
		Variables map[string]any `json:"variables"`
		Object    map[string]any `json:"object"`
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return err
	}
	if raw.Variables != nil {
		c.Variables = normalize(raw.Variables).(map[string]any)
	}
	if raw.Object != nil {
		c.Object = normalize(raw.Object).(map[string]any)
	}
	return nil
}

func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = normalize(x)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

func runDRA(c input) (o output) {
	compiler := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
	newExpr := environment.NewExpressions
	result := compiler.CompileCELExpression(c.Expression, dracel.Options{EnvType: &newExpr})
	if result.Error != nil {
		o.CompileError = result.Error.Detail
		return o
	}
	o.MaxCost = &result.MaxCost
	if c.Device == nil {
		return o
	}
	started := time.Now()
	matches, details, err := result.DeviceMatches(context.Background(), dracel.Device{
		Driver: c.Driver, AllowMultipleAllocations: c.Device.AllowMultipleAllocations,
		Attributes: c.Device.Attributes, Capacity: c.Device.Capacity})
	o.Micros = time.Since(started).Microseconds()
	if details != nil {
		o.ActualCost = details.ActualCost()
	}
	if err != nil {
		o.Error = err.Error()
	} else {
		o.Result = matches
	}
	return o
}

func runPolicy(c input) (o output) {
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	var opts []cel.EnvOption
	for name := range c.Variables {
		opts = append(opts, cel.Variable(name, cel.DynType))
	}
	extended, err := envSet.Extend(environment.VersionedOptions{
		IntroducedVersion: environment.DefaultCompatibilityVersion(), EnvOptions: opts})
	if err != nil {
		panic(err)
	}
	env, err := extended.Env(environment.NewExpressions)
	if err != nil {
		panic(err)
	}
	ast, issues := env.Compile(c.Expression)
	if issues != nil {
		o.CompileError = issues.String()
		return o
	}
	prog, err := env.Program(ast, cel.CostLimit(celconfig.PerCallLimit), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if err != nil {
		o.CompileError = err.Error()
		return o
	}
	started := time.Now()
	val, details, err := prog.ContextEval(context.Background(), c.Variables)
	o.Micros = time.Since(started).Microseconds()
	if details != nil {
		o.ActualCost = details.ActualCost()
	}
	if err != nil {
		o.Error = err.Error()
	} else {
		o.Result = native(val)
	}
	return o
}

func native(v ref.Val) any {
	if v == nil {
		return nil
	}
	return fmt.Sprint(v.Value())
}

func runCRD(c input) (o output) {
	var internal apiextensionsinternal.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(c.CRD, &internal, nil); err != nil {
		o.Error = err.Error()
		return o
	}
	for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), &internal) {
		o.Errors = append(o.Errors, e.Error())
	}
	if len(o.Errors) > 0 || c.Object == nil {
		return o
	}
	var props apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(c.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema, &props, nil); err != nil {
		o.Error = err.Error()
		return o
	}
	s, err := schema.NewStructural(&props)
	if err != nil {
		o.Error = err.Error()
		return o
	}
	validator := crdcel.NewValidator(s, true, celconfig.PerCallLimit)
	started := time.Now()
	errs, remaining := validator.Validate(context.Background(), nil, s, c.Object, nil, celconfig.RuntimeCELCostBudget)
	o.Micros = time.Since(started).Microseconds()
	for _, e := range errs {
		o.Errors = append(o.Errors, e.Error())
	}
	o.Remaining = &remaining
	return o
}
