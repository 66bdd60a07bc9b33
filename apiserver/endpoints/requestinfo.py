"""What a request path and method mean, as kube's RequestInfoFactory reads them.

`/apis/<group>/<version>[/watch][/namespaces/<ns>]/<resource>[/<name>[/<subresource>]]`
(and `/api/v1/...` for the core group); trailing slashes are ignored. A `proxy`
subresource may go on with a path of its own (`pods/web:8080/proxy/healthz`), which
its handler reads from the request.
"""

from __future__ import annotations

from dataclasses import dataclass

# Subresources of a namespace that are not namespaced resources of their own.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete",
          "GET": "get", "HEAD": "get"}


@dataclass(frozen=True)
class RequestInfo:
    path: str
    verb: str
    resource_request: bool = False
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    legacy_watch: bool = False


def parse(method: str, path: str, watch_param: bool) -> RequestInfo:
    parts = [p for p in path.split("/") if p]
    verb = _VERBS.get(method.upper(), method.lower())
    plain = RequestInfo(path, verb)
    if not parts or parts[0] not in ("api", "apis"):
        return plain
    if parts[0] == "api":
        if len(parts) < 3:
            return plain
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return plain
        group, version, rest = parts[1], parts[2], parts[3:]
    legacy_watch = False
    if rest[0] == "watch":
        legacy_watch = True
        rest = rest[1:]
        if not rest:
            return plain
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if len(rest) > 3 and subresource != "proxy":
        # Other deeper paths are not served: keep them unmatchable.
        subresource = "/".join(rest[2:])
    if legacy_watch or (verb == "get" and watch_param and not name):
        verb = "watch"
    elif verb == "get" and not name:
        verb = "list"
    elif verb == "delete" and not name:
        verb = "deletecollection"
    return RequestInfo(path, verb, True, group, version, namespace, resource, name,
                       subresource, legacy_watch)
