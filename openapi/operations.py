"""The REST operations of served kinds, described once for both OpenAPI documents.

For each strategy serving a group-version this yields the paths kube-apiserver
publishes (collection, item, all-namespaces list, legacy watch paths, subresources)
with one `Operation` per HTTP method: its action (`x-kubernetes-action`), kind, query
parameters, request body and response schemas. `documents.py` renders them as OpenAPI
v3, `swagger.py` as Swagger 2.0.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
PATCH_SCHEMA = META + "Patch"
STATUS_SCHEMA = META + "Status"
DELETE_OPTIONS = META + "DeleteOptions"
WATCH_EVENT = META + "WatchEvent"

# Subresources whose body is another kind: name -> (group, version, kind, verbs).
SUBRESOURCE_KINDS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "scale": ("autoscaling", "v1", "Scale", ("get", "update", "patch")),
    "binding": ("", "v1", "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
}
# Subresources that carry the kind itself.
SAME_KIND_VERBS = {"status": ("get", "update", "patch"), "finalize": ("update",),
                   "ephemeralcontainers": ("get", "update", "patch"),
                   "resize": ("get", "update", "patch")}

PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
               "application/merge-patch+json", "application/strategic-merge-patch+json")
RESPONSE_TYPES = ("application/json", "application/vnd.kubernetes.protobuf",
                  "application/yaml")
STREAM_TYPES = ("application/json;stream=watch",
                "application/vnd.kubernetes.protobuf;stream=watch")


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # string | integer | boolean
    description: str
    where: str = "query"


def _q(name: str, kind: str, description: str) -> Param:
    return Param(name, kind, description)


PRETTY = _q("pretty", "string", "If 'true', the output is pretty printed.")
DRY_RUN = _q("dryRun", "string", "When present (All), the request is validated and "
             "defaulted but nothing is persisted.")
FIELD_MANAGER = _q("fieldManager", "string", "Name of the actor making the change; "
                   "required for apply requests.")
FIELD_VALIDATION = _q("fieldValidation", "string", "How to treat unknown or duplicate "
                      "fields: Ignore, Warn (the default) or Strict.")
FORCE = _q("force", "boolean", "Apply only: take ownership of fields other managers own.")
LIST_PARAMS = (
    _q("allowWatchBookmarks", "boolean", "Ask for BOOKMARK events in a watch."),
    _q("continue", "string", "The continue token of the previous page of a paginated list."),
    _q("fieldSelector", "string", "Restrict the objects by their fields."),
    _q("labelSelector", "string", "Restrict the objects by their labels."),
    _q("limit", "integer", "Maximum number of objects in one page of a list."),
    _q("resourceVersion", "string", "The resource version the read starts from or must match."),
    _q("resourceVersionMatch", "string", "How resourceVersion is matched: Exact or "
       "NotOlderThan."),
    _q("sendInitialEvents", "boolean", "Start a watch with the current objects, then a "
       "bookmark."),
    _q("shardSelector", "string", "Restrict the objects to a shard of the collection."),
    _q("timeoutSeconds", "integer", "Timeout of a list or watch call."),
    _q("watch", "boolean", "Watch for changes instead of listing."),
)
DELETE_PARAMS = (
    DRY_RUN,
    _q("gracePeriodSeconds", "integer", "Seconds before the object is deleted; 0 deletes "
       "at once."),
    _q("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean",
       "Delete an object that cannot be read from storage."),
    _q("orphanDependents", "boolean", "Deprecated: use propagationPolicy."),
    _q("propagationPolicy", "string", "Garbage collection of dependents: Orphan, Background "
       "or Foreground."),
)
WRITE_PARAMS = (DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION)


@dataclass
class Operation:
    method: str  # get, post, put, patch, delete
    action: str  # x-kubernetes-action: get, list, watch, watchlist, post, put, patch, ...
    operation_id: str
    description: str
    gvk: dict[str, str]
    params: tuple[Param, ...] = ()
    body: str | None = None  # request body schema name
    body_types: tuple[str, ...] = ("*/*",)
    responses: dict[str, str | None] = field(default_factory=dict)  # code -> schema name
    response_types: tuple[str, ...] = RESPONSE_TYPES
    tag: str = ""


@dataclass
class PathItem:
    path: str
    params: tuple[Param, ...]
    operations: list[Operation] = field(default_factory=list)


def group_words(group: str) -> str:
    """`resource.k8s.io` -> `Resource`, `` -> `Core`, `apps` -> `Apps`."""
    first = group.split(".")[0] if group else "core"
    return "".join(p[:1].upper() + p[1:] for p in first.split("-"))


def tag(group: str, version: str) -> str:
    return f"{(group.split('.')[0] if group else 'core').replace('-', '_')}_{version}"


def prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def gvk_of(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def path_items(group: str, version: str, strategies: list[Any],
               schema_name: Any) -> list[PathItem]:
    """All path items of a group-version. `schema_name(group, version, kind)` names the
    schema of a kind (the documents make sure it exists)."""
    base = prefix(group, version)
    gv = group_words(group) + version[:1].upper() + version[1:]
    items = [PathItem(base + "/", (), [Operation(
        "get", "", f"get{gv}APIResources", "get available resources", {},
        responses={"200": META + "APIResourceList"})])]
    for strategy in sorted(strategies, key=lambda s: s.resource):
        items.extend(_resource_items(strategy, group, version, base, gv, schema_name))
    for item in items:
        for op in item.operations:
            op.tag = tag(group, version)
    return items


def _resource_items(s: Any, group: str, version: str, base: str, gv: str,
                    schema_name: Any) -> Iterator[PathItem]:
    kind, plural, verbs = s.kind, s.resource, set(s.verbs)
    gvk = gvk_of(group, version, kind)
    obj = schema_name(group, version, kind)
    lst = schema_name(group, version, kind + "List")
    scope = "Namespaced" if s.namespaced else ""
    ns = (Param("namespace", "string", "object name and auth scope, such as for teams and "
                "projects", "path"),) if s.namespaced else ()
    name = (Param("name", "string", f"name of the {kind}", "path"),)
    coll = f"{base}/namespaces/{{namespace}}/{plural}" if s.namespaced else f"{base}/{plural}"
    one = f"{coll}/{{name}}"
    read = {"200": obj}

    ops = []
    if "list" in verbs:
        ops.append(Operation("get", "list", f"list{gv}{scope}{kind}", f"list or watch objects "
                             f"of kind {kind}", gvk, LIST_PARAMS, responses={"200": lst},
                             response_types=RESPONSE_TYPES + STREAM_TYPES))
    if "create" in verbs:
        ops.append(Operation("post", "post", f"create{gv}{scope}{kind}", f"create a {kind}",
                             gvk, WRITE_PARAMS, obj, responses={"200": obj, "201": obj,
                                                                "202": obj}))
    if "deletecollection" in verbs:
        ops.append(Operation("delete", "deletecollection",
                             f"delete{gv}Collection{scope}{kind}",
                             f"delete collection of {kind}", gvk,
                             DELETE_PARAMS + LIST_PARAMS[1:-1], DELETE_OPTIONS,
                             responses={"200": STATUS_SCHEMA}))
    if ops:
        yield PathItem(coll, (*ns, PRETTY), ops)

    ops = []
    if "get" in verbs:
        ops.append(Operation("get", "get", f"read{gv}{scope}{kind}",
                             f"read the specified {kind}", gvk, responses=read))
    if "update" in verbs:
        ops.append(Operation("put", "put", f"replace{gv}{scope}{kind}",
                             f"replace the specified {kind}", gvk, WRITE_PARAMS, obj,
                             responses={"200": obj, "201": obj}))
    if "patch" in verbs:
        ops.append(_patch(f"patch{gv}{scope}{kind}", f"partially update the specified {kind}",
                          gvk, obj))
    if "delete" in verbs:
        ops.append(Operation("delete", "delete", f"delete{gv}{scope}{kind}",
                             f"delete a {kind}", gvk, DELETE_PARAMS, DELETE_OPTIONS,
                             responses={"200": obj, "202": obj}))
    if ops:
        yield PathItem(one, (*name, *ns, PRETTY), ops)

    if s.namespaced and "list" in verbs:
        yield PathItem(f"{base}/{plural}", (*LIST_PARAMS, PRETTY), [Operation(
            "get", "list", f"list{gv}{kind}ForAllNamespaces",
            f"list or watch objects of kind {kind}", gvk, responses={"200": lst},
            response_types=RESPONSE_TYPES + STREAM_TYPES)])
    if "watch" in verbs:
        yield from _watch_items(s, base, gv, gvk)

    for sub in sorted(s.subresources):
        yield from _subresource_items(s, sub, one, (*name, *ns, PRETTY), gv, gvk, obj,
                                      schema_name)


def _patch(operation_id: str, description: str, gvk: dict[str, str], obj: str) -> Operation:
    return Operation("patch", "patch", operation_id, description, gvk,
                     (*WRITE_PARAMS, FORCE), PATCH_SCHEMA, PATCH_TYPES,
                     responses={"200": obj, "201": obj})


def _watch_items(s: Any, base: str, gv: str, gvk: dict[str, str]) -> Iterator[PathItem]:
    """The deprecated `/watch/` paths kube-apiserver still publishes."""
    scope = "Namespaced" if s.namespaced else ""
    ns = (Param("namespace", "string", "object name and auth scope, such as for teams and "
                "projects", "path"),) if s.namespaced else ()
    coll = (f"{base}/watch/namespaces/{{namespace}}/{s.resource}" if s.namespaced
            else f"{base}/watch/{s.resource}")
    stream = RESPONSE_TYPES + STREAM_TYPES
    yield PathItem(coll, (*LIST_PARAMS, *ns, PRETTY), [Operation(
        "get", "watchlist", f"watch{gv}{scope}{s.kind}List",
        f"watch individual changes to a list of {s.kind}. deprecated: use the 'watch' "
        "parameter with a list operation instead.", gvk, responses={"200": WATCH_EVENT},
        response_types=stream)])
    name = Param("name", "string", f"name of the {s.kind}", "path")
    yield PathItem(f"{coll}/{{name}}", (*LIST_PARAMS, name, *ns, PRETTY), [Operation(
        "get", "watch", f"watch{gv}{scope}{s.kind}",
        f"watch changes to an object of kind {s.kind}. deprecated: use the 'watch' parameter "
        "with a list operation instead, filtered to a single item with the 'fieldSelector' "
        "parameter.", gvk, responses={"200": WATCH_EVENT}, response_types=stream)])
    if s.namespaced:
        yield PathItem(f"{base}/watch/{s.resource}", (*LIST_PARAMS, PRETTY), [Operation(
            "get", "watchlist", f"watch{gv}{s.kind}ListForAllNamespaces",
            f"watch individual changes to a list of {s.kind}. deprecated: use the 'watch' "
            "parameter with a list operation instead.", gvk, responses={"200": WATCH_EVENT},
            response_types=stream)])


def _subresource_items(s: Any, sub: str, one: str, params: tuple[Param, ...], gv: str,
                       gvk: dict[str, str], obj: str, schema_name: Any) -> Iterator[PathItem]:
    scope = "Namespaced" if s.namespaced else ""
    suffix = sub[:1].upper() + sub[1:]
    if sub in SUBRESOURCE_KINDS:
        g, v, k, verbs = SUBRESOURCE_KINDS[sub]
        body, sub_gvk = schema_name(g, v, k), gvk_of(g, v, k)
    elif sub in SAME_KIND_VERBS:
        verbs, body, sub_gvk = SAME_KIND_VERBS[sub], obj, gvk
    else:
        return
    ops = []
    base_id = f"{gv}{scope}{s.kind}{suffix}"
    if "get" in verbs:
        ops.append(Operation("get", "get", f"read{base_id}",
                             f"read {sub} of the specified {s.kind}", sub_gvk,
                             responses={"200": body}))
    if "create" in verbs:
        ops.append(Operation("post", "post", f"create{base_id}", f"create {sub} of a {s.kind}",
                             sub_gvk, WRITE_PARAMS, body,
                             responses={"200": body, "201": body, "202": body}))
    if "update" in verbs:
        ops.append(Operation("put", "put", f"replace{base_id}",
                             f"replace {sub} of the specified {s.kind}", sub_gvk,
                             WRITE_PARAMS, body, responses={"200": body, "201": body}))
    if "patch" in verbs:
        ops.append(_patch(f"patch{base_id}", f"partially update {sub} of the specified "
                          f"{s.kind}", sub_gvk, body))
    yield PathItem(f"{one}/{sub}", params, ops)
