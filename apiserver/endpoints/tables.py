"""Server-side printing: meta.k8s.io Table responses for `kubectl get`.

Columns and cells come from the kind's strategy; the handler fills age cells (the
`AGE` marker) from creationTimestamp at response time, as the upstream printers do.
Each row carries the object as PartialObjectMetadata by default (kubectl reads labels
from it), the full object with `includeObject=Object`, or nothing with `None`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draemu.api.errors import bad_request
from draemu.api.meta import human_duration, now, parse_time
from draemu.api.types import Obj
from draemu.apiserver.registry.strategy import AGE, Strategy


def age(obj: Obj) -> str:
    created = parse_time((obj.get("metadata") or {}).get("creationTimestamp") or "")
    if created is None:
        return "<unknown>"
    return human_duration((now() - created).total_seconds())


def include_object(value: str | None) -> str:
    value = value or "Metadata"
    if value not in ("Metadata", "Object", "None"):
        raise bad_request(f'includeObject: Unsupported value: "{value}": supported values: '
                          '"None", "Metadata", "Object"')
    return value


def _row_object(obj: Obj, include: str, out: Callable[[Obj], Obj], table_version: str
                ) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return out(obj)
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{table_version}",
            "metadata": obj.get("metadata") or {}}


def row(strategy: Strategy, obj: Obj, include: str, out: Callable[[Obj], Obj],
        table_version: str) -> dict[str, Any]:
    cells = [age(obj) if cell is AGE else cell for cell in strategy.table_row(obj)]
    result: dict[str, Any] = {"cells": cells}
    row_obj = _row_object(obj, include, out, table_version)
    if row_obj is not None:
        result["object"] = row_obj
    return result


def table(strategy: Strategy, objects: list[Obj], *, include: str, out: Callable[[Obj], Obj],
          table_version: str, metadata: dict[str, Any], headers: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Table", "apiVersion": f"meta.k8s.io/{table_version}",
                            "metadata": metadata}
    # In a watch only the first event carries the column definitions (kubectl prints
    # the header once).
    body["columnDefinitions"] = [c.definition() for c in strategy.table_columns()] \
        if headers else None
    body["rows"] = [row(strategy, o, include, out, table_version)
                    for o in strategy.table_sort(objects)]
    return body
