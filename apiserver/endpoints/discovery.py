"""API discovery: legacy documents (/api, /apis, /apis/<g>, /apis/<g>/<v>) and
aggregated discovery v2 (apidiscovery.k8s.io/v2), chosen by the Accept header.

v2beta1 is never served (as real 1.33+ servers): an Accept that offers only v2beta1
gets the legacy JSON, which old kubectl handles.
"""

from __future__ import annotations

from collections.abc import Sequence

from draemu.api.types import Obj
from draemu.apiserver.registry.resources import Resource, ResourceTable

V2_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

# Subresource -> (group, version, kind or "" for the parent's kind, verbs).
SUBRESOURCES: dict[str, tuple[str | None, str | None, str, tuple[str, ...]]] = {
    "status": (None, None, "", ("get", "patch", "update")),
    "scale": ("autoscaling", "v1", "Scale", ("get", "patch", "update")),
    "binding": ("", "v1", "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "finalize": (None, None, "", ("update",)),
    "approval": (None, None, "", ("get", "patch", "update")),
    "log": ("", "v1", "Pod", ("get",)),
    "exec": ("", "v1", "PodExecOptions", ("create", "get")),
    "attach": ("", "v1", "PodAttachOptions", ("create", "get")),
    "portforward": ("", "v1", "PodPortForwardOptions", ("create", "get")),
    # PodProxyOptions, ServiceProxyOptions: the parent's kind + "ProxyOptions".
    "proxy": ("", "v1", "", ("create", "delete", "get", "patch", "update")),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
}


# Subresources the handlers serve whatever the strategy declares.
HANDLER_SUBRESOURCES: dict[tuple[str, str], frozenset[str]] = {
    ("", "pods"): frozenset({"log", "exec", "attach", "portforward", "proxy"}),
    ("", "services"): frozenset({"proxy"})}


def subresources_of(r: Resource) -> frozenset[str]:
    return r.strategy.subresources | HANDLER_SUBRESOURCES.get((r.group, r.name), frozenset())


def _sub_kind(r: Resource, version: str, sub: str) -> tuple[str, str, str, tuple[str, ...]]:
    group, sub_version, kind, verbs = SUBRESOURCES.get(sub, (None, None, "", ("get",)))
    if sub == "proxy":
        kind = f"{r.kind}ProxyOptions"
    return (r.group if group is None else group, version if sub_version is None else
            sub_version, kind or r.kind, verbs)


def _singular(r: Resource) -> str:
    return r.strategy.singular or r.kind.lower()


def api_versions(server_address: str) -> Obj:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": server_address}]}


def _group_doc(name: str, versions: list[str]) -> Obj:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


# Extension apiservers' group-versions: (group, version, its APIResourceList or None
# while it is not Available), by priority.
Remote = Sequence[tuple[str, str, "Obj | None"]]


def _all_groups(table: ResourceTable, remote: Remote) -> dict[str, list[str]]:
    groups = table.groups()
    for group, version, _doc in remote:
        versions = groups.setdefault(group, [])
        if version not in versions:
            versions.append(version)
    return groups


def api_group_list(table: ResourceTable, remote: Remote = ()) -> Obj:
    groups = [_group_doc(g, vs) for g, vs in _all_groups(table, remote).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(table: ResourceTable, group: str, remote: Remote = ()
              ) -> Obj | None:
    versions = _all_groups(table, remote).get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def api_resource_list(table: ResourceTable, group: str, version: str) -> Obj | None:
    resources = table.in_group_version(group, version)
    if not resources:
        return None
    items: list[Obj] = []
    for r in sorted(resources, key=lambda r: r.name):
        entry: Obj = {"name": r.name, "singularName": _singular(r), "namespaced": r.namespaced,
                      "kind": r.kind, "verbs": sorted(r.strategy.verbs)}
        if r.strategy.short_names:
            entry["shortNames"] = list(r.strategy.short_names)
        if r.strategy.categories:
            entry["categories"] = list(r.strategy.categories)
        items.append(entry)
        for sub in sorted(subresources_of(r)):
            g, v, kind, verbs = _sub_kind(r, version, sub)
            sub_entry: Obj = {"name": f"{r.name}/{sub}", "singularName": "",
                              "namespaced": r.namespaced, "kind": kind, "verbs": list(verbs)}
            if g != group or v != version:
                sub_entry["group"], sub_entry["version"] = g, v
            items.append(sub_entry)
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": items}


def _aggregated_resource(r: Resource, version: str) -> Obj:
    out: Obj = {"resource": r.name,
                "responseKind": {"group": r.group, "version": version, "kind": r.kind},
                "scope": "Namespaced" if r.namespaced else "Cluster",
                "singularResource": _singular(r), "verbs": sorted(r.strategy.verbs)}
    if r.strategy.short_names:
        out["shortNames"] = list(r.strategy.short_names)
    if r.strategy.categories:
        out["categories"] = list(r.strategy.categories)
    subs = []
    for sub in sorted(subresources_of(r)):
        g, v, kind, verbs = _sub_kind(r, version, sub)
        subs.append({"subresource": sub, "responseKind": {"group": g, "version": v, "kind": kind},
                     "verbs": list(verbs)})
    if subs:
        out["subresources"] = subs
    return out


def _from_resource_list(doc: Obj, group: str, version: str) -> list[Obj]:
    """An extension apiserver's APIResourceList as aggregated discovery's resources
    (upstream's convertAPIResourceToDiscovery)."""
    out: dict[str, Obj] = {}
    entries = [e for e in doc.get("resources") or [] if isinstance(e, dict)]
    for e in entries:
        name = str(e.get("name") or "")
        if not name or "/" in name:
            continue
        entry: Obj = {"resource": name, "responseKind": {
            "group": e.get("group") or group, "version": e.get("version") or version,
            "kind": e.get("kind") or ""},
            "scope": "Namespaced" if e.get("namespaced") else "Cluster",
            "singularResource": e.get("singularName") or "", "verbs": e.get("verbs") or []}
        for key in ("shortNames", "categories"):
            if e.get(key):
                entry[key] = list(e[key])
        out[name] = entry
    for e in entries:
        parent, _, sub = str(e.get("name") or "").partition("/")
        if sub and parent in out:
            out[parent].setdefault("subresources", []).append({
                "subresource": sub, "verbs": e.get("verbs") or [], "responseKind": {
                    "group": e.get("group") or group, "version": e.get("version") or version,
                    "kind": e.get("kind") or ""}})
    return [out[name] for name in sorted(out)]


def _remote_items(remote: Remote) -> list[Obj]:
    items: dict[str, Obj] = {}
    for group, version, doc in remote:
        item = items.setdefault(group, {"metadata": {"name": group}, "versions": []})
        if doc is None:
            item["versions"].append({"version": version, "resources": [], "freshness": "Stale"})
        else:
            item["versions"].append({"version": version, "freshness": "Current",
                                     "resources": _from_resource_list(doc, group, version)})
    return list(items.values())


def aggregated(table: ResourceTable, core: bool, remote: Remote = ()
               ) -> Obj:
    """The APIGroupDiscoveryList of /api (core=True) or /apis."""
    items = []
    for group, versions in table.groups().items():
        if (group == "") != core:
            continue
        docs = []
        for v in versions:
            resources = sorted(table.in_group_version(group, v), key=lambda r: r.name)
            docs.append({"version": v, "resources": [_aggregated_resource(r, v)
                                                     for r in resources],
                         "freshness": "Current"})
        items.append({"metadata": {"name": group}, "versions": docs})
    if not core:
        local = {item["metadata"]["name"] for item in items}
        items += [i for i in _remote_items(remote) if i["metadata"]["name"] not in local]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}
