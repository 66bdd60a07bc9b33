"""A suite's result from ginkgo's JSON report: the counts and the failures grouped by
their first error line.

ginkgo (v2) writes `--json-report` as a list of suite reports; each has `SpecReports`,
one per spec (and per suite-level node such as SynchronizedBeforeSuite), with `State`
(passed, skipped, pending, failed, panicked, timedout, interrupted, aborted), the texts of
the containers and the leaf, and for a failure `Failure.Message` and `Failure.Location`.
`PreRunStats.SpecsThatWillRun` is what the focus selected. Specs a crashed ginkgo process
held never get a report of their own: they are counted as "not run".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAILED_STATES = {"failed", "panicked", "timedout", "interrupted", "aborted"}

# What differs between two runs of the same failure: generated names, numbers, addresses.
_NORMALISE = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uid>"),
    (re.compile(r"\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b"), "<ip>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?( ?[+-]\d{4})?( [A-Z]{3,4})?(Z)?"),
     "<time>"),
    (re.compile(r"(?<=[a-z])-\d{3,5}\b"), "-NNNN"),  # test namespaces: dra-1234
    (re.compile(r"(?<=[a-z0-9])-[bcdfghjklmnpqrstvwxz2-9]{8,10}\b"), "-<hash>"),  # templates
    (re.compile(r"(?<=[a-z0-9])-[a-z0-9]{5}\b(?=[^-]|$)"), "-xxxxx"),  # generated names
    (re.compile(r"\b\d+(\.\d+)?(ns|µs|ms|s|m|h)\b"), "<duration>"),
    (re.compile(r"\b\d{2,}\b"), "N"),
]


def normalise(line: str) -> str:
    for pattern, repl in _NORMALISE:
        line = pattern.sub(repl, line)
    return line.strip()


_GO_VALUE = re.compile(r"^<[^>|]+\|\s*0x[0-9a-f]+>:\s*(.*)$")  # gomega's "<*T | 0xc00>: ..."


def first_line(message: str) -> str:
    """The line that says what went wrong: past ginkgo's "FATAL ERROR:", with the
    description after gomega's "Timed out after 60s." and the error after
    "Unexpected error:"."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if lines and lines[0] == "FATAL ERROR:":
        lines = lines[1:]
    if not lines:
        return "(no message)"
    head, rest = lines[0], lines[1:]
    if head.startswith(("Timed out after", "Told to stop trying after")) and rest:
        return f"{head} {rest[0]}"
    if head.rstrip(":") in ("Unexpected error", "Expected success, but got an error") and rest:
        match = _GO_VALUE.match(rest[0])
        detail = match.group(1) if match else rest[0]
        if match and not detail and len(rest) > 1:
            detail = rest[1]
        return f"{head} {detail}".strip()
    return head


def short_location(file_name: str, line: int) -> str:
    """`k8s.io/kubernetes@v1.37.2/test/e2e/dra/utils/deploy.go` -> `test/e2e/dra/...`."""
    for marker in ("/test/e2e/", "/test/utils/", "/staging/src/"):
        at = file_name.find(marker)
        if at >= 0:
            return f"{file_name[at + 1:]}:{line}"
    return f"{file_name.rsplit('/', 2)[-1] if file_name else '?'}:{line}"


@dataclass
class Spec:
    name: str
    state: str
    seconds: float
    location: str = ""
    message: str = ""


@dataclass
class FailureGroup:
    line: str  # the normalised first error line
    example: str  # one raw first line
    locations: list[str] = field(default_factory=list)  # where the specs failed
    specs: list[str] = field(default_factory=list)


@dataclass
class SuiteResult:
    name: str
    selected: int
    specs: list[Spec]
    seconds: float
    suite_failures: list[Spec] = field(default_factory=list)  # BeforeSuite and the like
    notes: list[str] = field(default_factory=list)
    regressions: list[Any] = field(default_factory=list)  # selection.Regression

    def count(self, *states: str) -> int:
        return sum(1 for s in self.specs if s.state in states)

    @property
    def passed(self) -> int:
        return self.count("passed")

    @property
    def failed(self) -> int:
        return self.count(*FAILED_STATES)

    @property
    def skipped(self) -> int:
        return self.count("skipped", "pending")

    @property
    def not_run(self) -> int:
        return max(0, self.selected - self.passed - self.failed - self.skipped)

    def groups(self) -> list[FailureGroup]:
        found: dict[str, FailureGroup] = {}
        for spec in [*self.suite_failures, *self.specs]:
            if spec.state not in FAILED_STATES:
                continue
            raw = first_line(spec.message)
            if spec.state != "failed":
                raw = f"[{spec.state}] {raw}"
            group = found.setdefault(normalise(raw), FailureGroup(normalise(raw), raw))
            group.specs.append(spec.name)
            if spec.location not in group.locations:
                group.locations.append(spec.location)
        return sorted(found.values(), key=lambda g: (-len(g.specs), g.line))


def _spec_name(report: dict[str, Any]) -> str:
    texts = [*(report.get("ContainerHierarchyTexts") or []), report.get("LeafNodeText") or ""]
    return " ".join(t for t in texts if t).strip() or report.get("LeafNodeType", "?")


def _spec(report: dict[str, Any]) -> Spec:
    failure = report.get("Failure") or {}
    location = failure.get("Location") or report.get("LeafNodeLocation") or {}
    return Spec(name=_spec_name(report), state=str(report.get("State", "?")),
                seconds=(report.get("RunTime") or 0) / 1e9,
                location=short_location(location.get("FileName", ""),
                                        location.get("LineNumber", 0)) if failure else "",
                message=failure.get("Message", "") or failure.get("ForwardedPanic", ""))


def parse(name: str, reports: Iterable[dict[str, Any]]) -> SuiteResult:
    specs: list[Spec] = []
    suite_failures: list[Spec] = []
    selected = 0
    seconds = 0.0
    for suite in reports:
        selected += (suite.get("PreRunStats") or {}).get("SpecsThatWillRun", 0)
        seconds += (suite.get("RunTime") or 0) / 1e9
        for report in suite.get("SpecReports") or []:
            spec = _spec(report)
            if report.get("LeafNodeType", "It") != "It":
                if spec.state in FAILED_STATES:
                    spec.name = f"[{report.get('LeafNodeType')}] {spec.name}".strip()
                    suite_failures.append(spec)
                continue
            if spec.state == "skipped" and not spec.message:
                continue  # filtered out by the focus: not selected
            specs.append(spec)
    return SuiteResult(name, selected, specs, seconds, suite_failures)


def load(name: str, path: Path) -> SuiteResult:
    return parse(name, json.loads(path.read_text()))


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def table(results: list[SuiteResult]) -> str:
    rows = ["| suite | selected | passed | failed | skipped | not run | time (m:ss) |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    rows += [f"| {r.name} | {r.selected} | {r.passed} | {r.failed} | {r.skipped} | "
             f"{r.not_run} | {_minutes(r.seconds)} |" for r in results]
    return "\n".join(rows)


def failures(result: SuiteResult, specs_per_group: int | None = None) -> str:
    lines = [f"Failures of {result.name}, grouped by first error line "
             f"({result.failed} specs, {len(result.groups())} groups):", ""]
    lines[1:1] = [f"({note})" for note in result.notes]
    for group in result.groups():
        where = ", ".join(f"`{loc}`" for loc in sorted(group.locations)[:4])
        more = len(group.locations) - 4
        where += f" and {more} more places" if more > 0 else ""
        lines.append(f"- {len(group.specs)} × {group.example} (at {where})")
        shown = group.specs if specs_per_group is None else group.specs[:specs_per_group]
        lines += [f"    - {name}" for name in shown]
        if len(shown) < len(group.specs):
            lines.append(f"    - ... and {len(group.specs) - len(shown)} more")
    return "\n".join(lines)


# ginkgo's console output, for a run whose aggregated report was lost (a parallel process
# died: ginkgo then writes an empty JSON report). A spec's block starts with its state
# line, `• [FAILED] [30.037 seconds]` (`• [12.3 seconds]` for a pass under -v), then its
# hierarchy (`[sig-x] Container [It] leaf [labels]`), its location, and for a failure
# `[FAILED] message` ... `In [It] at: file:line @ time`. Passes print `•` alone unless -v.
_STATE = re.compile(r"^(?:• |S )?\[(FAILED|PANICKED|TIMEDOUT|INTERRUPTED|ABORTED|SKIPPED)\]"
                    r" \[[\d.]+ seconds\]$|^• \[[\d.]+ seconds\]$")
_FAILURE = re.compile(r"^\s+\[(?:FAILED|PANICKED|TIMEDOUT|INTERRUPTED|ABORTED)\] (?!in \[)(.*)$")
_NODE = re.compile(r" \[(It|BeforeEach|AfterEach|JustBeforeEach|JustAfterEach|BeforeAll|AfterAll"
                   r"|DeferCleanup \(Each\)|DeferCleanup \(All\))\] ")
_WHERE = re.compile(r"^\s+In \[[^\]]+\] at: (\S+):(\d+)")
_DOTS = re.compile(r"^[•S]+$")


def _console_name(line: str) -> str:
    name = _NODE.sub(" ", line).strip()
    head, sep, last = name.rpartition(" [")
    return head if sep and ", " in last else name  # the trailing label list


def _console_spec(lines: list[str], at: int, state_line: str) -> Spec:
    state = "passed"
    found = re.search(r"\[(FAILED|PANICKED|TIMEDOUT|INTERRUPTED|ABORTED|SKIPPED)\]", state_line)
    if found:
        state = found.group(1).lower()
    name = _console_name(lines[at + 1]) if at + 1 < len(lines) else "?"
    spec = Spec(name=name, state=state, seconds=0.0)
    message: list[str] = []
    for line in lines[at + 2:]:
        if line.startswith("------------------------------"):
            break
        where = _WHERE.match(line)
        if message and where:
            spec.location = short_location(where.group(1), int(where.group(2)))
            break
        failure = _FAILURE.match(line)
        if failure and not message:
            message.append(failure.group(1))
        elif message:
            message.append(line.strip())
    spec.message = "\n".join(message)
    return spec


def parse_console(name: str, text: str, selected: int) -> SuiteResult:
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in text.splitlines()]
    specs: list[Spec] = []
    quiet_passes = 0
    for at, line in enumerate(lines):
        stripped = line.strip()
        if _DOTS.match(stripped):
            quiet_passes += stripped.count("•")
        elif _STATE.match(stripped) and at + 1 < len(lines) \
                and not lines[at + 1].startswith("[ReportAfterSuite]"):
            spec = _console_spec(lines, at, stripped)
            if spec.name.startswith("["):
                specs.append(spec)
    specs += [Spec(name="(a pass ginkgo printed as a dot)", state="passed", seconds=0.0)
              for _ in range(quiet_passes)]
    return SuiteResult(name, selected, specs, 0.0)
