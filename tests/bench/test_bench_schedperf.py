"""bench/schedperf.py: Go text/template as upstream's scheduler_perf templates use it, and
upstream's DRA configurations read from k8s.io/kubernetes v1.37.2 in the Go module cache."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sp = _load("schedperf")


def text(tmp_path: Path, source: str, **env: Any) -> str:
    path = tmp_path / f"t{abs(hash(source))}.yaml"
    path.write_text(source)
    return sp.render_text(path, env)


@pytest.mark.parametrize(("source", "env", "want"), [
    ("name: x-{{.Index}}", {"Index": 7}, "name: x-7"),
    ("{{Mod .Index 3}}/{{DivideInt .Index 5}}", {"Index": 14}, "2/2"),
    ("{{$n := or .n 10}}{{$n}}", {}, "10"),
    ("{{$n := or .n 10}}{{$n}}", {"n": 4}, "4"),
    ("{{$r := (or .r 1) | Int}}{{range $r}}[{{.}}]{{end}}", {"r": "3"}, "[0][1][2]"),
    ("{{range $i := 3}}{{if ge $i (2 | Int)}}{{$i}}{{end}}{{end}}", {}, "2"),
    ("{{if eq .c \"a\"}}yes{{else}}no{{end}}", {"c": "a"}, "yes"),
    ("{{if eq .c \"a\"}}yes{{else}}no{{end}}", {"c": "b"}, "no"),
    ("{{$s := (or .s nil) | JSON}}s: {{$s}}", {"s": [{"cel": {"expression": "a && b"}}]},
     's: [{"cel":{"expression":"a && b"}}]'),
    ("{{$s := (or .s nil) | JSON}}{{$s}}", {}, "null"),
    ("{{.missing}}", {}, "<no value>"),
    ("{{range .l}}{{.}},{{end}}", {"l": ["a", "b"]}, "a,b,"),
    ("a {{- \" b \" -}} c", {}, "a b c"),
    ("{{range 0}}x{{else}}none{{end}}", {}, "none"),
])
def test_render(tmp_path: Path, source: str, env: dict[str, Any], want: str) -> None:
    assert text(tmp_path, source, **env) == want


@pytest.mark.parametrize(("source", "error"), [
    ("{{with .x}}{{end}}", "not supported"),
    ("{{if .x}}", "missing {{end}}"),
    ("{{end}}", "without if or range"),
    ("{{Nope 1}}", "cannot call"),
    ("{{$y}}", "undefined variable"),
    ("{{Int \"x\"}}", "cannot cast"),
])
def test_render_refuses_what_it_does_not_know(tmp_path: Path, source: str, error: str) -> None:
    with pytest.raises(sp.TemplateError, match=error):
        text(tmp_path, source)


def test_upstreams_dra_configs_are_read_and_every_template_renders():
    cases = sp.test_cases()
    assert {"SchedulingWithResourceClaimTemplate", "SchedulingWithResourceClaim",
            "Partitionable", "PartitionableBacktracking", "ConsumableCapacity",
            "FirstAvailable", "SchedulingWithResourceClaimTemplateListAttributes",
            "DeviceTaintToleration", "ExtendedResource", "SharedPodGroupResourceClaim",
            "SharedPodGroupResourceClaimTemplate", "CompatibilityGroups"} <= set(cases)
    case = cases["SchedulingWithResourceClaimTemplate"]
    ops = case.resolve(case.params("half_500nodes"))
    assert [op.opcode for op in ops][:3] == ["createNodes", "createNodes", "createAny"]
    measured = ops[-1]
    assert (measured.steady_state, measured.duration, measured.count) == (True, 10.0, 10)
    slices = ops[2]
    assert slices.params == {"numPCIRoots": 2, "numDevices": 10} and slices.count == 500
    obj = sp.render(slices.template, {**slices.params, "Index": 3})
    assert obj["spec"]["nodeName"] == "scheduler-perf-dra-3"
    assert [d["name"] for d in obj["spec"]["devices"]] == [f"basic-device-{i}" for i in range(10)]
    assert obj["spec"]["devices"][3]["attributes"]["resource.kubernetes.io/pciRoot"] == {
        "string": "pci0000:01"}
    for name, case in cases.items():
        # (upstream's unlabelled empty_100nodes and empty_200nodes lack measurePods)
        for workload in (w for w, spec in case.workloads.items() if spec.get("labels")):
            for op in case.resolve(case.params(workload)):
                if op.template is not None:
                    assert sp.render(op.template, {**op.params, "Index": 1, "Count": 2}), name
