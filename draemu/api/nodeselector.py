"""core/v1 NodeSelector matching: terms are ORed, requirements inside a term ANDed.

Used by the scheduler's NodeAffinity plugin (pod affinity to nodes) and DynamicResources
(the `nodeSelector` of a claim's allocation), and by the DaemonSet controller (which
nodes should run a daemon pod). An empty term matches nothing, as upstream.
"""

from __future__ import annotations


def _int(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def requirement_matches(values_by_key: dict[str, str], req: dict) -> bool:
    key, op = req.get("key", ""), req.get("operator", "")
    values = req.get("values") or []
    present = key in values_by_key
    if op == "In":
        return present and values_by_key[key] in values
    if op == "NotIn":
        return not present or values_by_key[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        have, want = _int(values_by_key[key]), _int(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def term_matches(term: dict, labels: dict[str, str], node_name: str) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(requirement_matches(labels, r) for r in exprs):
        return False
    return all(requirement_matches({"metadata.name": node_name}, r) for r in fields)


def selector_matches(selector: dict, labels: dict[str, str], node_name: str) -> bool:
    return any(term_matches(t, labels, node_name)
               for t in selector.get("nodeSelectorTerms") or [])


def pod_fits_node(spec: dict, node: dict) -> bool:
    """A pod spec's `nodeSelector` and required node affinity against a Node (upstream's
    RequiredNodeAffinity.Match)."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    return required is None or selector_matches(required, labels, meta.get("name", ""))
