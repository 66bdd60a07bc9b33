"""The DaemonSet, StatefulSet, CronJob, endpoints, endpointslice, resource quota,
disruption and TTL controllers end to end: a real apiserver, the real controller manager,
an admin client acting as the user and, where pods must run, as their kubelet."""

import copy

import pytest
from test_ctrl_e2e import eventually, gone

from draemu.api.meta import format_time, now
from draemu.client import Client

pytestmark = [pytest.mark.unit, pytest.mark.slow]
NS = "default"
POD_SPEC = {"containers": [{"name": "c", "image": "pause",
                            "ports": [{"name": "http", "containerPort": 8080}]}]}


def template(app: str, **spec):
    return {"metadata": {"labels": {"app": app}}, "spec": {**POD_SPEC, **spec}}


async def node(client: Client, name: str, taints=None):
    await client.create("v1", "nodes", {"apiVersion": "v1", "kind": "Node",
                                        "metadata": {"name": name, "labels": {
                                            "kubernetes.io/hostname": name}},
                                        "spec": {"taints": taints or []}})


async def run(client: Client, pod: dict, ip: str) -> None:
    """What a kubelet reports once the pod's containers run and pass readiness."""
    fresh = await client.get("v1", "pods", pod["metadata"]["name"], NS)
    fresh["status"] = {**(fresh.get("status") or {}), "phase": "Running", "podIP": ip,
                       "podIPs": [{"ip": ip}], "conditions": [
                           {"type": "Ready", "status": "True",
                            "lastTransitionTime": format_time(now())}]}
    await client.update("v1", "pods", fresh, subresource="status")


async def pods_of(client: Client, app: str) -> list[dict]:
    return (await client.list("v1", "pods", NS, label_selector=f"app={app}"))["items"]


async def test_a_daemonset_runs_on_eligible_nodes_and_rolls_out_a_new_template(cluster):
    await node(cluster, "n1")
    await node(cluster, "n2", taints=[{"key": "dedicated", "effect": "NoSchedule"}])
    ds = await cluster.create("apps/v1", "daemonsets", {
        "metadata": {"name": "agent", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template("agent")}},
        namespace=NS)
    [pod] = await eventually(lambda: pods_of(cluster, "agent"))
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                       "values": ["n1"]}]}]
    first_hash = pod["metadata"]["labels"]["controller-revision-hash"]
    revisions = (await cluster.list("apps/v1", "controllerrevisions", NS))["items"]
    assert [r["metadata"]["name"] for r in revisions] == [f"agent-{first_hash}"]
    await run(cluster, pod, "10.1.0.5")

    async def ready():
        st = (await cluster.get("apps/v1", "daemonsets", "agent", NS)).get("status") or {}
        return st.get("numberReady") == st.get("desiredNumberScheduled") == 1 and st
    status = await eventually(ready)
    assert status["numberAvailable"] == 1 and status["updatedNumberScheduled"] == 1
    changed = copy.deepcopy(await cluster.get("apps/v1", "daemonsets", "agent", NS))
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "2"
    await cluster.update("apps/v1", "daemonsets", changed)

    async def replaced():
        got = [p for p in await pods_of(cluster, "agent")
               if not p["metadata"].get("deletionTimestamp")]
        return [p for p in got if p["metadata"]["labels"]["controller-revision-hash"]
                != first_hash]
    await eventually(replaced)
    assert ds["metadata"]["uid"]


async def test_a_statefulset_creates_ordered_pods_with_claims_and_scales_down(cluster):
    claim_template = {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    await cluster.create("apps/v1", "statefulsets", {
        "metadata": {"name": "db", "namespace": NS},
        "spec": {"replicas": 2, "serviceName": "db",
                 "selector": {"matchLabels": {"app": "db"}}, "template": template("db"),
                 "volumeClaimTemplates": [claim_template]}}, namespace=NS)
    [db0] = await eventually(lambda: pods_of(cluster, "db"))
    assert db0["metadata"]["name"] == "db-0"
    pvc = await cluster.get("v1", "persistentvolumeclaims", "data-db-0", NS)
    assert pvc["metadata"]["labels"] == {"app": "db"}
    await run(cluster, db0, "10.1.0.6")

    async def second():
        names = sorted(p["metadata"]["name"] for p in await pods_of(cluster, "db"))
        return names == ["db-0", "db-1"] and names
    await eventually(second)
    db1 = await cluster.get("v1", "pods", "db-1", NS)
    await run(cluster, db1, "10.1.0.7")

    async def ready():
        st = (await cluster.get("apps/v1", "statefulsets", "db", NS)).get("status") or {}
        return st.get("readyReplicas") == 2 and st
    status = await eventually(ready)
    assert status["currentRevision"] == status["updateRevision"]
    await cluster.patch("apps/v1", "statefulsets", "db", {"spec": {"replicas": 1}},
                        namespace=NS)
    await eventually(lambda: gone(cluster, "v1", "pods", "db-1", NS))


async def test_a_cronjob_starts_jobs_on_its_schedule(cluster):
    await cluster.create("batch/v1", "cronjobs", {
        "metadata": {"name": "tick", "namespace": NS},
        "spec": {"schedule": "@every 1s", "concurrencyPolicy": "Forbid",
                 "jobTemplate": {"spec": {"template": {"spec": {
                     "restartPolicy": "Never", **POD_SPEC}}}}}}, namespace=NS)

    async def started():
        cj = await cluster.get("batch/v1", "cronjobs", "tick", NS)
        return (cj.get("status") or {}).get("active")
    [active] = await eventually(started)
    job = await cluster.get("batch/v1", "jobs", active["name"], NS)
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert "batch.kubernetes.io/cronjob-scheduled-timestamp" in job["metadata"]["annotations"]


async def test_a_service_gets_endpoints_and_a_slice_of_its_ready_pods(cluster):
    await cluster.create("v1", "services", {
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}},
        namespace=NS)
    pod = await cluster.create("v1", "pods", {"metadata": {"name": "web-1", "namespace": NS,
                                                           "labels": {"app": "web"}},
                                              "spec": POD_SPEC}, namespace=NS)
    await run(cluster, pod, "10.1.0.9")

    async def endpoints():
        ep = await cluster.get("v1", "endpoints", "web", NS)
        return [a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []]
    assert await eventually(endpoints) == ["10.1.0.9"]

    async def slices():
        items = (await cluster.list("discovery.k8s.io/v1", "endpointslices", NS,
                                    label_selector="kubernetes.io/service-name=web"))["items"]
        return [e for s in items for e in s.get("endpoints") or []]
    [ep] = await eventually(slices)
    assert ep["addresses"] == ["10.1.0.9"] and ep["conditions"]["ready"] is True


async def test_a_quota_reports_what_the_namespace_uses(cluster):
    await cluster.create("v1", "resourcequotas", {
        "metadata": {"name": "q", "namespace": NS},
        "spec": {"hard": {"count/configmaps": "10", "pods": "5"}}}, namespace=NS)
    await cluster.create("v1", "configmaps", {"metadata": {"name": "extra", "namespace": NS}},
                         namespace=NS)

    async def used():
        q = await cluster.get("v1", "resourcequotas", "q", NS)
        return (q.get("status") or {}).get("used")
    used_now = await eventually(used)
    # kube-root-ca.crt (root-ca-cert-publisher) and ours
    assert int(used_now["count/configmaps"]) >= 1 and used_now["pods"] == "0"


async def test_a_pdb_allows_disruptions_above_min_available(cluster):
    await cluster.create("policy/v1", "poddisruptionbudgets", {
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "pdb"}}}},
        namespace=NS)
    for i in range(2):
        pod = await cluster.create("v1", "pods", {
            "metadata": {"name": f"pdb-{i}", "namespace": NS, "labels": {"app": "pdb"}},
            "spec": POD_SPEC}, namespace=NS)
        await run(cluster, pod, f"10.1.1.{i + 1}")

    async def allowed():
        st = (await cluster.get("policy/v1", "poddisruptionbudgets", "web", NS)).get(
            "status") or {}
        return st.get("disruptionsAllowed") == 1 and st
    status = await eventually(allowed)
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"]) == (
        2, 1, 2)


async def test_a_finished_job_with_a_ttl_is_deleted(cluster):
    job = await cluster.create("batch/v1", "jobs", {
        "metadata": {"name": "once", "namespace": NS},
        "spec": {"ttlSecondsAfterFinished": 0, "suspend": True,
                 "template": {"spec": {"restartPolicy": "Never", **POD_SPEC}}}}, namespace=NS)
    stamp = format_time(now())
    job["status"] = {"startTime": stamp, "completionTime": stamp, "succeeded": 1,
                     "conditions": [{"type": "SuccessCriteriaMet", "status": "True",
                                     "lastTransitionTime": stamp},
                                    {"type": "Complete", "status": "True",
                                     "lastTransitionTime": stamp}]}
    await cluster.update("batch/v1", "jobs", job, subresource="status")
    await eventually(lambda: gone(cluster, "batch/v1", "jobs", "once", NS))


async def test_a_replication_controller_keeps_its_replicas(cluster):
    await cluster.create("v1", "replicationcontrollers", {
        "metadata": {"name": "legacy", "namespace": NS},
        "spec": {"replicas": 2, "selector": {"app": "legacy"}, "template": template("legacy")}},
        namespace=NS)

    async def two():
        pods = await pods_of(cluster, "legacy")
        return len(pods) == 2 and pods
    pods = await eventually(two)
    assert {p["metadata"]["ownerReferences"][0]["kind"] for p in pods} == {
        "ReplicationController"}

    async def counted():
        rc = await cluster.get("v1", "replicationcontrollers", "legacy", NS)
        return (rc.get("status") or {}).get("replicas") == 2
    await eventually(counted)
    await cluster.patch("v1", "replicationcontrollers", "legacy", {"spec": {"replicas": 1}},
                        namespace=NS)

    async def one():
        live = [p for p in await pods_of(cluster, "legacy")
                if not p["metadata"].get("deletionTimestamp")]
        return len(live) == 1
    await eventually(one)
