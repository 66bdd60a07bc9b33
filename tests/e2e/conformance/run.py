#!/usr/bin/env python3
"""Kubernetes' own end-to-end tests (the upstream e2e.test, unmodified) against draemu.

For each chosen suite: a fresh `draemu up --runtime process` (its own data dir and port,
the e2e images mapped by images.py), then ginkgo runs e2e.test on it with the suite's
focus (`--provider=skeleton --kubeconfig=...`), then a table: selected, passed, failed,
skipped, not run (held by a ginkgo process that died), and the failures grouped by their
first error line. Reports per suite under --out: ginkgo's report.json and junit.xml,
e2e.test's own junit files, ginkgo.log, draemu.log, summary.md.

    tests/e2e/conformance/run.py [--suite dra,api-machinery] [--procs 4] [--out DIR]
    tests/e2e/conformance/run.py --selection tests/e2e/conformance/ci-selection.txt

`--selection FILE` runs CI's fixed selection (selection.py): exactly the specs the file
lists, and fails when one of them does not pass.

The binaries come from `tests/e2e/realk8s/build.sh conformance` (`make conformance` runs
both). See tests/e2e/conformance/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import images  # noqa: E402
import report  # noqa: E402
import selection  # noqa: E402

from draemu import features  # noqa: E402

READY_LINE = "draemu is ready"


@dataclass(frozen=True)
class Suite:
    name: str
    focus: str
    skip: str = ""
    dra_gates: bool = False  # every DRA feature gate on, as upstream's DRA jobs run
    timeout: str = "3h"  # ginkgo's --timeout for the whole suite
    expect: tuple[str, ...] = ()  # specs that must pass (a --selection suite)


SUITES = {
    "dra": Suite("dra", r"\[DRA\]|DynamicResourceAllocation", dra_gates=True),
    "api-machinery": Suite("api-machinery", r"\[sig-api-machinery\].*\[Conformance\]"),
    "conformance": Suite("conformance", r"\[Conformance\]", timeout="12h"),
}


def bin_dir() -> Path:
    cache = Path(os.environ.get("DRAEMU_REALK8S_CACHE")
                 or Path.home() / ".cache" / "draemu" / "realk8s")
    return Path(os.environ.get("DRAEMU_REALK8S_BIN") or cache / "bin")


def k8s_module(version: str) -> Path:
    go_cache = Path(os.environ.get("DRAEMU_GO_CACHE") or Path.home() / ".cache/draemu/go")
    return go_cache / "mod" / "k8s.io" / f"kubernetes@{version}"


def dra_gates(version: str) -> str:
    """Every DRA gate the emulated release knows and lets change, on, with the gates they
    depend on (a gate draemu still refuses is left out, not forced)."""
    known = features.known(version)
    chosen = [name for name, gate in known.items()
              if ("DRA" in name or "DynamicResourceAllocation" in name) and not gate.locked
              and gate.stage != features.PREALPHA]
    for _ in range(len(known)):
        try:
            features.FeatureGates.parse(",".join(f"{n}=true" for n in chosen), version)
            break
        except features.FeatureGateError as err:
            text = str(err)
            _, _, needed = text.partition("depends on features that are disabled: [")
            deps = [d.strip() for d in needed.rstrip("]").split(",") if d.strip() in known]
            if deps and not any(d in chosen for d in deps):
                chosen += deps
            else:
                chosen.remove(next((n for n in chosen if n in text), chosen[-1]))
    return ",".join(f"{n}=true" for n in chosen)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Draemu:
    """`draemu up` for one suite, in a folder of its own."""

    def __init__(self, folder: Path, image_map: Path, nodes: int, gates: str,
                 emulated: str) -> None:
        self.folder = folder
        self.kubeconfig = folder / "kubeconfig"
        args = [sys.executable, "-m", "draemu", "up", "--data-dir", str(folder / "data"),
                "--reset", "--port", str(free_port()), "--kubeconfig", str(self.kubeconfig),
                "--preset", "empty", "--nodes", str(nodes), "--runtime", "process",
                "--image-map-file", str(image_map), "--no-ui", "--log-format", "json",
                "--emulated-version", emulated]
        if gates:
            args += ["--feature-gates", gates]
        self.stdout = open(folder / "draemu.out", "w")  # closed in stop()
        self.stderr = open(folder / "draemu.log", "w")
        self.proc = subprocess.Popen(args, stdout=self.stdout, stderr=self.stderr,
                                     stdin=subprocess.DEVNULL, cwd=REPO)

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while READY_LINE not in (self.folder / "draemu.out").read_text():
            if self.proc.poll() is not None:
                raise RuntimeError("draemu up exited before it was ready:\n"
                                   + (self.folder / "draemu.log").read_text()[-3000:])
            if time.monotonic() > deadline:
                raise TimeoutError(f"draemu up not ready in {timeout:.0f} s")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stdout.close()
        self.stderr.close()


def ginkgo_argv(bins: Path, suite: Suite, out: Path, kubeconfig: Path,
                procs: int, extra: list[str], timeout: str = "") -> list[str]:
    argv = [str(bins / "ginkgo"), f"--procs={procs}", f"--focus={suite.focus}",
            f"--timeout={timeout or suite.timeout}", "--no-color", "--output-dir", str(out),
            "--json-report=report.json", "--junit-report=junit.xml",
            "--silence-skips", "--poll-progress-after=10m", "-v"]
    if suite.skip:
        argv.append(f"--skip={suite.skip}")
    argv += [str(bins / "e2e.test"), "--", "--provider=skeleton",
             f"--kubeconfig={kubeconfig}", f"--report-dir={out / 'e2e'}",
             "--e2e-output-dir", str(out / "e2e"), *extra]
    kubectl = os.environ.get("DRAEMU_KUBECTL") or shutil.which("kubectl")
    if kubectl:
        argv.append(f"--kubectl-path={kubectl}")
    return argv


def selected(bins: Path, suite: Suite, out: Path) -> report.SuiteResult:
    """The specs the focus selects (ginkgo --dry-run: nothing runs; each is "passed")."""
    argv = [str(bins / "ginkgo"), "--dry-run", f"--focus={suite.focus}", "--silence-skips",
            "--output-dir", str(out), "--json-report=selected.json"]
    if suite.skip:
        argv.append(f"--skip={suite.skip}")
    subprocess.run([*argv, str(bins / "e2e.test"), "--", "--provider=skeleton"],
                   capture_output=True, check=False, timeout=300)
    return report.load(suite.name, out / "selected.json")


def outcome(suite: Suite, out: Path, count: int) -> report.SuiteResult:
    """The suite's result from ginkgo's JSON report, or from its console output when a
    ginkgo process died and the report came out empty."""
    result = report.load(suite.name, out / "report.json")
    if result.specs or result.suite_failures:
        return result
    result = report.parse_console(suite.name, (out / "ginkgo.log").read_text(errors="replace"),
                                  count)
    result.notes.append("ginkgo's JSON report is empty (a parallel process died): counted "
                        "from its console output; see ginkgo.log")
    return result


def run_suite(bins: Path, suite: Suite, out: Path, image_map: Path, args: argparse.Namespace
              ) -> report.SuiteResult:
    if out.exists():
        shutil.rmtree(out)
    (out / "e2e").mkdir(parents=True)
    dry = selected(bins, suite, out)
    count = dry.selected
    gates = ",".join(g for g in (dra_gates(args.emulated) if suite.dra_gates else "",
                                 args.feature_gates) if g)
    cluster = Draemu(out, image_map, args.nodes, gates, args.emulated)
    started = time.monotonic()
    try:
        cluster.wait_ready()
        argv = ginkgo_argv(bins, suite, out, cluster.kubeconfig, args.procs, args.e2e_arg,
                           args.timeout)
        (out / "command.txt").write_text(" ".join(argv) + f"\n# feature gates: {gates}\n")
        what = f"{len(suite.expect)} listed specs" if suite.expect else suite.focus
        print(f"== {suite.name}: {what} ({args.procs} ginkgo processes; "
              f"log {out / 'ginkgo.log'})", flush=True)
        with open(out / "ginkgo.log", "w") as log:
            code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, check=False).returncode
    finally:
        cluster.stop()
    if not (out / "report.json").exists():
        raise RuntimeError(f"ginkgo exited {code} without a report: see {out / 'ginkgo.log'}")
    result = outcome(suite, out, count)
    if not result.seconds:
        result.seconds = time.monotonic() - started
    if suite.expect:
        result.regressions = selection.regressions(
            suite.expect, {s.name: s.state for s in result.specs}, {s.name for s in dry.specs})
    (out / "summary.md").write_text(report.table([result]) + "\n\n" + report.failures(result)
                                    + "\n")
    (out / "summary.json").write_text(json.dumps({
        "suite": suite.name, "focus": suite.focus, "selected": result.selected,
        "passed": result.passed, "failed": result.failed, "skipped": result.skipped,
        "not_run": result.not_run, "seconds": round(result.seconds),
        "regressions": [{"spec": r.name, "state": r.state} for r in result.regressions],
        "ginkgo_exit": code, "feature_gates": gates, "notes": result.notes,
        "failures": [{"first_line": g.example, "locations": g.locations, "specs": g.specs}
                     for g in result.groups()]}, indent=1) + "\n")
    return result


def chosen_suites(text: str) -> list[Suite]:
    suites = []
    for name in filter(None, (s.strip() for s in text.split(","))):
        if name in SUITES:
            suites.append(SUITES[name])
        elif "=" in name:  # NAME=REGEX: a focus of one's own
            label, _, focus = name.partition("=")
            suites.append(Suite(label, focus))
        else:
            raise SystemExit(f"unknown suite {name!r}: one of {', '.join(SUITES)} "
                             "or NAME=FOCUS-REGEX")
    return suites


def selection_suites(path: Path) -> list[Suite]:
    """One suite per section of a selection file (selection.py)."""
    return [Suite(f"ci-{section.suite}", selection.focus(list(section.names)),
                  dra_gates=section.suite == "dra", expect=section.names)
            for section in selection.load(path)]


def regressions_text(results: list[report.SuiteResult]) -> str:
    lines = [f"- {r.name}: {g.name} ({g.state})" for r in results for g in r.regressions]
    if not lines:
        return ""
    return "\n".join([f"{len(lines)} specs of the selection did not pass:", *lines])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default="dra,api-machinery",
                        help="comma-separated: " + ", ".join(
                            f"{s.name} ({s.focus})" for s in SUITES.values())
                        + ", or NAME=FOCUS-REGEX (default: dra,api-machinery)")
    parser.add_argument("--procs", type=int, default=4,
                        help="parallel ginkgo processes (default: 4; specs mostly wait)")
    parser.add_argument("--nodes", type=int, default=3, help="emulated nodes (default: 3)")
    parser.add_argument("--feature-gates", default="",
                        help="more draemu feature gates (A=true,B=false)")
    parser.add_argument("--emulated", default=features.CURRENT_VERSION,
                        help="the release draemu emulates (draemu up --emulated-version; "
                        "default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPO / ".cache" / "conformance",
                        help="reports, one folder per suite (default: .cache/conformance)")
    parser.add_argument("--e2e-arg", action="append", default=[],
                        help="another flag for e2e.test (repeatable)")
    parser.add_argument("--timeout", default="",
                        help="ginkgo's --timeout for each suite (default: 3h, 12h for "
                        "conformance); specs still running then are interrupted")
    parser.add_argument("--selection", type=Path,
                        help="run the specs this file lists (CI's fixed selection, "
                        "tests/e2e/conformance/ci-selection.txt) instead of --suite; "
                        "fails when one of them does not pass")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: print the tables of the reports under --out")
    args = parser.parse_args()
    args.out = args.out.absolute()  # ginkgo runs e2e.test in another folder
    if args.report_only:
        results = []
        for suite in chosen_suites(args.suite):
            folder = args.out / suite.name
            count = report.load(suite.name, folder / "selected.json").selected \
                if (folder / "selected.json").exists() else 0
            results.append(outcome(suite, folder, count))
        for result in results:
            print(report.failures(result) + "\n")
        print(report.table(results))
        return 0

    bins = bin_dir()
    missing = [b for b in ("e2e.test", "ginkgo", "agnhost") if not (bins / b).is_file()]
    if missing:
        raise SystemExit(f"{', '.join(missing)} missing in {bins}: run "
                         "tests/e2e/realk8s/build.sh conformance")
    version = (bins / ".e2e.test.version").read_text().strip()
    src = images.Sources(bin=bins, k8s_module=k8s_module(version))
    image_map, not_built = images.build(src, args.out / "images")
    for image, why in not_built.items():
        print(f"warning: image {image} not built: {why}", file=sys.stderr)

    suites = selection_suites(args.selection) if args.selection else chosen_suites(args.suite)
    results = []
    for suite in suites:
        result = run_suite(bins, suite, args.out / suite.name, image_map, args)
        results.append(result)
        print(report.table([result]) + "\n\n" + report.failures(result, 5) + "\n", flush=True)
    print(f"e2e.test {version} against draemu (reports under {args.out}):\n")
    print(report.table(results))
    if args.selection:
        text = regressions_text(results)
        print("\n" + (text or f"every spec of {args.selection} passed"))
        return 1 if text else 0
    return 0 if all(r.failed == 0 and r.not_run == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
