"""/openapi/v3 (index with hashes, per-group-version documents) and /openapi/v2, built
by `draemu.openapi` from the served kinds' schemas and cached until the served kinds
change (a CustomResourceDefinition comes, changes or goes).

A document URL with the current `?hash=` is immutable (kubectl caches it); a stale
hash redirects to the current URL, as upstream does.

Building the documents can take seconds (a CRD with 10,000 properties: 2.1-2.4 s), so it
runs in a worker thread, once per generation of the served kinds however many requests
ask meanwhile; the event loop keeps answering others (/readyz) while it runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from aiohttp import web

from draemu.api.errors import StatusError
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.wire.codec import dumps

_IMMUTABLE = {"Cache-Control": "public, immutable", "Expires": "Thu, 31 Dec 2099 00:00:00 GMT"}


def _not_found() -> StatusError:
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


@lru_cache(maxsize=8)
def _documents(table: ResourceTable, generation: int) -> dict[str, tuple[bytes, str]]:
    """'api/v1' / 'apis/<g>/<v>' -> (JSON document, hash as the index advertises it)."""
    from draemu import openapi

    strategies = [r.strategy for r in table.resources]
    out: dict[str, tuple[bytes, str]] = {}
    for group, versions in table.groups().items():
        for version in versions:
            doc = openapi.openapi_v3_document(group, version, strategies)
            out[openapi.document_key(group, version)] = (
                dumps(doc), openapi.document_hash(group, version, strategies))
    return out


@lru_cache(maxsize=8)
def _index(table: ResourceTable, generation: int) -> bytes:
    from draemu import openapi

    return dumps(openapi.openapi_v3_index([r.strategy for r in table.resources]))


@lru_cache(maxsize=8)
def _v2(table: ResourceTable, generation: int) -> bytes:
    from draemu import openapi

    return dumps(openapi.openapi_v2_document([r.strategy for r in table.resources]))


@lru_cache(maxsize=8)
def _v2_protobuf(table: ResourceTable, generation: int) -> bytes:
    from draemu import openapi

    return openapi.openapi_v2_protobuf([r.strategy for r in table.resources])


def _v2_protobuf_type() -> str:
    from draemu import openapi

    return openapi.V2_PROTOBUF_CONTENT_TYPE


def _json(body: bytes, headers: dict[str, str] | None = None) -> web.Response:
    resp = web.Response(body=body, headers=headers)
    resp.headers["Content-Type"] = "application/json"
    return resp


def _legacy_hint(key: str, table: ResourceTable) -> str | None:
    """kubectl reads a group-version's document to validate a manifest of that version,
    before it finds out the kind is not served ("no matches for kind ... ensure CRDs are
    installed first"): the one moment to say that draemu serves the kind there when asked
    (resource.k8s.io/v1alpha3 of Kubernetes 1.31, `--legacy-v1alpha3`)."""
    _, _, group_version = key.partition("/")
    group, _, version = group_version.rpartition("/")
    missing = sorted(r.kind for r in table.resources if r.group == group
                     and version in r.strategy.legacy_versions
                     and version not in r.strategy.versions)
    if not missing:
        return None
    return (f"{group}/{version} {', '.join(missing)} (Kubernetes 1.31) are not served here: "
            f"start draemu up with --legacy-{version} for such manifests, or use {group}/v1")


_building: dict[tuple[Callable[..., Any], int, int], asyncio.Future[Any]] = {}


async def _built(build: Callable[[ResourceTable, int], Any], table: ResourceTable) -> Any:
    """`build(table, generation)` from its cache, or built in a worker thread (one build
    per generation, whoever asks while it runs)."""
    generation = table.generation
    key = (build, id(table), generation)
    pending = _building.get(key)
    if pending is None:
        pending = asyncio.ensure_future(asyncio.to_thread(build, table, generation))
        _building[key] = pending
        pending.add_done_callback(lambda _: _building.pop(key, None))
    return await asyncio.shield(pending)


async def respond(request: web.Request, path: str, table: ResourceTable) -> web.Response:
    if path == "/openapi/v3":
        return _json(await _built(_index, table))
    if path.startswith("/openapi/v3/"):
        key = path[len("/openapi/v3/"):]
        found = (await _built(_documents, table)).get(key)
        if found is None:
            raise _not_found()
        body, digest = found
        asked = request.query.get("hash")
        if asked and asked != digest:
            return web.Response(status=301,
                                headers={"Location": f"/openapi/v3/{key}?hash={digest}"})
        resp = _json(body, {**_IMMUTABLE, "ETag": f'"{digest}"'} if asked else
                     {"ETag": f'"{digest}"'})
        hint = _legacy_hint(key, table)
        if hint:
            resp.headers["Warning"] = f'299 - "{hint}"'
        return resp
    if path == "/openapi/v2":
        first = request.headers.get("Accept", "").split(",")[0]
        if "protobuf" in first:
            # kubectl <= 1.28 validates and explains with the gnostic protobuf form only.
            resp = web.Response(body=await _built(_v2_protobuf, table))
            resp.headers["Content-Type"] = _v2_protobuf_type()
            return resp
        return _json(await _built(_v2, table))
    raise _not_found()
