"""Allocations the scheduler reserved but the claim informer does not show yet.

Indexed by node: an allocation pinned to nodes by `nodeSelector` `metadata.name In [...]`
(every node-local device) only matters when allocating on those nodes, so Filter hands the
allocator the few entries that can matter instead of every pod's allocation in flight.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Flying:
    claim: dict  # the claim with the chosen `status.allocation`
    pod_uid: str  # the pod it is being allocated for
    nodes: frozenset[str] | None  # the nodes where it can matter; None = any node


def pinned_nodes(allocation: dict) -> frozenset[str] | None:
    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms")
    if not terms or len(terms) != 1 or terms[0].get("matchExpressions"):
        return None
    fields = terms[0].get("matchFields") or []
    names: set[str] | None = None
    for f in fields:
        if f.get("key") != "metadata.name" or f.get("operator") != "In":
            return None
        values = set(f.get("values") or [])
        names = values if names is None else names & values
    return frozenset(names) if names is not None else None


class InFlight:
    def __init__(self) -> None:
        self._entries: dict[str, Flying] = {}
        self._by_node: dict[str, set[str]] = {}
        self._anywhere: set[str] = set()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Flying | None:
        return self._entries.get(key)

    def add(self, key: str, claim: dict, pod_uid: str) -> None:
        self.pop(key)
        nodes = pinned_nodes(claim["status"]["allocation"])
        self._entries[key] = Flying(claim, pod_uid, nodes)
        if nodes is None:
            self._anywhere.add(key)
        else:
            for node in nodes:
                self._by_node.setdefault(node, set()).add(key)

    def pop(self, key: str) -> Flying | None:
        flying = self._entries.pop(key, None)
        if flying is None:
            return None
        if flying.nodes is None:
            self._anywhere.discard(key)
        else:
            for node in flying.nodes:
                keys = self._by_node.get(node)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._by_node[node]
        return flying

    def rekey(self, old: str, new: str) -> None:
        flying = self.pop(old)
        if flying is not None:
            self.add(new, flying.claim, flying.pod_uid)

    def for_node(self, node: str, exclude_pod: str) -> list[dict]:
        """Claims of other pods whose allocation can matter on `node`."""
        keys = self._anywhere | self._by_node.get(node, set())
        return [f.claim for k in keys if (f := self._entries[k]).pod_uid != exclude_pod]
