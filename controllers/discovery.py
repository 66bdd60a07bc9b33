"""What the apiserver serves, from its discovery documents: the resources the garbage
collector and the namespace controller must look at. A group-version whose document
cannot be read (an extension apiserver's that is not available: 503) is left out, as
client-go's discovery gives the groups it could read with ErrGroupDiscoveryFailed."""

from __future__ import annotations

from dataclasses import dataclass

from draemu.client import Client
from draemu.client.rest import ApiError

# Events are recorded about objects, never owned by them; watching them would only
# cost time (they are the most frequently written kind).
_SKIP = {("", "events"), ("events.k8s.io", "events")}


@dataclass(frozen=True)
class APIResource:
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    verbs: frozenset[str]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


async def _document(client: Client, group: str, version: str) -> dict:
    """The group-version's APIResourceList, empty when it cannot be read."""
    try:
        return await client.get_json(f"/apis/{group}/{version}" if group else "/api/v1")
    except ApiError as e:
        if group and e.code in (404, 503):
            return {}
        raise


async def preferred_resources(client: Client, *, verbs: set[str]) -> list[APIResource]:
    """Every top-level resource (no subresources) of each group's preferred version
    that supports all of `verbs`."""
    versions: list[tuple[str, str]] = [("", "v1")]
    groups = await client.get_json("/apis")
    for group in groups.get("groups") or []:
        preferred = (group.get("preferredVersion") or {}).get("version")
        if preferred:
            versions.append((group["name"], preferred))
    found: list[APIResource] = []
    for group, version in versions:
        doc = await _document(client, group, version)
        for r in doc.get("resources") or []:
            name = r.get("name", "")
            if "/" in name or (group, name) in _SKIP:
                continue
            rv = frozenset(r.get("verbs") or [])
            if verbs <= rv:
                found.append(APIResource(group, version, name, r.get("kind", ""),
                                         bool(r.get("namespaced")), rv))
    return found


async def served(client: Client) -> set[tuple[str, str]]:
    """(apiVersion, resource) of every top-level resource of every served version."""
    versions: list[tuple[str, str]] = [("", "v1")]
    groups = await client.get_json("/apis")
    for group in groups.get("groups") or []:
        for v in group.get("versions") or []:
            versions.append((group["name"], v["version"]))
    found: set[tuple[str, str]] = set()
    for group, version in versions:
        doc = await _document(client, group, version)
        api_version = f"{group}/{version}" if group else version
        for r in doc.get("resources") or []:
            if "/" not in r.get("name", ""):
                found.add((api_version, r["name"]))
    return found
