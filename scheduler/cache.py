"""The scheduler's view of nodes and the pods on them, fed by the node and pod informers.

A pod chosen for a node is *assumed* there at once (its requests count against the
node) so the next pod in the queue sees the node as it will be after binding; the
assumption is confirmed when the pod informer shows the pod bound, or forgotten if
binding fails.
"""

from __future__ import annotations

from draemu.scheduler.nodeinfo import NodeInfo


def _uid(pod: dict) -> str:
    return pod["metadata"]["uid"]


class Cache:
    def __init__(self) -> None:
        self._infos: dict[str, NodeInfo] = {}
        self._ready: dict[str, NodeInfo] = {}  # only nodes whose Node object we have
        self._order: list[str] = []  # stable order for round-robin filtering
        self._listed: list[NodeInfo] | None = None  # nodes() of the current node set
        self._pod_node: dict[str, str] = {}
        self._assumed: set[str] = set()
        # Names of the nodes with pods that have pod (anti-)affinity terms, and with pods
        # that have required anti-affinity terms (upstream's HavePodsWithAffinityList and
        # HavePodsWithRequiredAntiAffinityList): InterPodAffinity looks at these only
        # when the incoming pod has no terms, instead of at every node.
        self._with_affinity: dict[str, None] = {}
        self._with_anti_affinity: dict[str, None] = {}
        # Nodes with a PreferNoSchedule taint: with none, TaintToleration has nothing to
        # score, known without looking at the feasible nodes.
        self._prefer_no_schedule: dict[str, None] = {}

    def _info(self, name: str) -> NodeInfo:
        info = self._infos.get(name)
        if info is None:
            info = NodeInfo({"metadata": {"name": name}})
            self._infos[name] = info
        return info

    # --- nodes -------------------------------------------------------------------------

    def set_node(self, node: dict) -> None:
        name = node["metadata"]["name"]
        info = self._info(name)
        info.set_node(node)
        if any(t.get("effect") == "PreferNoSchedule" for t in info.taints):
            self._prefer_no_schedule[name] = None
        else:
            self._prefer_no_schedule.pop(name, None)
        if name not in self._ready:
            self._ready[name] = info
            self._order.append(name)
            self._listed = None

    def remove_node(self, name: str) -> None:
        self._prefer_no_schedule.pop(name, None)
        if self._ready.pop(name, None) is not None:
            self._order.remove(name)
            self._listed = None
        info = self._infos.get(name)
        if info is not None and not info.pods:
            del self._infos[name]

    def touch(self, name: str) -> None:
        """Something the plugins see of the node changed outside its NodeInfo (its DRA
        devices): its generation moves."""
        info = self._infos.get(name)
        if info is not None:
            info.touch()

    def nodes(self) -> list[NodeInfo]:
        """Every node, in a stable order (the list is shared: do not modify it)."""
        if self._listed is None:
            self._listed = [self._ready[n] for n in self._order]
        return self._listed

    def has_prefer_no_schedule_taints(self) -> bool:
        """Whether some node has a PreferNoSchedule taint."""
        return bool(self._prefer_no_schedule)

    def nodes_with_affinity(self) -> list[NodeInfo]:
        return [self._ready[n] for n in self._with_affinity if n in self._ready]

    def nodes_with_required_anti_affinity(self) -> list[NodeInfo]:
        return [self._ready[n] for n in self._with_anti_affinity if n in self._ready]

    def _track(self, info: NodeInfo) -> None:
        for names, pods in ((self._with_affinity, info.affinity_pods),
                            (self._with_anti_affinity, info.anti_affinity_pods)):
            if pods:
                names[info.name] = None
            else:
                names.pop(info.name, None)

    def node(self, name: str) -> NodeInfo | None:
        return self._ready.get(name)

    def __len__(self) -> int:
        return len(self._ready)

    # --- pods --------------------------------------------------------------------------

    def add_pod(self, pod: dict) -> None:
        """A pod the informer shows bound to a node (confirms an assumption)."""
        uid, node = _uid(pod), pod["spec"]["nodeName"]
        self._assumed.discard(uid)
        old = self._pod_node.get(uid)
        if old is not None and old != node:
            previous = self._info(old)
            previous.remove_pod(uid)
            self._track(previous)
        self._pod_node[uid] = node
        info = self._info(node)
        info.add_pod(pod)
        self._track(info)

    def remove_pod(self, pod: dict) -> None:
        uid = _uid(pod)
        self._assumed.discard(uid)
        node = self._pod_node.pop(uid, None)
        if node is not None:
            info = self._infos.get(node)
            if info is not None:
                info.remove_pod(uid)
                self._track(info)
                if not info.pods and node not in self._ready:
                    del self._infos[node]

    def assume(self, pod: dict, node_name: str) -> None:
        bound = dict(pod)
        bound["spec"] = {**pod["spec"], "nodeName": node_name}
        self.add_pod(bound)
        self._assumed.add(_uid(pod))

    def forget(self, pod: dict) -> None:
        if _uid(pod) in self._assumed:
            self.remove_pod(pod)
