"""get and list over HTTP: the query's selectors and list options, and the answers
(objects, Tables, PartialObjectMetadata, or the watch cache's serialized objects spliced
as they are). What a read sees is the generic store's (`genericregistry`)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from draemu.api.errors import not_found_error
from draemu.apiserver.endpoints import tables
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.listing import ListOptions, Selection
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.wire.codec import dumps, parse_int
from draemu.apiserver.wire.queryselectors import parse_field_selector, parse_label_selector


def selection(scope: Scope) -> Selection:
    """The `labelSelector` and `fieldSelector` parameters."""
    return Selection.of(scope.strategy, parse_label_selector(scope.query.get("labelSelector")),
                        parse_field_selector(scope.query.get("fieldSelector")), scope.version)


def list_options(scope: Scope) -> ListOptions:
    q = scope.query
    return ListOptions(parse_int(q.get("limit"), "limit") or 0, q.get("continue") or "",
                       q.get("resourceVersion") or "", q.get("resourceVersionMatch") or "")


async def get(scope: Scope, store: Store) -> web.Response:
    obj = await store.get(scope, scope.query.get("resourceVersion") or "")
    if obj is None:
        raise not_found_error(scope.resource.name, scope.resource.group, scope.name)
    if scope.accept.table:
        include = tables.include_object(scope.query.get("includeObject"))
        body = tables.table(scope.strategy, [obj], include=include, out=scope.out,
                            table_version=scope.accept.table,
                            metadata={"resourceVersion": obj["metadata"]["resourceVersion"]})
        return scope.respond(body)
    if scope.accept.partial_metadata:
        return scope.respond(scope.partial(obj))
    key = scope.resource.key(scope.namespace, scope.name)
    if scope.storage_shape and store.cache.get(key) is obj:
        return scope.respond_raw(store.cache.encoded(key, obj))
    return scope.respond(scope.out(obj))


async def list_(scope: Scope, store: Store) -> web.Response:
    page = await store.list(scope, selection(scope), list_options(scope))
    meta: dict[str, Any] = {"resourceVersion": str(page.revision)}
    if page.continue_token:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    if scope.accept.table:
        include = tables.include_object(scope.query.get("includeObject"))
        body = tables.table(scope.strategy, page.objects, include=include, out=scope.out,
                            table_version=scope.accept.table, metadata=meta)
        return scope.respond(body)
    if scope.accept.partial_metadata:
        return scope.respond({"kind": "PartialObjectMetadataList",
                              "apiVersion": f"meta.k8s.io/{scope.accept.partial_metadata}",
                              "metadata": meta,
                              "items": [scope.partial(o) for o in page.objects]})
    if scope.storage_shape and page.keys is not None:
        # Splice the cache's serialized objects: a 10k-item list costs no re-encoding.
        encoded = store.cache.encoded
        head = dumps({"kind": f"{scope.resource.kind}List", "apiVersion": scope.api_version,
                      "metadata": meta})
        items = b",".join(encoded(k, o) if k is not None else dumps(o)
                          for k, o in zip(page.keys, page.objects, strict=True))
        return scope.respond_raw(head[:-1] + b',"items":[' + items + b"]}")
    body = {"kind": f"{scope.resource.kind}List", "apiVersion": scope.api_version,
            "metadata": meta, "items": [scope.out(o) for o in page.objects]}
    return scope.respond(body)
