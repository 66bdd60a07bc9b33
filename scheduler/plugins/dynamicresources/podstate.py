"""What DynamicResources keeps for one pod's scheduling attempt, from PreFilter to PreBind
(its CycleState entry), and the keys it names claims by."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draemu.scheduler.dra import Allocator
from draemu.scheduler.dra.extendedresources import ResourceRequest


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def extended_key(pod_uid: str) -> str:
    """In-flight key of a pod's extended-resource claim until it exists (and has a uid)."""
    return f"extended-resources/{pod_uid}"


class PreBindError(Exception):
    """PreBind cannot finish: the scheduler runs Unreserve and retries the pod."""


@dataclass
class PodState:
    claims: list[dict]  # the pod's claims, in pod order (one per needed entry)
    to_allocate: list[int]  # indices into claims of those needing an allocation
    selectors: list[tuple[int, dict]] = field(default_factory=list)  # allocated: index, selector
    # Allocated claims unusable on any node: binding failed or timed out.
    not_ready: list[int] = field(default_factory=list)
    # Allocated claims some node turned down (Filter), for PostFilter to deallocate.
    unavailable: set[int] = field(default_factory=set)
    # The extended-resource claim of an earlier attempt (named in the pod status), if any.
    extended_claim: int | None = None
    created_extended: dict | None = None  # the extended-resource claim PreBind created
    results: dict[str, list[dict]] = field(default_factory=dict)  # node -> allocations
    to_allocate_claims: list[dict] = field(default_factory=list)  # claims[i], i in to_allocate
    allocator: Allocator | None = None  # built once per attempt, used for every node
    signature: str = ""  # the claim specs to allocate ("" = do not use the cache)
    claim_ids: tuple[str, ...] = ()
    # The allocation cache's answers for those specs, when Filter needs nothing else.
    cache_table: dict[str, Any] | None = None
    extended: list[ResourceRequest] = field(default_factory=list)  # DRA-backed candidates
    # node -> the in-memory claim for extended resources there, and what it serves
    extended_claims: dict[str, tuple[dict, list[ResourceRequest]]] = field(
        default_factory=dict)
