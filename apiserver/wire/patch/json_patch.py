"""JSON patch (RFC 6902, `application/json-patch+json`), applied with `jsonpatch`.

Errors are worded and coded as kube-apiserver words them: a patch document that is not
a list of operations is a 400, more than 10,000 operations a 413, and an operation that
does not apply (a failed `test`, a missing path) a 422 that leaves the object unchanged.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer

from draemu.api.errors import StatusError, bad_request
from draemu.apiserver.wire.jsoncopy import clone

MAX_OPERATIONS = 10000
_OPS = ("add", "remove", "replace", "move", "copy", "test")


def apply_json_patch(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    """`obj` patched by the operations `ops`; `obj` itself is not changed."""
    _check_document(ops)
    doc: Any = clone(obj)
    for op in ops:
        try:
            doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise _does_not_apply(op, exc, doc) from None
    if not isinstance(doc, dict):
        raise bad_request("json patch must produce an object")
    return doc


def _check_document(ops: Any) -> None:
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if len(ops) > MAX_OPERATIONS:
        raise StatusError(413, "RequestEntityTooLarge",
                          f"Request entity too large: The allowed maximum operations in a JSON "
                          f"patch is {MAX_OPERATIONS}, got {len(ops)}")
    for op in ops:
        if not isinstance(op, dict):
            raise bad_request("json: cannot unmarshal into Go value of type jsonpatch.Operation")
        kind = op.get("op")
        if kind not in _OPS:
            raise _unprocessable(f"Unexpected kind: {kind if kind is not None else 'unknown'}")
        if not isinstance(op.get("path"), str):
            raise _unprocessable(f"{kind} operation does not apply: missing path: missing value")
        if kind in ("move", "copy") and not isinstance(op.get("from"), str):
            raise _unprocessable(f"{kind} operation does not apply: missing from: missing value")
        if kind in ("add", "replace", "test") and "value" not in op:
            raise _unprocessable(f"{kind} operation does not apply: missing value: missing value")


def _does_not_apply(op: dict[str, Any], exc: Exception, doc: Any) -> StatusError:
    kind, path = op["op"], op["path"]
    if isinstance(exc, jsonpatch.JsonPatchTestFailed):
        return _unprocessable(f"testing value {path} failed: test failed")
    if kind in ("move", "copy") and _absent(doc, op["from"]):
        return _unprocessable(f"{kind} operation does not apply: doc is missing from path: "
                              f"{op['from']}: missing value")
    if kind == "replace":
        return _unprocessable(f"replace operation does not apply: doc is missing key: {path}: "
                              "missing value")
    if kind == "remove":
        return _unprocessable(f"remove operation does not apply: doc is missing path: "
                              f'"{path}": missing value')
    return _unprocessable(f'{kind} operation does not apply: doc is missing path: "{path}": '
                          f"missing value ({exc})")


def _absent(doc: Any, pointer: str) -> bool:
    try:
        jsonpointer.resolve_pointer(doc, pointer)
    except jsonpointer.JsonPointerException:
        return True
    return False


def _unprocessable(message: str) -> StatusError:
    return StatusError(422, "Invalid", message)
