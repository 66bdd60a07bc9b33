"""ControllerRevisions, the template history of DaemonSets and StatefulSets (upstream's
pkg/controller/history and the two controllers' snapshot code).

A revision stores the owner's pod template as a patch that replaces it
(`{"spec": {"template": {..., "$patch": "replace"}}}`), a revision number that grows with
each new template, and a name `<owner>-<hash>`; a template that comes back reuses its old
revision with a new number, so `kubectl rollout undo` finds it."""

from __future__ import annotations

import copy
from typing import Any

from draemu.api.meta import meta, name_of, namespace_of, owner_reference
from draemu.api.types import Obj
from draemu.client import ApiError, Client
from draemu.controllers.deployment import template_hash

API = "apps/v1"
RESOURCE = "controllerrevisions"
# Upstream's ControllerRevisionHashLabel on revisions; DaemonSets use the pods' label.
REVISION_HASH = "controller.kubernetes.io/hash"
POD_REVISION_HASH = "controller-revision-hash"
MAX_PREFIX = 223  # a revision name is at most 253 characters


def template_patch(owner: Obj) -> Obj:
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def matches(owner: Obj, revision: Obj) -> bool:
    return revision.get("data") == template_patch(owner)


def revision_number(revision: Obj) -> int:
    return int(revision.get("revision") or 0)


def revision_name(owner: Obj, hash_: str) -> str:
    return f"{name_of(owner)[:MAX_PREFIX]}-{hash_}"


def collision_count(owner: Obj) -> int:
    return int((owner.get("status") or {}).get("collisionCount") or 0)


def new_revision(owner: Obj, number: int, hash_label: str) -> Obj:
    """A revision of the owner's current template; `hash_label` is the label that
    carries the hash (the pods' label for DaemonSets, upstream's REVISION_HASH for
    StatefulSets)."""
    hash_ = template_hash((owner.get("spec") or {}).get("template") or {},
                          collision_count(owner))
    labels = dict((((owner.get("spec") or {}).get("template") or {}).get("metadata") or {})
                  .get("labels") or {})
    labels[hash_label] = hash_
    md: Obj = {"name": revision_name(owner, hash_), "namespace": namespace_of(owner),
               "labels": labels, "ownerReferences": [owner_reference(owner)]}
    if meta(owner).get("annotations"):  # both controllers copy the owner's annotations
        md["annotations"] = dict(meta(owner)["annotations"])
    return {"apiVersion": API, "kind": "ControllerRevision", "metadata": md,
            "data": template_patch(owner), "revision": number}


async def current_revision(client: Client, owner: Obj, owned: list[Obj], hash_label: str,
                           owner_resource: str) -> tuple[Obj, list[Obj]]:
    """The revision of the owner's current template (created, or renumbered to be the
    newest) and the older ones, oldest first. A name taken by another template bumps
    the owner's status.collisionCount and raises, so the next sync hashes anew."""
    current = [r for r in owned if matches(owner, r)]
    old = sorted((r for r in owned if not matches(owner, r)), key=revision_number)
    next_number = max((revision_number(r) for r in old), default=0) + 1
    if current:
        keep = max(current, key=revision_number)
        for extra in current:
            if extra is not keep:
                await _delete(client, extra)
        if revision_number(keep) < next_number:
            keep = copy.deepcopy(keep)
            keep["revision"] = next_number
            keep = await client.update(API, RESOURCE, keep)
        return keep, old
    wanted = new_revision(owner, next_number, hash_label)
    try:
        return await client.create(API, RESOURCE, wanted, namespace=namespace_of(owner)), old
    except ApiError as e:
        if e.code != 409:
            raise
    existing = await client.get(API, RESOURCE, name_of(wanted), namespace=namespace_of(owner))
    if matches(owner, existing):
        return existing, old
    fresh = await client.get(API, owner_resource, name_of(owner), namespace=namespace_of(owner))
    fresh.setdefault("status", {})["collisionCount"] = collision_count(fresh) + 1
    await client.update(API, owner_resource, fresh, subresource="status")
    raise ApiError(409, {"reason": "AlreadyExists", "message":
                         f"revision {name_of(wanted)} exists with another template; "
                         "collisionCount raised"})


async def cleanup(client: Client, old: list[Obj], limit: int, live_hashes: set[str],
                  hash_of: Any) -> None:
    """Delete the oldest revisions beyond `limit` that no live pod still uses."""
    excess = len(old) - limit
    for revision in sorted(old, key=revision_number):
        if excess <= 0:
            break
        if hash_of(revision) in live_hashes:
            continue
        await _delete(client, revision)
        excess -= 1


async def _delete(client: Client, revision: Obj) -> None:
    try:
        await client.delete(API, RESOURCE, name_of(revision), namespace_of(revision))
    except ApiError as e:
        if e.code != 404:
            raise
