"""The real kube-scheduler and kube-controller-manager (v1.37.2, unmodified) in place of
draemu's own, against `draemu up --preset seed --no-scheduler --no-controllers`.

They must find every resource they list and watch (no `Failed to watch` or `failed to
list` in their logs), place the seed scenarios' pods as draemu's scheduler does (the
outcomes tests/e2e/seed checks), create claims from templates with the real
resourceclaim controller and remove them after their pods, and bring a DaemonSet, a
Deployment behind a Service and a StatefulSet to their desired state. The same workloads
run under draemu's own controllers (plain `draemu up`), which must reach the same state.

The binaries come from tests/e2e/realk8s/build.sh (`make test` runs it; the cache is
${DRAEMU_REALK8S_CACHE:-~/.cache/draemu/realk8s}). Without them the tests skip, except
under CI=true, where that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from draemu.cmd.testing.process import RunningDraemu, draemu_up
from draemu.features import CURRENT_VERSION, RELEASE_SOURCES

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]

HERE = Path(__file__).parent
EXAMPLES = HERE.parents[2] / "examples" / "seed"
CACHE = Path(os.environ.get("DRAEMU_REALK8S_CACHE")
             or Path.home() / ".cache" / "draemu" / "realk8s")
VERSION = os.environ.get("DRAEMU_REALK8S_VERSION", RELEASE_SOURCES[CURRENT_VERSION])
# Another release (DRAEMU_REALK8S_VERSION=v1.38.0-beta.0): its binaries in bin-1.38/ (or
# bin/), and draemu emulating that release.
RELEASE = ".".join(VERSION.removeprefix("v").split(".")[:2])
EMULATE = [] if RELEASE == CURRENT_VERSION else ["--emulated-version", RELEASE]
COMPONENTS = ("kube-scheduler", "kube-controller-manager")
NUMA = "resource.kubernetes.io/numaNode"
# What a reflector logs when a resource cannot be listed or watched.
LIST_WATCH_FAILURE = re.compile(r"Failed to watch|failed to list", re.IGNORECASE)
MISSING = re.compile(r"not found|could not find the requested resource|is not registered")
KLOG_PREFIX = re.compile(r"^[EW]\d{4} [\d:.]+\s+\d+ ")


def binaries() -> dict[str, Path]:
    def built(folder: Path, c: str) -> bool:
        stamp = folder / f".{c}.version"
        return (folder / c).exists() and stamp.exists() and \
            stamp.read_text().strip() == VERSION

    folder = next((f for f in (CACHE / "bin", CACHE / f"bin-{RELEASE}")
                   if all(built(f, c) for c in COMPONENTS)), CACHE / "bin")
    found = {c: folder / c for c in COMPONENTS}
    missing = [c for c in COMPONENTS if not built(folder, c)]
    if missing:
        reason = (f"real {', '.join(missing)} {VERSION} not built in {folder} "
                  "(run tests/e2e/realk8s/build.sh)")
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@dataclass
class Component:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class RealControlPlane:
    draemu: RunningDraemu
    scheduler: Component
    controller_manager: Component

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.draemu.kubectl(*args, **kw)

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def components(self) -> tuple[Component, Component]:
        return self.scheduler, self.controller_manager


@dataclass
class OwnControlPlane:
    """draemu's own scheduler and controllers, for the same workloads side by side."""
    draemu: RunningDraemu

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.draemu.kubectl(*args, **kw)

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


Plane = RealControlPlane | OwnControlPlane


def start(name: str, binary: Path, args: list[str], folder: Path) -> Component:
    log = folder / f"{name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(binary), *args], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    return Component(name, proc, log)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealControlPlane]:
    bins = binaries()
    folder = tmp_path_factory.mktemp("realk8s")
    with draemu_up(folder, "--preset", "seed", "--no-scheduler", "--no-controllers",
                   *EMULATE) as up:
        # Each as the identity RBAC's bootstrap policy gives its permissions; the
        # controller manager runs each controller with its own service account's tokens
        # (TokenRequest), as kubeadm sets it up.
        scheduler_kubeconfig = identity_kubeconfig(folder, "system:kube-scheduler")
        kcm_kubeconfig = identity_kubeconfig(folder, "system:kube-controller-manager")
        # No serving port (0): the test needs their API clients only.
        common = ["--leader-elect=false", "--secure-port=0", "--v=2"]
        scheduler = start("kube-scheduler", bins["kube-scheduler"],
                          [*common, f"--kubeconfig={scheduler_kubeconfig}"], folder)
        kcm = start("kube-controller-manager", bins["kube-controller-manager"],
                    [*common, f"--kubeconfig={kcm_kubeconfig}", "--controllers=*",
                     "--use-service-account-credentials=true",
                     "--authentication-skip-lookup=true",
                     # node-ipam needs a cluster CIDR; the others must run as upstream's.
                     "--allocate-node-cidrs=false",
                     # The quota controller counts a new quota's usage from its informers,
                     # which may not have seen an object created a moment before (upstream
                     # has the same race): it is corrected at the next full resync (5 min
                     # by default), so the quota test wants a short one.
                     "--resource-quota-sync-period=10s"], folder)
        plane = RealControlPlane(up, scheduler, kcm)
        try:
            wait_started(plane)
            yield plane
        finally:
            for c in plane.components():
                c.stop()


def identity_kubeconfig(folder: Path, user: str) -> Path:
    """A kubeconfig with a client certificate for `user`, signed by the cluster's CA."""
    from draemu import kubeconfig
    from draemu.client import config
    from draemu.pki import KeyPair, make_client_cert

    pki = folder / "data" / "pki"
    ca = KeyPair((pki / "ca.crt").read_bytes(), (pki / "ca.key").read_bytes())
    pair = make_client_cert(ca, user, [])
    server = config.load(folder / "kubeconfig").server
    path = folder / f"{user.replace(':', '-')}.kubeconfig"
    kubeconfig.write(path, kubeconfig.build(server, user=user, ca_pem=ca.cert_pem,
                                            client_cert_pem=pair.cert_pem,
                                            client_key_pem=pair.key_pem))
    return path


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnControlPlane]:
    binaries()  # the comparison is with the real components: skip with them
    with draemu_up(tmp_path_factory.mktemp("own"), "--preset", "seed", *EMULATE) as up:
        yield OwnControlPlane(up)


@pytest.fixture(params=["real", "draemu"])
def plane(request: pytest.FixtureRequest) -> Plane:
    """The workloads run under the real kube-controller-manager and under draemu's."""
    return request.getfixturevalue("real" if request.param == "real" else "own")


def wait_started(plane: RealControlPlane, timeout: float = 60) -> None:
    """Until both have synced their informers (or one has exited)."""
    marks = {"kube-scheduler": "Starting Kubernetes Scheduler",
             "kube-controller-manager": "Caches are synced"}
    deadline = time.monotonic() + timeout
    for c in plane.components():
        while marks[c.name] not in c.text():
            if c.process.poll() is not None:
                pytest.fail(f"{c.name} exited {c.process.returncode}:\n{c.text()[-4000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"{c.name} not started in {timeout}s:\n{c.text()[-4000:]}")
            time.sleep(0.2)


def wait_for(what: str, check: Any, timeout: float = 45, last: Any = None) -> Any:
    """Until `check()` is truthy; `last()` says what was seen when it times out."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            seen = f": last seen {last()!r}" if last is not None else ""
            raise AssertionError(f"timed out waiting for {what}{seen}")
        time.sleep(0.25)


def list_watch_failures(c: Component) -> list[str]:
    return [line for line in c.text().splitlines() if LIST_WATCH_FAILURE.search(line)]


def repeated_missing(c: Component) -> dict[str, int]:
    """Errors and warnings about something missing that come back (3 times or more): a
    kind, an object or a field the component keeps asking for."""
    counts = Counter(KLOG_PREFIX.sub("", line) for line in c.text().splitlines()
                     if KLOG_PREFIX.match(line) and MISSING.search(line))
    return {message: n for message, n in counts.items() if n >= 3}


def device_info(plane: RealControlPlane) -> dict[tuple[str, str, str], dict[str, Any]]:
    out = {}
    for s in plane.get("resourceslices")["items"]:
        for dev in s["spec"].get("devices") or []:
            out[(s["spec"]["driver"], s["spec"]["pool"]["name"], dev["name"])] = {
                k.rsplit("/", 1)[-1] if k.startswith(s["spec"]["driver"]) else k:
                next(iter(v.values())) for k, v in (dev.get("attributes") or {}).items()}
    return out


def results(claim: dict[str, Any]) -> list[dict[str, Any]]:
    return claim["status"]["allocation"]["devices"]["results"]


def wait_ready(plane: RealControlPlane, *pods: str) -> None:
    if "-l" in pods:
        wait_for(f"pods {pods}", lambda: plane.kubectl("get", *pods, "-o", "name")
                 .stdout.strip())
    plane.kubectl("wait", "--for=condition=Ready", *pods, "--timeout=60s")


# --- start-up ------------------------------------------------------------------------------


def test_both_list_and_watch_every_resource_they_need(real: RealControlPlane) -> None:
    for c in real.components():
        assert c.process.poll() is None, f"{c.name} exited:\n{c.text()[-4000:]}"
        assert list_watch_failures(c) == [], c.name


def test_every_node_publishes_its_csinode(real: RealControlPlane) -> None:
    names = {n["metadata"]["name"] for n in real.get("csinodes")["items"]}
    assert names == {"gpu-node-01", "gpu-node-02", "gpu-node-03"}


def test_the_controllers_run_as_their_own_service_accounts(real: RealControlPlane) -> None:
    names = {sa["metadata"]["name"]
             for sa in real.get("serviceaccounts", "-n", "kube-system")["items"]}
    assert {"daemon-set-controller", "statefulset-controller", "endpointslice-controller",
            "resource-claim-controller", "job-controller"} <= names


# --- the seed scenarios under the real scheduler ---------------------------------------------


def test_scenario_1_the_real_job_controller_and_scheduler_pick_an_80gb_gpu(
        real: RealControlPlane) -> None:
    f = str(EXAMPLES / "1-large-model-training.yaml")
    real.kubectl("apply", "-f", f)
    try:
        wait_ready(real, "pod", "-l", "job-name=llm-training-80gb")
        [res] = results(real.get("resourceclaim", "large-model-gpu-claim"))
        attrs = device_info(real)[(res["driver"], res["pool"], res["device"])]
        assert (res["pool"], attrs["model"]) in {("gpu-node-01", "A100-SXM4-80GB"),
                                                 ("gpu-node-02", "H100-SXM5-80GB")}
        [pod] = real.get("pods", "-l", "job-name=llm-training-80gb")["items"]
        assert pod["spec"]["nodeName"] == res["pool"]
        assert "nominatedNodeName" not in pod["status"]
    finally:
        real.kubectl("delete", "-f", f, "--wait=true")


def test_scenario_2a_two_pods_share_one_claimed_gpu(real: RealControlPlane) -> None:
    f = str(EXAMPLES / "2a-shared-gpu-claim.yaml")
    real.kubectl("apply", "-f", f)
    try:
        wait_ready(real, "pod/inference-pod-a", "pod/inference-pod-b")
        claim = real.get("resourceclaim", "shared-gpu-claim")
        assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == [
            "inference-pod-a", "inference-pod-b"]
        [res] = results(claim)
        a, b = (real.get("pod", p) for p in ("inference-pod-a", "inference-pod-b"))
        assert a["spec"]["nodeName"] == b["spec"]["nodeName"] == res["pool"]
    finally:
        real.kubectl("delete", "-f", f, "--wait=true")


def test_scenario_2b_the_real_resourceclaim_controller_creates_and_removes_claims(
        real: RealControlPlane) -> None:
    f = str(EXAMPLES / "2b-consumable-capacity.yaml")
    real.kubectl("apply", "-f", f)
    try:
        wait_ready(real, "pod/inference-share-a", "pod/inference-share-b")
        claims = [c for c in real.get("resourceclaims")["items"]
                  if c["metadata"]["name"].startswith("inference-share-")]
        assert len(claims) == 2
        for c in claims:
            assert c["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
            [owner] = c["metadata"]["ownerReferences"]
            assert owner["kind"] == "Pod" and owner["controller"] is True
        (ra,), (rb,) = (results(c) for c in claims)
        assert ra["pool"] == rb["pool"] == "gpu-node-01"
        assert ra["device"] == rb["device"]
        assert ra["shareID"] != rb["shareID"]
        pods = [real.get("pod", p) for p in ("inference-share-a", "inference-share-b")]
        assert {p["spec"]["nodeName"] for p in pods} == {"gpu-node-01"}
        assert {s["resourceClaimName"] for p in pods
                for s in p["status"]["resourceClaimStatuses"]} == {
            c["metadata"]["name"] for c in claims}
        real.kubectl("delete", "pod", "inference-share-a", "inference-share-b", "--wait=true")
        wait_for("the generated claims to be deleted", lambda: not [
            c for c in real.get("resourceclaims")["items"]
            if c["metadata"]["name"].startswith("inference-share-")])
    finally:
        real.kubectl("delete", "-f", f, "--wait=true", "--ignore-not-found")


def test_scenario_3_gpu_and_nic_share_a_numa_node(real: RealControlPlane) -> None:
    for name, aligned in (("3-gpu-plus-nic", True), ("3b-gpu-plus-nic-unaligned", False)):
        f = str(EXAMPLES / f"{name}.yaml")
        real.kubectl("apply", "-f", f)
        try:
            [claim] = [c for c in real.get("resourceclaims")["items"]
                       if c["metadata"]["name"].startswith("gpu-plus-nic")]
            pod = "distributed-training-pod" if aligned else "unaligned-training-pod"
            wait_ready(real, f"pod/{pod}")
            claim = real.get("resourceclaim", claim["metadata"]["name"])
            info = device_info(real)
            by_request = {r["request"]: info[(r["driver"], r["pool"], r["device"])]
                          for r in results(claim)}
            gpu, nic = by_request["training-gpu"], by_request["fast-nic"]
            assert (gpu[NUMA] == nic[NUMA]) is aligned
        finally:
            real.kubectl("delete", "-f", f, "--wait=true")


# --- workloads under the real controller-manager and under draemu's ---------------------

POD_SPEC = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}


def workload(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": POD_SPEC},
                     **spec}}


def apply(plane: Plane, *objs: dict[str, Any]) -> None:
    plane.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": list(objs)}))


def test_a_daemonset_runs_one_pod_on_every_node(plane: Plane) -> None:
    apply(plane, workload("DaemonSet", "agent"))
    try:
        def done() -> Any:
            st = plane.get("daemonset", "agent").get("status") or {}
            return st.get("numberReady") == st.get("desiredNumberScheduled") == 3 and st
        status = wait_for("the DaemonSet to be ready on 3 nodes", done)
        plane.kubectl("rollout", "status", "daemonset/agent", "--timeout=30s")
        assert status["updatedNumberScheduled"] == 3 and status["numberMisscheduled"] == 0
        pods = plane.get("pods", "-l", "app=agent")["items"]
        assert sorted(p["spec"]["nodeName"] for p in pods) == [
            "gpu-node-01", "gpu-node-02", "gpu-node-03"]
        assert all("controller-revision-hash" in p["metadata"]["labels"] for p in pods)
        assert plane.get("controllerrevisions", "-l", "app=agent")["items"]
    finally:
        plane.kubectl("delete", "daemonset", "agent", "--wait=true")


def test_a_daemonset_follows_node_affinity_and_rolls_out_a_new_template(plane: Plane) -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "kubernetes.io/hostname", "operator": "In",
            "values": ["gpu-node-01", "gpu-node-02"]}]}]}}}
    ds = workload("DaemonSet", "picky")
    ds["spec"]["template"]["spec"] = {**POD_SPEC, "affinity": affinity}
    apply(plane, ds)
    try:
        def rolled_out(generation: int) -> Any:
            got = plane.get("daemonset", "picky")
            st = got.get("status") or {}
            return (st.get("observedGeneration") == generation
                    and st.get("desiredNumberScheduled") == 2
                    and st.get("updatedNumberScheduled") == 2
                    and st.get("numberAvailable") == 2 and got)

        wait_for("the DaemonSet on the two chosen nodes", lambda: rolled_out(1))
        first = {p["metadata"]["labels"]["controller-revision-hash"]
                 for p in plane.get("pods", "-l", "app=picky")["items"]}
        plane.kubectl("patch", "daemonset", "picky", "--type=merge", "-p", json.dumps(
            {"spec": {"template": {"metadata": {"labels": {"tier": "2"}}}}}))
        wait_for("the new template on both nodes", lambda: rolled_out(2))

        def replaced() -> Any:
            pods = [p for p in plane.get("pods", "-l", "app=picky")["items"]
                    if not p["metadata"].get("deletionTimestamp")]
            return len(pods) == 2 and all(
                p["metadata"]["labels"]["controller-revision-hash"] not in first
                and p["metadata"]["labels"]["tier"] == "2" for p in pods) and pods
        pods = wait_for("the old pods to be replaced", replaced)
        assert sorted(p["spec"]["nodeName"] for p in pods) == ["gpu-node-01", "gpu-node-02"]
        revisions = plane.get("controllerrevisions", "-l", "app=picky")["items"]
        assert sorted(r["revision"] for r in revisions) == [1, 2]
    finally:
        plane.kubectl("delete", "daemonset", "picky", "--wait=true")


def test_a_deployment_behind_a_service_gets_endpoints(plane: Plane) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    apply(plane, workload("Deployment", "web", replicas=2), service)
    try:
        plane.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
        ips = sorted(p["status"]["podIP"] for p in plane.get("pods", "-l", "app=web")["items"])
        assert len(ips) == 2

        def endpoints() -> Any:
            ep = plane.get("endpoints", "web")
            got = sorted(a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses")
                         or [])
            return got == ips

        wait_for("the Service's Endpoints to list both pods", endpoints)

        def slices() -> Any:
            items = plane.get("endpointslices", "-l", "kubernetes.io/service-name=web")["items"]
            got = sorted(addr for s in items for e in s.get("endpoints") or []
                         if (e.get("conditions") or {}).get("ready")
                         for addr in e["addresses"])
            return got == ips

        wait_for("the Service's EndpointSlice to list both pods", slices)
    finally:
        plane.kubectl("delete", "deployment/web", "service/web", "--wait=true")


def test_a_statefulset_creates_its_pods_in_order(plane: Plane) -> None:
    apply(plane, workload("StatefulSet", "db", replicas=2, serviceName="db"))
    try:
        def done() -> Any:
            st = plane.get("statefulset", "db").get("status") or {}
            return st.get("readyReplicas") == 2 and st.get("currentReplicas") == 2
        wait_for("the StatefulSet's two pods to be ready", done)
        plane.kubectl("rollout", "status", "statefulset/db", "--timeout=30s")
        pods = sorted(p["metadata"]["name"] for p in plane.get("pods", "-l", "app=db")["items"])
        assert pods == ["db-0", "db-1"]
        plane.kubectl("patch", "statefulset", "db", "--type=merge", "-p", json.dumps(
            {"spec": {"template": {"metadata": {"labels": {"tier": "2"}}}}}))

        def updated() -> Any:
            sts = plane.get("statefulset", "db")
            st = sts.get("status") or {}
            # the status of the patched template, not the one from before the patch
            return st.get("observedGeneration") == sts["metadata"]["generation"] and \
                st.get("updatedReplicas") == st.get("readyReplicas") == 2 and \
                st.get("currentRevision") == st.get("updateRevision") and st
        status = wait_for("the rolling update of both pods", updated)
        revisions = {p["metadata"]["labels"]["controller-revision-hash"]
                     for p in plane.get("pods", "-l", "app=db")["items"]}
        assert revisions == {status["updateRevision"]}
        plane.kubectl("scale", "statefulset", "db", "--replicas=1")

        def scaled_down() -> Any:
            return sorted(p["metadata"]["name"] for p in plane.get(
                "pods", "-l", "app=db")["items"]) == ["db-0"]
        wait_for("db-1 to go", scaled_down)
    finally:
        plane.kubectl("delete", "statefulset", "db", "--wait=true")


def test_a_quota_counts_what_its_namespace_uses(plane: Plane) -> None:
    ns = f"quota-{'real' if isinstance(plane, RealControlPlane) else 'own'}"
    plane.kubectl("create", "namespace", ns)
    try:
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "two-gpus", "namespace": ns},
                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                     "deviceClassName": "gpu.nvidia.com", "count": 2}}]}}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
               "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                   "requests": {"cpu": "250m", "memory": "64Mi"},
                   "limits": {"cpu": "500m", "memory": "64Mi"}}}]}}
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s",
                                                                    "namespace": ns}}
        quota = {"apiVersion": "v1", "kind": "ResourceQuota",
                 "metadata": {"name": "q", "namespace": ns},
                 "spec": {"hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "1Gi",
                                   "count/secrets": "10",
                                   "count/resourceclaims.resource.k8s.io": "5",
                                   "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4"}}}
        apply(plane, claim, pod, secret, quota)
        expected = {"pods": "1", "requests.cpu": "250m", "limits.memory": "64Mi",
                    "count/secrets": "1", "count/resourceclaims.resource.k8s.io": "1",
                    "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "2"}
        seen: list[Any] = []

        def used() -> Any:
            seen.append((plane.get("resourcequota", "q", "-n", ns).get("status") or {}).get(
                "used"))
            return seen[-1] == expected

        assert wait_for("the quota's status.used", used, timeout=60,
                        last=lambda: seen[-1])
        # The namespace controller empties the namespace through every served kind.
        plane.kubectl("delete", "namespace", ns, "--timeout=60s")
        assert plane.kubectl("get", "namespace", ns, check=False).returncode != 0
    finally:
        plane.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found")


def test_a_disruption_budget_counts_healthy_pods(plane: Plane) -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "budget"},
           "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "budget"}}}}
    apply(plane, workload("Deployment", "budget", replicas=3), pdb)
    try:
        def status() -> Any:
            st = plane.get("pdb", "budget").get("status") or {}
            return st if st.get("currentHealthy") == 3 else None

        st = wait_for("the budget to see three healthy pods", status)
        assert (st["expectedPods"], st["desiredHealthy"], st["disruptionsAllowed"]) == (3, 2, 1)
        [cond] = [c for c in st["conditions"] if c["type"] == "DisruptionAllowed"]
        assert (cond["status"], cond["reason"]) == ("True", "SufficientPods")
    finally:
        plane.kubectl("delete", "deployment/budget", "pdb/budget", "--wait=true")


def test_a_cronjob_starts_jobs_that_finish_and_expire(plane: Plane) -> None:
    template = {"metadata": {"annotations": {"draemu.io/fake-exit-after": "1s"}},
                "spec": {"restartPolicy": "Never", **POD_SPEC}}
    cronjob = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
               "spec": {"schedule": "@every 2s", "concurrencyPolicy": "Forbid",
                        "successfulJobsHistoryLimit": 1,
                        "jobTemplate": {"spec": {"ttlSecondsAfterFinished": 0,
                                                 "template": template}}}}
    apply(plane, cronjob)
    try:
        def succeeded() -> Any:
            return (plane.get("cronjob", "tick").get("status") or {}).get("lastSuccessfulTime")

        wait_for("a job of the CronJob to succeed", succeeded, timeout=60)
        status = plane.get("cronjob", "tick")["status"]
        assert status["lastScheduleTime"]

        def expired() -> Any:  # ttlSecondsAfterFinished: 0 removes finished jobs
            jobs = plane.get("jobs")["items"]
            return all(not (j.get("status") or {}).get("completionTime") for j in jobs) and \
                jobs is not None
        wait_for("finished jobs to be deleted", expired, timeout=30)
    finally:
        plane.kubectl("delete", "cronjob", "tick", "--wait=true")


def test_no_list_or_watch_failure_nor_repeated_missing_object_after_everything(
        real: RealControlPlane) -> None:
    for c in real.components():
        assert c.process.poll() is None, f"{c.name} exited:\n{c.text()[-4000:]}"
        assert list_watch_failures(c) == [], c.name
        assert repeated_missing(c) == {}, c.name
