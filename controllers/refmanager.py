"""Ownership of dependents by a controller (upstream's ControllerRefManager): a
controller adopts matching orphans and releases what it owns but no longer selects, so
that `claim` returns exactly the objects it is responsible for."""

from __future__ import annotations

from draemu.api.labels import matches as _matches
from draemu.api.meta import controller_of, meta, name_of, namespace_of, owner_reference, uid_of
from draemu.api.types import Obj
from draemu.client import ApiError, Client


def selects(selector: Obj | None, labels: dict[str, str] | None) -> bool:
    """A workload without a selector selects nothing; an empty one selects everything."""
    return selector is not None and _matches(selector, labels)


async def set_owner_refs(client: Client, api_version: str, resource: str, obj: Obj,
                         refs: list[Obj]) -> bool:
    """Patch `obj`'s ownerReferences (guarded by its uid); False if it is gone."""
    try:
        await client.patch(api_version, resource, name_of(obj), {"metadata": {
            "ownerReferences": refs or None, "uid": uid_of(obj)}},
            namespace=namespace_of(obj) or None)
        return True
    except ApiError as e:
        if e.code in (404, 409, 422):
            return False
        raise


async def claim(client: Client, owner: Obj, candidates: list[Obj], selector: Obj | None,
                api_version: str, resource: str) -> list[Obj]:
    """The candidates (objects of the owner's namespace) that `owner` controls after
    adopting matching orphans and releasing owned ones that stopped matching. An owner
    being deleted adopts nothing, nor does anyone adopt an object being deleted."""
    out = []
    uid = uid_of(owner)
    deleting = bool(meta(owner).get("deletionTimestamp"))
    for obj in candidates:
        ref = controller_of(obj)
        labels = meta(obj).get("labels")
        if ref is not None and ref.get("uid") == uid:
            if selects(selector, labels) or deleting:
                out.append(obj)
            else:
                await set_owner_refs(client, api_version, resource, obj, [
                    r for r in meta(obj).get("ownerReferences") or [] if r.get("uid") != uid])
        elif ref is None and not deleting and selects(selector, labels) and not meta(obj).get(
                "deletionTimestamp"):
            refs = [*(meta(obj).get("ownerReferences") or []), owner_reference(owner)]
            if await set_owner_refs(client, api_version, resource, obj, refs):
                out.append(obj)
    return out
