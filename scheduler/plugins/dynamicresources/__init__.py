"""DynamicResources: the scheduler's side of DRA, around the structured allocator.

- PreEnqueue: the pod's claims must exist (template claims are created by the
  resource-claim controller and named in the pod status), not be being deleted, and,
  when generated, belong to the pod; until then the pod is not tried.
- PreFilter: allocated claims only constrain the node through
  their `allocation.nodeSelector`; unallocated ones need existing DeviceClasses and must
  not be in the middle of being allocated for another pod.
- Filter: per node, allocated claims must be usable there and the allocator must find
  devices for the others, within the filter timeout (results are kept per node for
  Reserve, and reused across pods with the same claim specs while the node is unchanged:
  see `dra/allocationcache.py`).
- PostFilter (no node fits): deallocates one allocated claim that is unavailable (wrong
  node, binding failed or timed out) and reserved by nobody else, or else deletes a
  leftover extended-resource claim, so that the next attempt can allocate afresh.
- Score: for `firstAvailable` requests, earlier subrequests score higher.
- Reserve: the chosen allocations become *in flight*: the allocator counts their devices
  as taken, so concurrent pods never get the same device. Unreserve drops them, takes the
  pod out of `reservedFor` and deletes an extended-resource claim PreBind created.
- PreBind: writes the finalizer, `status.allocation` and `status.reservedFor` (retrying
  on conflicts) and waits for binding conditions.

Claims written here stay in flight until the claim informer shows their allocation.
If binding fails after PreBind, Unreserve takes the pod out of `reservedFor`; the claim
stays allocated, and if the pod fits nowhere else PostFilter deallocates it.

The package: `plugin.py` (the extension points), `claims.py` (a pod's claims as read from
the DRA manager), `claimwrites.py` (the API writes), `bindingconditions.py`, and
`podstate.py` (what one attempt keeps from PreFilter to PreBind).
"""

from draemu.scheduler.plugins.dynamicresources.claimwrites import FINALIZER, RESOURCE_V1
from draemu.scheduler.plugins.dynamicresources.plugin import DynamicResources, new

__all__ = ["FINALIZER", "RESOURCE_V1", "DynamicResources", "new"]
