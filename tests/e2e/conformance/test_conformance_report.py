"""The conformance harness's own logic, without e2e.test: counting a ginkgo JSON report,
grouping failures by their first error line, and the suites' feature gates."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

HERE = Path(__file__).resolve().parent


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"conformance_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


report = _load("report")
E2E = "k8s.io/kubernetes@v1.37.2/test/e2e"


def spec(text: str, state: str, message: str = "", file: str = "", line: int = 0,
         kind: str = "It") -> dict[str, Any]:
    entry: dict[str, Any] = {"ContainerHierarchyTexts": ["[sig-node] DRA", "kubelet"],
                             "LeafNodeText": text, "LeafNodeType": kind, "State": state,
                             "RunTime": 2_500_000_000}
    if message:
        entry["Failure"] = {"Message": message,
                            "Location": {"FileName": f"{E2E}/{file}", "LineNumber": line}}
    return entry


def suite(*specs: dict[str, Any], selected: int) -> list[dict[str, Any]]:
    return [{"SuiteDescription": "Kubernetes e2e suite", "RunTime": 600_000_000_000,
             "PreRunStats": {"TotalSpecs": 7000, "SpecsThatWillRun": selected},
             "SpecReports": list(specs)}]


def test_counts_leave_out_specs_the_focus_filtered_and_count_lost_ones_as_not_run():
    result = report.parse("dra", suite(
        spec("passes", "passed"),
        spec("skips at run time", "skipped", "Skipped: no GPU", "dra/dra.go", 10),
        spec("filtered out", "skipped"),
        spec("fails", "failed", "boom", "dra/dra.go", 20),
        spec("times out", "timedout", "A spec timeout occurred", "dra/dra.go", 30),
        spec("", "passed", kind="SynchronizedBeforeSuite"),
        selected=5))
    assert (result.selected, result.passed, result.failed, result.skipped, result.not_run) \
        == (5, 1, 2, 1, 1)
    assert result.seconds == 600
    assert "| dra | 5 | 1 | 2 | 1 | 1 | 10:00 |" in report.table([result])


def test_failures_group_by_first_line_without_generated_names():
    first = ("Timed out after 300.001s.\nhosts where the plugin has not been registered yet:"
             " [node-1]")
    result = report.parse("dra", suite(
        spec("a", "failed", first, "dra/utils/deploy.go", 832),
        spec("b", "failed", first.replace("300.001s", "301.5s"), "dra/utils/deploy.go", 832),
        spec("c", "failed", 'pods "pod-abc12" in namespace "dra-4711" not found',
             "framework/pod/wait.go", 99),
        spec("d", "failed", 'pods "pod-zz9xy" in namespace "dra-8122" not found',
             "framework/pod/wait.go", 99),
        spec("e", "panicked", "runtime error: nil pointer", "dra/dra.go", 5),
        selected=5))
    groups = result.groups()
    assert [(g.locations, len(g.specs)) for g in groups] == [
        (["test/e2e/dra/utils/deploy.go:832"], 2), (["test/e2e/framework/pod/wait.go:99"], 2),
        (["test/e2e/dra/dra.go:5"], 1)]
    assert groups[0].line == ("Timed out after <duration>. hosts where the plugin has not been"
                              " registered yet: [node-1]")
    assert groups[1].line == 'pods "pod-xxxxx" in namespace "dra-NNNN" not found'
    assert groups[2].example == "[panicked] runtime error: nil pointer"
    assert groups[0].specs == ["[sig-node] DRA kubelet a", "[sig-node] DRA kubelet b"]
    text = report.failures(result, specs_per_group=1)
    assert ("- 2 × Timed out after 300.001s. hosts where the plugin has not been registered yet:"
            " [node-1] (at `test/e2e/dra/utils/deploy.go:832`)") in text
    assert "    - ... and 1 more" in text


def test_a_failed_suite_node_is_a_failure_group_but_not_a_spec():
    result = report.parse("api", suite(
        spec("", "failed", "nodes not ready", "framework/node/wait.go", 7,
             kind="SynchronizedBeforeSuite"),
        selected=3))
    assert (result.failed, result.not_run) == (0, 3)
    assert result.groups()[0].specs == ["[SynchronizedBeforeSuite] [sig-node] DRA kubelet"]


@pytest.mark.parametrize("message, line", [
    ("FATAL ERROR:\nTimed out after 60.001s.\nhosts where the plugin has not been registered"
     " yet\nExpected", "Timed out after 60.001s. hosts where the plugin has not been "
     "registered yet"),
    ("Unexpected error:\n    <*errors.StatusError | 0xc0012a>: \n    the server could not "
     "find the requested resource\n    {", "Unexpected error: the server could not find the "
     "requested resource"),
    ("Unexpected error:\n    <*fmt.wrapError | 0xc00>: create policy: boom\n",
     "Unexpected error: create policy: boom"),
    ("\n\nexpected 3 pods, got 2\nmore", "expected 3 pods, got 2"),
])
def test_the_first_error_line_is_what_went_wrong(message, line):
    assert report.first_line(message) == line


@pytest.mark.parametrize("raw, normal", [
    ("uid 0b4c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3 gone", "uid <uid> gone"),
    ("dial tcp 10.96.0.12:443: connect: refused", "dial tcp <ip>: connect: refused"),
    ("at 2026-12-07 11:04:12.123 +0000 UTC late", "at <time> late"),
    ("expected 400 items, got 7", "expected N items, got 7"),
])
def test_normalise(raw, normal):
    assert report.normalise(raw) == normal


CONSOLE = """\
••
------------------------------
• [FAILED] [30.037 seconds]
[sig-api-machinery] CustomResourcePublishOpenAPI [Privileged:ClusterAdmin] [It] works for CRD \
with validation schema [Conformance] [sig-api-machinery, Conformance]
k8s.io/kubernetes@v1.37.2/test/e2e/apimachinery/crd_publish_openapi.go:74

  Timeline >>
  [FAILED] in [It] - k8s.io/kubernetes@v1.37.2/test/e2e/apimachinery/crd_publish_openapi.go:77
  << Timeline

  [FAILED] failed to create CRD: context deadline exceeded
  In [It] at: k8s.io/kubernetes@v1.37.2/test/e2e/apimachinery/crd_publish_openapi.go:77 @ 12/07
------------------------------
• [12.500 seconds]
[sig-api-machinery] Secrets [It] should patch a secret [Conformance] [sig-api-machinery, \
Conformance]
k8s.io/kubernetes@v1.37.2/test/e2e/common/node/secrets.go:10
------------------------------
[ReportAfterSuite] [FAILED] [0.000 seconds]
[ReportAfterSuite] Autogenerated ReportAfterSuite for --json-report --junit-report
"""


def test_a_run_whose_report_was_lost_is_counted_from_the_console():
    result = report.parse_console("api", CONSOLE, selected=5)
    assert (result.passed, result.failed, result.not_run) == (3, 1, 1)
    failed = [s for s in result.specs if s.state == "failed"][0]
    assert failed.name == ("[sig-api-machinery] CustomResourcePublishOpenAPI "
                           "[Privileged:ClusterAdmin] works for CRD with validation schema "
                           "[Conformance]")
    assert (failed.location, failed.message) == (
        "test/e2e/apimachinery/crd_publish_openapi.go:77",
        "failed to create CRD: context deadline exceeded")
