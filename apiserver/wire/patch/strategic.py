"""Strategic merge patch (`application/strategic-merge-patch+json`).

Like a JSON merge patch, except that a list whose schema says
`x-kubernetes-patch-strategy: merge` merges: items with a merge key
(`x-kubernetes-patch-merge-key`) merge item by item, primitive items are unioned.
The patch may carry directives, as kubectl's three-way patches do:

- `$patch: replace | delete | merge` in a map (or as a list item: `{"$patch": "replace"}`,
  `{"$patch": "delete", "<mergeKey>": value}`),
- `$retainKeys: [...]` — keys of the map to keep (fields with the `retainKeys` strategy),
- `$deleteFromPrimitiveList/<field>: [...]` — values to remove from a primitive list,
- `$setElementOrder/<field>: [...]` — the order of the list's items after the merge.

Lists without the merge strategy are replaced, even when their schema declares
`x-kubernetes-list-type: map`: upstream's strategic merge reads patch strategies only.
"""

from __future__ import annotations

from typing import Any

from draemu.api.errors import StatusError, bad_request
from draemu.apiserver.wire.jsoncopy import clone
from draemu.openapi.schemas.node import SchemaNode

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"

# Upstream's error texts (k8s.io/apimachinery/pkg/util/mergepatch).
BAD_JSON_DOC = "invalid JSON document"
NO_LIST_OF_LISTS = "lists of lists are not supported"
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
RETAIN_KEYS_MISMATCH = "patch content doesn't match retainKeys list"


def apply_strategic_merge_patch(obj: dict[str, Any], patch: Any,
                                schema: SchemaNode) -> dict[str, Any]:
    """`obj` patched by `patch`, guided by the kind's schema root
    (`draemu.openapi.schemas.patch_meta(...)`); `obj` itself is not changed."""
    if not isinstance(patch, dict):
        raise bad_request(BAD_JSON_DOC)
    return _merge_map(clone(obj), patch, schema)


def _unprocessable(message: str) -> StatusError:
    return StatusError(422, "Invalid", message)


def _is_directive(key: str) -> bool:
    return key.startswith("$")


def _merge_map(original: dict[str, Any], patch: dict[str, Any],
               node: SchemaNode) -> dict[str, Any]:
    directive = patch.get(PATCH)
    if directive == "replace":
        return clean(patch)
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise bad_request(f"unknown patch type: {directive} in map: {_go_map(patch)}")

    if RETAIN_KEYS in patch:
        original = _retain_keys(original, patch)
    server_lists = {}
    for key, values in patch.items():
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            _delete_from_primitive_list(original, key[len(DELETE_FROM_PRIMITIVE_LIST):], values)
        elif key.startswith(SET_ELEMENT_ORDER):
            name = key[len(SET_ELEMENT_ORDER):]
            if not isinstance(values, list):
                raise bad_request(BAD_ELEMENT_ORDER)
            server_lists[name] = list(original.get(name) or [])

    for key, value in patch.items():
        if _is_directive(key):
            continue
        if value is None:
            original.pop(key, None)
            continue
        child = node.field(key) or SchemaNode.open()
        original[key] = _merge_value(original.get(key), value, child)

    for name, server in server_lists.items():
        merged = original.get(name)
        if isinstance(merged, list):
            child = node.field(name) or SchemaNode.open()
            original[name] = _set_element_order(merged, patch[SET_ELEMENT_ORDER + name],
                                                server, child.patch_merge_key)
    return original


def _merge_value(current: Any, value: Any, node: SchemaNode) -> Any:
    if isinstance(value, dict):
        if isinstance(current, dict) and "replace" in node.patch_strategies:
            return clean(value)
        return _merge_map(current if isinstance(current, dict) else {}, value, node)
    if isinstance(value, list):
        if "merge" in node.patch_strategies:
            return _merge_list(current if isinstance(current, list) else [], value, node)
        return clean(value)
    return value


def _merge_list(original: list[Any], patch: list[Any], node: SchemaNode) -> list[Any]:
    if any(isinstance(item, list) for item in patch):
        raise _unprocessable(NO_LIST_OF_LISTS)
    if not any(isinstance(item, dict) for item in patch + original):
        merged = list(original)
        for item in patch:
            if item not in merged:
                merged.append(item)
        return merged

    merge_key = node.patch_merge_key
    items = node.items()
    if any(isinstance(i, dict) and i.get(PATCH) == "replace" for i in patch):
        return [clean(i) for i in patch if not (isinstance(i, dict) and PATCH in i)]
    result = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"expected map, but got {type(item).__name__}")
        directive = item.get(PATCH)
        if directive is not None and directive not in ("delete", "merge"):
            raise bad_request(f"unknown patch type: {directive} in map: {_go_map(item)}")
        if not merge_key or merge_key not in item:
            raise _unprocessable(f"map: {_go_map(item)} does not contain declared merge key: "
                                 f"{merge_key or ''}")
        key = item[merge_key]
        at = next((i for i, cur in enumerate(result)
                   if isinstance(cur, dict) and cur.get(merge_key) == key), None)
        if directive == "delete":
            result = [cur for cur in result
                      if not (isinstance(cur, dict) and cur.get(merge_key) == key)]
        elif at is None:
            result.append(_merge_map({}, item, items))
        else:
            result[at] = _merge_map(result[at], item, items)
    return result


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    keep = patch[RETAIN_KEYS]
    if not isinstance(keep, list):
        raise bad_request(BAD_RETAIN_KEYS)
    for key, value in patch.items():
        if not _is_directive(key) and value is not None and key not in keep:
            raise _unprocessable(RETAIN_KEYS_MISMATCH)
    return {k: v for k, v in original.items() if k in keep}


def _delete_from_primitive_list(original: dict[str, Any], name: str, values: Any) -> None:
    if not isinstance(values, list):
        raise bad_request(BAD_PRIMITIVE_LIST)
    current = original.get(name)
    if isinstance(current, list):
        original[name] = [v for v in current if v not in values]


def _set_element_order(merged: list[Any], order: list[Any], server: list[Any],
                       merge_key: str | None) -> list[Any]:
    """Items named in `order` come in that order; the others keep their server order and
    go before a named item only when the server had them before it."""
    def key(item: Any) -> Any:
        return item.get(merge_key) if isinstance(item, dict) and merge_key else item

    wanted = [key(o) for o in order]
    named = sorted((i for i in merged if key(i) in wanted), key=lambda i: wanted.index(key(i)))
    rest = [i for i in merged if key(i) not in wanted]
    server_keys = [key(i) for i in server]

    def server_index(item: Any) -> int:
        k = key(item)
        return server_keys.index(k) if k in server_keys else -1

    out: list[Any] = []
    i = j = 0
    while i < len(rest) or j < len(named):
        if j >= len(named):
            out.append(rest[i])
            i += 1
        elif i >= len(rest):
            out.append(named[j])
            j += 1
        else:
            left, right = server_index(rest[i]), server_index(named[j])
            if left >= 0 and right >= 0 and left < right:
                out.append(rest[i])
                i += 1
            else:
                out.append(named[j])
                j += 1
    return out


def clean(value: Any) -> Any:
    """A copy of a patch value without directives and without null map values."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items() if not _is_directive(k) and v is not None}
    if isinstance(value, list):
        return [clean(v) for v in value
                if not (isinstance(v, dict) and PATCH in v and len(v) == 1)]
    return value


def _go_map(value: dict[str, Any]) -> str:
    """A map printed as Go's %v prints one (keys sorted): map[a:1 b:x]."""
    def show(v: Any) -> str:
        if isinstance(v, dict):
            return _go_map(v)
        if isinstance(v, list):
            return "[" + " ".join(show(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        return "<nil>" if v is None else str(v)
    return "map[" + " ".join(f"{k}:{show(value[k])}" for k in sorted(value)) + "]"
