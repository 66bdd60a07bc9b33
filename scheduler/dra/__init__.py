"""The structured DRA allocator and the explanation of its decisions.

    inv = Inventory(gates)                      # long-lived, fed by informer events
    outcome = Allocator(inv).allocate(node, claims, in_flight=...)
    outcome.results / outcome.unsatisfiable / outcome.error / outcome.explanation

The scheduler keeps its DRA state in one `manager.DRAManager` (the inventory, the
claims, allocations in flight, node versions and the answers kept for them), shared by
its plugins.
"""

from draemu.scheduler.dra.allocator import AllocationOutcome, Allocator
from draemu.scheduler.dra.explain import DeviceReport, Explanation, RequestReport
from draemu.scheduler.dra.inventory import Inventory, claim_key

__all__ = ["AllocationOutcome", "Allocator", "DeviceReport", "Explanation", "Inventory",
           "RequestReport", "claim_key"]
