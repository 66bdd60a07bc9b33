"""Reusing the allocator's answer for a node while nothing it depends on has changed.

The allocator is deterministic: for the same claim specs, the same devices, slices,
classes, taint rules and devices in use on a node, it gives the same answer. So Filter
keeps each answer with the *version* of the node it was computed on, and the next pod
with identical claims (pods from one template, or the same pod retried) only runs the
allocator on nodes whose version moved. A node's version moves when one of its slices,
labels, or the devices in use in its pools change; a global version moves when anything
that can matter to every node changes (classes, taint rules, slices not bound to one
node, allocations from such pools).

Unsatisfiable answers carry an explanation naming the claims, so they are reused whole
only for the same claims; for other claims of the same specs only the verdict is
(`unsatisfiable`), and Filter has the allocator explain it for them if asked. Answers
with share IDs (consumable capacity) are reused like any other: a share needs an ID no
other allocation of the device has, and an answer is reserved at most once, because
Reserve moves the version of the nodes of its devices' pools (DRAManager.assume),
which retires every answer kept for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_ENTRIES = 200_000
PoolID = tuple[str, str]
# `AllocationCache.verdict`'s answer for an unsatisfiable answer kept for other claims of
# the same specs (see `unsatisfiable`).
UNSATISFIABLE = object()


class NodeVersions:
    def __init__(self) -> None:
        self.global_version = 0
        self._node: dict[str, int] = {}
        # Told the name of every node whose version moves (see DRAManager.
        # follow_node_versions).
        self.listeners: list[Callable[[str], None]] = []
        self._pool_nodes: dict[PoolID, set[str]] = {}
        self._pool_unbound: dict[PoolID, int] = {}  # slices of the pool not bound to a node
        self._slice_pool: dict[str, tuple[PoolID, str | None]] = {}
        self._pool_node_slices: dict[tuple[PoolID, str], int] = {}

    def version(self, node: str) -> tuple[int, int]:
        return self.global_version, self._node.get(node, 0)

    @property
    def by_node(self) -> dict[str, int]:
        """Each node's version (absent: 0), live."""
        return self._node

    def node_version(self, node: str) -> int:
        return self._node.get(node, 0)

    def node_changed(self, node: str) -> None:
        self._node[node] = self._node.get(node, 0) + 1
        for listener in self.listeners:
            listener(node)

    def everything_changed(self) -> None:
        self.global_version += 1

    def _pool_changed(self, pool: PoolID) -> None:
        if self._pool_unbound.get(pool) or pool not in self._pool_nodes:
            self.everything_changed()
            return
        for node in self._pool_nodes[pool]:
            self.node_changed(node)

    def slice_set(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        self.slice_removed(name)
        spec = obj.get("spec") or {}
        pool: PoolID = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))
        node = spec.get("nodeName") or None
        self._slice_pool[name] = (pool, node)
        if node:
            self._pool_nodes.setdefault(pool, set()).add(node)
            self._pool_node_slices[(pool, node)] = self._pool_node_slices.get((pool, node), 0) + 1
        else:
            self._pool_unbound[pool] = self._pool_unbound.get(pool, 0) + 1
        self._pool_changed(pool)

    def slice_removed(self, name: str) -> None:
        entry = self._slice_pool.pop(name, None)
        if entry is None:
            return
        pool, node = entry
        self._pool_changed(pool)
        if node is None:
            self._pool_unbound[pool] -= 1
            if not self._pool_unbound[pool]:
                del self._pool_unbound[pool]
        else:
            self._pool_node_slices[(pool, node)] -= 1
            if not self._pool_node_slices[(pool, node)]:
                del self._pool_node_slices[(pool, node)]
                self._pool_nodes[pool].discard(node)
                if not self._pool_nodes[pool]:
                    del self._pool_nodes[pool]

    def allocation_changed(self, allocation: dict | None) -> None:
        """Devices of this allocation were taken or freed."""
        results = ((allocation or {}).get("devices") or {}).get("results") or []
        for pool in {(r.get("driver", ""), r.get("pool", "")) for r in results}:
            self._pool_changed(pool)


@dataclass(slots=True)
class _Entry:
    global_version: int
    node_version: int
    outcome: Any
    claims: tuple[str, ...]


class AllocationCache:
    def __init__(self, versions: NodeVersions) -> None:
        self._versions = versions
        # Each node's version, live (read for every (pod, node) pair: looked up once).
        self._node_versions = versions.by_node
        # claim specs (signature) -> node -> answer: Filter looks up the table of its
        # pod's specs once, then each node in it.
        self._tables: dict[str, dict[str, _Entry]] = {}
        self._size = 0
        self.hits = 0
        self.misses = 0

    def table(self, signature: str) -> dict[str, _Entry]:
        """The answers kept for these claim specs, for `lookup`."""
        table = self._tables.get(signature)
        if table is None:
            table = self._tables[signature] = {}
            self._size += 1  # a table counts as an entry: specs seen once add up too
        return table

    def get(self, signature: str, node: str, claims: tuple[str, ...]) -> Any | None:
        return self.lookup(self._tables.get(signature), node, claims)

    def lookup(self, table: dict[str, _Entry] | None, node: str,
               claims: tuple[str, ...]) -> Any | None:
        # Called for every (pod, node) pair: the version check is inlined.
        entry = table.get(node) if table is not None else None
        if entry is None or entry.global_version != self._versions.global_version or \
                entry.node_version != self._node_versions.get(node, 0) or (
                entry.outcome.results is None and entry.claims != claims):
            self.misses += 1
            return None
        self.hits += 1
        return entry.outcome

    def verdict(self, table: dict[str, _Entry], node: str, claims: tuple[str, ...]) -> Any:
        """`lookup` and `unsatisfiable` in one: the answer kept for these claims, else
        UNSATISFIABLE if the one kept for other claims of the specs says so, else None."""
        entry = table.get(node)
        if entry is None or entry.global_version != self._versions.global_version or \
                entry.node_version != self._node_versions.get(node, 0):
            self.misses += 1
            return None
        self.hits += 1
        if entry.outcome.results is None and entry.claims != claims:
            return UNSATISFIABLE
        return entry.outcome

    def unsatisfiable(self, signature: str, node: str) -> bool:
        """Whether the answer kept for the node says these claim specs cannot be allocated
        there, whichever claims it was computed for (the verdict does not depend on them:
        only the explanation, which names them, does)."""
        table = self._tables.get(signature)
        entry = table.get(node) if table is not None else None
        if entry is None or entry.outcome.results is not None or \
                entry.global_version != self._versions.global_version or \
                entry.node_version != self._node_versions.get(node, 0):
            return False
        self.hits += 1
        return True

    def put(self, signature: str, node: str, claims: tuple[str, ...], outcome: Any) -> None:
        if self._size >= MAX_ENTRIES:
            self._tables.clear()
            self._size = 0
        table = self.table(signature)
        if node not in table:
            self._size += 1
        global_version, node_version = self._versions.version(node)
        table[node] = _Entry(global_version, node_version, outcome, claims)
