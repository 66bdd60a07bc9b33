"""The DaemonSet controller (upstream's pkg/controller/daemon): one pod per eligible node.

A node is eligible when the template's nodeName (if any), nodeSelector and required node
affinity match it and its NoSchedule/NoExecute taints are tolerated by the template's
tolerations plus the ones every daemon pod gets (not-ready, unreachable, the pressure
taints, unschedulable, and network-unavailable for host-network pods). A pod stays on a
node that stopped being eligible unless a NoExecute taint is not tolerated. Pods are
created pinned to their node by node affinity (`metadata.name In [node]`), for the
scheduler to bind. The template's history is kept in ControllerRevisions; pods carry
`controller-revision-hash` (and `pod-template-generation`); RollingUpdate replaces old
pods within maxUnavailable (or surges with maxSurge), OnDelete only on deletion.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from draemu.api.meta import (
    controller_of,
    meta,
    name_of,
    namespace_of,
    owner_reference,
    pod_is_ready,
    pod_is_terminal,
    toleration_matches,
)
from draemu.api.nodeselector import pod_fits_node
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers import history
from draemu.controllers.base import Controller
from draemu.controllers.deployment import resolve
from draemu.controllers.expectations import Expectations
from draemu.controllers.refmanager import claim, selects
from draemu.controllers.replicaset import pod_is_available

HASH_LABEL = history.POD_REVISION_HASH
GENERATION_LABEL = "pod-template-generation"
GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
BURST = 250  # upstream's burstReplicas: creates or deletes per sync
FAILED_POD_BACKOFF_START, FAILED_POD_BACKOFF_MAX = 1.0, 900.0


def _toleration(key: str, effect: str) -> Obj:
    return {"key": key, "operator": "Exists", "effect": effect}


def daemon_tolerations(spec: Obj) -> list[Obj]:
    """The template's tolerations plus every daemon pod's (AddOrUpdateDaemonPodTolerations):
    a toleration with the same key and effect is replaced."""
    extra = [_toleration("node.kubernetes.io/not-ready", "NoExecute"),
             _toleration("node.kubernetes.io/unreachable", "NoExecute"),
             _toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
             _toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
             _toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
             _toleration("node.kubernetes.io/unschedulable", "NoSchedule")]
    if spec.get("hostNetwork"):
        extra.append(_toleration("node.kubernetes.io/network-unavailable", "NoSchedule"))
    out = [copy.deepcopy(t) for t in spec.get("tolerations") or []]
    for t in extra:
        same = [i for i, o in enumerate(out)
                if o.get("key") == t["key"] and o.get("effect") == t["effect"]]
        if same:
            out[same[0]] = t
        else:
            out.append(t)
    return out


def _untolerated(taints: list[Obj], tolerations: list[Obj], effects: tuple[str, ...]) -> bool:
    return any(t.get("effect") in effects and not any(toleration_matches(tol, t)
                                                      for tol in tolerations)
               for t in taints)


def should_run(ds: Obj, node: Obj) -> tuple[bool, bool]:
    """(should run a daemon pod, may keep running one) on `node` (nodeShouldRunDaemonPod)."""
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    if spec.get("nodeName") and spec["nodeName"] != name_of(node):
        return False, False
    if not pod_fits_node(spec, node):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or []
    tolerations = daemon_tolerations(spec)
    if _untolerated(taints, tolerations, ("NoSchedule", "NoExecute")):
        return False, not _untolerated(taints, tolerations, ("NoExecute",))
    return True, True


def target_node(pod: Obj) -> str | None:
    """spec.nodeName, or for a pod not yet bound the node its affinity pins it to."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In":
                values = f.get("values") or []
                return values[0] if len(values) == 1 else None
    return None


def pin_to_node(affinity: Obj | None, node: str) -> Obj:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes one term
    `metadata.name In [node]`; preferred terms and pod (anti-)affinity stay."""
    out = copy.deepcopy(affinity or {})
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    out.setdefault("nodeAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [term]}
    return out


def _oldest_first(pod: Obj) -> tuple[int, str, str]:
    """podByCreationTimestampAndPhase: scheduled pods first, then oldest, then by name."""
    return (0 if (pod.get("spec") or {}).get("nodeName") else 1,
            meta(pod).get("creationTimestamp") or "", name_of(pod))


def template_generation(ds: Obj) -> str | None:
    return (meta(ds).get("annotations") or {}).get(GENERATION_ANNOTATION)


def pod_is_updated(pod: Obj, hash_: str, generation: str | None) -> bool:
    labels = meta(pod).get("labels") or {}
    return (bool(hash_) and labels.get(HASH_LABEL) == hash_) or (
        generation is not None and labels.get(GENERATION_LABEL) == generation)


def _strategy(ds: Obj) -> Obj:
    return (ds.get("spec") or {}).get("updateStrategy") or {"type": "RollingUpdate"}


def surge_and_unavailable(ds: Obj, desired: int) -> tuple[int, int]:
    strategy = _strategy(ds)
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = resolve(rolling["maxSurge"], desired, True) if rolling.get("maxSurge") else 0
    unavailable = resolve(rolling.get("maxUnavailable", 1), desired, True)
    if desired > 0 and surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


class DaemonSetController(Controller):
    name = "daemonset"
    workers = 2

    def component(self) -> str:
        return "daemonset-controller"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.daemonsets = inf.informer("apps/v1", "daemonsets")
        self.pods = inf.informer("v1", "pods")
        self.nodes = inf.informer("v1", "nodes")
        self.revisions = inf.informer("apps/v1", "controllerrevisions")
        self.expectations = Expectations()
        self._backoff: dict[str, tuple[float, float]] = {}
        self.handlers_enqueue(self.daemonsets)
        self.pods.add_handler(on_add=self._dependent_changed,
                              on_update=lambda o, n: (self._dependent_changed(o),
                                                      self._dependent_changed(n)),
                              on_delete=self._dependent_changed)
        self.revisions.add_handler(on_add=self._dependent_changed,
                                   on_delete=self._dependent_changed)
        self.nodes.add_handler(on_add=self._node_changed,
                               on_update=lambda _o, n: self._node_changed(n),
                               on_delete=self._node_changed)

    def primary(self) -> Any:
        return self.daemonsets

    def _dependent_changed(self, obj: Obj) -> None:
        ref = controller_of(obj)
        if ref is not None:
            if ref.get("kind") == "DaemonSet":
                self.queue.add(f"{namespace_of(obj)}/{ref.get('name')}")
            return
        for ds in self.daemonsets.list():  # an orphan: whoever selects it may adopt it
            if namespace_of(ds) == namespace_of(obj) and selects(
                    (ds.get("spec") or {}).get("selector"), meta(obj).get("labels")):
                self.queue.add(key_of(ds))

    def _node_changed(self, _node: Obj) -> None:
        for key in self.daemonsets.keys():
            self.queue.add(key)

    def _pod(self, namespace: str) -> Any:
        return lambda name: self.pods.get(f"{namespace}/{name}")

    # --- sync ----------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        ds = self.daemonsets.get(key)
        if ds is None:
            self.expectations.forget(key)
            return None
        selector = (ds.get("spec") or {}).get("selector")
        if selector == {}:
            await self.recorder.event(ds, "Warning", "SelectingAll",
                                      "This daemon set is selecting all pods. A non-empty "
                                      "selector is required.")
            return None
        if meta(ds).get("deletionTimestamp"):
            return None
        owned = await claim(self.client, ds, [r for r in self.revisions.list()
                                              if namespace_of(r) == namespace_of(ds)],
                            selector, "apps/v1", "controllerrevisions")
        for r in owned:  # revisions of old controllers may lack the hash label
            if HASH_LABEL not in (meta(r).get("labels") or {}):
                r = copy.deepcopy(r)
                r["metadata"].setdefault("labels", {})[HASH_LABEL] = name_of(r)
                await self.client.update("apps/v1", "controllerrevisions", r)
        current, old = await history.current_revision(self.client, ds, owned, HASH_LABEL,
                                                       "daemonsets")
        hash_ = (meta(current).get("labels") or {}).get(HASH_LABEL, "")
        nodes = self.nodes.list()
        if not self.expectations.satisfied(key, self._pod(namespace_of(ds))):
            return await self._update_status(ds, nodes, hash_, observed=False)
        await self._manage(ds, nodes, hash_)
        if self.expectations.satisfied(key, self._pod(namespace_of(ds))) and \
                _strategy(ds).get("type", "RollingUpdate") == "RollingUpdate":
            await self._rolling_update(ds, nodes, hash_)
        await self._cleanup_history(ds, old)
        return await self._update_status(ds, nodes, hash_, observed=True)

    async def _node_to_pods(self, ds: Obj, include_terminal_deleted: bool = False
                            ) -> dict[str, list[Obj]]:
        candidates = [p for p in self.pods.list() if namespace_of(p) == namespace_of(ds)]
        pods = await claim(self.client, ds, candidates, (ds.get("spec") or {}).get("selector"),
                           "v1", "pods")
        out: dict[str, list[Obj]] = {}
        for pod in pods:
            if not include_terminal_deleted and pod_is_terminal(pod) and meta(pod).get(
                    "deletionTimestamp"):
                continue
            node = target_node(pod)
            if node is not None:
                out.setdefault(node, []).append(pod)
        return out

    async def _manage(self, ds: Obj, nodes: list[Obj], hash_: str) -> None:
        node_pods = await self._node_to_pods(ds)
        surge, _ = surge_and_unavailable(ds, 1)
        create: list[str] = []
        delete: list[Obj] = []
        for node in nodes:
            run, keep = should_run(ds, node)
            pods = node_pods.get(name_of(node))
            if run and not pods:
                create.append(name_of(node))
            elif keep:
                running = await self._running(ds, name_of(node), pods or [], delete)
                if surge and not running and run:
                    create.append(name_of(node))
                elif not surge or len(running) > 1:
                    # One pod per node; with surge, the excess once the new one is ready.
                    delete.extend(self._surge_excess(ds, running, hash_) if surge
                                  else running[1:])
            elif pods:
                delete.extend(p for p in pods if not meta(p).get("deletionTimestamp"))
        names = {name_of(n) for n in nodes}
        for node, pods in node_pods.items():  # unscheduled pods for nodes that are gone
            if node not in names:
                delete.extend(p for p in pods if not (p.get("spec") or {}).get("nodeName"))
        await self._sync_nodes(ds, delete, create, hash_)

    async def _running(self, ds: Obj, node: str, pods: list[Obj], delete: list[Obj]
                       ) -> list[Obj]:
        """The node's daemon pods that run, oldest first; failed and succeeded ones go to
        `delete` (a failed one only once its backoff is over)."""
        running = []
        for pod in pods:
            if meta(pod).get("deletionTimestamp"):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                wait = self._failed_pod_backoff(ds, node)
                if wait:  # the kubelet keeps rejecting it: do not hot-loop
                    self.queue.add_after(key_of(ds), wait)
                    continue
                await self.recorder.event(
                    ds, "Warning", "FailedDaemonPod",
                    f"Found failed daemon pod {namespace_of(pod)}/{name_of(pod)} on "
                    f"node {node}, will try to kill it")
                delete.append(pod)
            elif phase == "Succeeded":
                await self.recorder.event(
                    ds, "Normal", "SucceededDaemonPod",
                    f"Found succeeded daemon pod {namespace_of(pod)}/{name_of(pod)} on "
                    f"node {node}, will try to delete it")
                delete.append(pod)
            else:
                running.append(pod)
        running.sort(key=_oldest_first)
        return running

    def _failed_pod_backoff(self, ds: Obj, node: str) -> float:
        """Seconds to wait before deleting another failed daemon pod on `node` (upstream's
        failedPodsBackoff: 1 s doubling to 15 min per DaemonSet generation and node,
        forgotten after 30 min without failures); 0 means delete it now."""
        key = f"{meta(ds).get('uid')}/{(ds.get('status') or {}).get('observedGeneration', 0)}" \
            f"/{node}"
        at = time.monotonic()
        delay, last = self._backoff.get(key, (0.0, 0.0))
        if delay and at - last < delay:
            return delay - (at - last)
        fresh = not delay or at - last > 2 * FAILED_POD_BACKOFF_MAX
        self._backoff[key] = (FAILED_POD_BACKOFF_START if fresh else
                              min(delay * 2, FAILED_POD_BACKOFF_MAX), at)
        return 0.0

    def _surge_excess(self, ds: Obj, running: list[Obj], hash_: str) -> list[Obj]:
        """With surge, a node keeps the oldest new pod and, while that one is not
        available yet, the oldest old pod if it is ready."""
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        out, oldest_new, oldest_old = [], None, None
        for pod in running:
            if (meta(pod).get("labels") or {}).get(HASH_LABEL) == hash_:
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            out.append(pod)
        if oldest_new is not None and oldest_old is not None and (
                not pod_is_ready(oldest_old) or pod_is_available(oldest_new, min_ready)):
            out.append(oldest_old)
        return out

    async def _sync_nodes(self, ds: Obj, delete: list[Obj], create: list[str],
                          hash_: str) -> None:
        key = key_of(ds)
        template = (ds.get("spec") or {}).get("template") or {}
        generation = template_generation(ds)
        for node in create[:BURST]:
            pod = self._new_pod(ds, template, node, hash_, generation)
            try:
                created = await self.client.create("v1", "pods", pod,
                                                   namespace=namespace_of(ds))
            except ApiError as e:
                if e.code == 403 and "is being terminated" in e.message:
                    return  # the namespace is going away: so will the DaemonSet
                await self.recorder.event(ds, "Warning", "FailedCreate",
                                          f"Error creating: {e.message}")
                raise
            self.expectations.expect_add(key, name_of(created))
            await self.recorder.event(ds, "Normal", "SuccessfulCreate",
                                      f"Created pod: {name_of(created)}")
        for pod in delete[:BURST]:
            try:
                await self.client.delete("v1", "pods", name_of(pod), namespace_of(pod))
            except ApiError as e:
                if e.code != 404:
                    raise
                continue
            self.expectations.expect_delete(key, name_of(pod))
            await self.recorder.event(ds, "Normal", "SuccessfulDelete",
                                      f"Deleted pod: {name_of(pod)}")

    def _new_pod(self, ds: Obj, template: Obj, node: str, hash_: str,
                 generation: str | None) -> Obj:
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        if generation is not None:
            labels[GENERATION_LABEL] = generation
        if hash_:
            labels[HASH_LABEL] = hash_
        md: Obj = {"generateName": f"{name_of(ds)}-", "namespace": namespace_of(ds),
                   "labels": labels, "ownerReferences": [owner_reference(ds)]}
        for field in ("annotations", "finalizers"):
            if tmeta.get(field):
                md[field] = copy.deepcopy(tmeta[field])
        spec = copy.deepcopy(template.get("spec") or {})
        spec["tolerations"] = daemon_tolerations(spec)
        spec["affinity"] = pin_to_node(spec.get("affinity"), node)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}

    async def _rolling_update(self, ds: Obj, nodes: list[Obj], hash_: str) -> None:
        node_pods = await self._node_to_pods(ds)
        desired = 0
        for node in nodes:
            if should_run(ds, node)[0]:
                desired += 1
                node_pods.setdefault(name_of(node), [])
        surge, max_unavailable = surge_and_unavailable(ds, desired)
        update = _Update(hash_, template_generation(ds),
                         int((ds.get("spec") or {}).get("minReadySeconds") or 0))
        if surge == 0:
            await self._sync_nodes(ds, update.without_surge(node_pods, max_unavailable), [],
                                   hash_)
            return
        runs = {name_of(n) for n in nodes if should_run(ds, n)[0]}
        to_delete, to_create = update.with_surge(node_pods, runs, surge, desired)
        await self._sync_nodes(ds, to_delete, to_create, hash_)

    async def _cleanup_history(self, ds: Obj, old: list[Obj]) -> None:
        limit = int((ds.get("spec") or {}).get("revisionHistoryLimit", 10))
        if len(old) <= limit:
            return
        node_pods = await self._node_to_pods(ds, include_terminal_deleted=True)
        live = {(meta(p).get("labels") or {}).get(HASH_LABEL) for pods in node_pods.values()
                for p in pods}
        await history.cleanup(self.client, old, limit, {h for h in live if h},
                              lambda r: (meta(r).get("labels") or {}).get(HASH_LABEL))

    async def _update_status(self, ds: Obj, nodes: list[Obj], hash_: str,
                             observed: bool) -> float | None:
        node_pods = await self._node_to_pods(ds)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        generation = template_generation(ds)
        desired = current = misscheduled = ready = updated = available = 0
        for node in nodes:
            run, _ = should_run(ds, node)
            pods = sorted(node_pods.get(name_of(node)) or [], key=_oldest_first)
            if run:
                desired += 1
                if not pods:
                    continue
                current += 1
                pod = pods[0]
                if pod_is_ready(pod):
                    ready += 1
                    if pod_is_available(pod, min_ready):
                        available += 1
                if pod_is_updated(pod, hash_, generation):
                    updated += 1
            elif pods:
                misscheduled += 1
        status = {"desiredNumberScheduled": desired, "currentNumberScheduled": current,
                  "numberMisscheduled": misscheduled, "numberReady": ready,
                  "updatedNumberScheduled": updated, "numberAvailable": available,
                  "numberUnavailable": desired - available}
        old = ds.get("status") or {}
        generation_seen = int(old.get("observedGeneration") or 0) >= int(
            meta(ds).get("generation") or 0)
        if not (all(int(old.get(k) or 0) == v for k, v in status.items()) and generation_seen):
            fresh = copy.deepcopy(ds)
            new_status = {k: v for k, v in old.items() if k in ("collisionCount", "conditions")}
            new_status.update({k: v for k, v in status.items() if v or k in (
                "desiredNumberScheduled", "currentNumberScheduled", "numberMisscheduled",
                "numberReady")})
            new_status["observedGeneration"] = (meta(ds).get("generation") or 1) if observed \
                else old.get("observedGeneration", 0)
            if not new_status["observedGeneration"]:
                del new_status["observedGeneration"]
            fresh["status"] = new_status
            try:
                await self.client.update("apps/v1", "daemonsets", fresh, subresource="status")
            except ApiError as e:
                if e.code != 404:
                    raise
        if min_ready and ready != available:
            return float(min_ready)
        return None


class _Update:
    """One rolling update pass over the nodes' daemon pods (upstream's rollingUpdate):
    which old pods to delete and on which nodes to create new ones."""

    def __init__(self, hash_: str, generation: Any, min_ready: int) -> None:
        self._hash = hash_
        self._generation = generation
        self._min_ready = min_ready

    def available(self, pod: Obj) -> bool:
        return pod_is_available(pod, self._min_ready)

    def split(self, pods: list[Obj]) -> tuple[Obj | None, Obj | None, bool]:
        """The node's new and old pod; False when it has more than one of either."""
        new = old = None
        for pod in pods:
            if meta(pod).get("deletionTimestamp"):
                continue
            if pod_is_updated(pod, self._hash, self._generation):
                if new is not None:
                    return None, None, False
                new = pod
            else:
                if old is not None:
                    return None, None, False
                old = pod
        return new, old, True

    def without_surge(self, node_pods: dict[str, list[Obj]], max_unavailable: int
                      ) -> list[Obj]:
        """maxSurge 0: old pods to delete, up to maxUnavailable unavailable at once (the
        unavailable old ones always)."""
        unavailable = 0
        allowed: list[Obj] = []
        candidates: list[Obj] = []
        for pods in node_pods.values():
            new, old, ok = self.split(pods)
            if not ok or (new is None) == (old is None):
                unavailable += 1
            elif new is not None:
                if not self.available(new):
                    unavailable += 1
            elif old is not None and not self.available(old):
                allowed.append(old)
                unavailable += 1
            elif unavailable < max_unavailable and old is not None:
                candidates.append(old)
        room = max(0, min(max_unavailable - unavailable, len(candidates)))
        return allowed + candidates[:room]

    def with_surge(self, node_pods: dict[str, list[Obj]], runs: set[str], surge: int,
                   desired: int) -> tuple[list[Obj], list[str]]:
        """maxSurge > 0: old pods to delete and nodes to surge a new pod onto, up to
        maxSurge new pods not available yet."""
        to_delete: list[Obj] = []
        not_run: list[Obj] = []
        candidate_nodes: list[str] = []
        allowed_nodes: list[str] = []
        surging = available_count = 0
        for node_name, pods in node_pods.items():
            new, old, ok = self.split(pods)
            if not ok:
                surging += 1
                continue
            if (old is not None and self.available(old)) or (
                    old is None and new is not None and self.available(new)):
                available_count += 1
            if old is None:
                continue
            if new is not None:
                if self.available(new):
                    to_delete.append(old)
                else:
                    surging += 1
            elif not self.available(old):
                if node_name in runs:
                    allowed_nodes.append(node_name)
                else:
                    to_delete.append(old)
            elif node_name not in runs:
                not_run.append(old)
            elif surging < surge:
                candidate_nodes.append(node_name)
        deletable = min(max(0, available_count - desired), len(not_run))
        to_delete.extend(not_run[:deletable])
        room = max(0, min(surge - surging, len(candidate_nodes)))
        return to_delete, allowed_nodes + candidate_nodes[:room]

