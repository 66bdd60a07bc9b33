"""The API Priority and Fairness objects every kube-apiserver keeps, as v1.37's
`apis/flowcontrol/bootstrap` lists them (storage version, flowcontrol.apiserver.k8s.io/v1):

- mandatory: the `exempt` and `catch-all` PriorityLevelConfigurations and FlowSchemas,
  whose specs are fixed (validation refuses other specs, the config producer restores
  them and recreates them when deleted, and the classifier imagines them while they are
  missing);
- suggested: the levels and schemas for nodes, leader election, the control plane's
  own components, service accounts and everyone else; created when missing and kept
  up to date while their `apf.kubernetes.io/autoupdate-spec` annotation says "true".
"""

from __future__ import annotations

from typing import Any

from draemu.api.types import Obj

AUTO_UPDATE = "apf.kubernetes.io/autoupdate-spec"
EXEMPT = "exempt"
CATCH_ALL = "catch-all"

_ALL_RESOURCES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                  "namespaces": ["*"], "clusterScope": True}
_ALL_NON_RESOURCES = {"verbs": ["*"], "nonResourceURLs": ["*"]}


def _groups(*names: str) -> list[Obj]:
    return [{"kind": "Group", "group": {"name": n}} for n in names]


def _users(*names: str) -> list[Obj]:
    return [{"kind": "User", "user": {"name": n}} for n in names]


def _kube_system_accounts(*names: str) -> list[Obj]:
    return [{"kind": "ServiceAccount", "serviceAccount": {"name": n, "namespace": "kube-system"}}
            for n in names]


def _everything(subjects: list[Obj]) -> Obj:
    return {"subjects": subjects, "resourceRules": [dict(_ALL_RESOURCES)],
            "nonResourceRules": [dict(_ALL_NON_RESOURCES)]}


def _level(name: str, spec: Obj) -> Obj:
    return {"metadata": {"name": name, "annotations": {AUTO_UPDATE: "true"}}, "spec": spec}


def _limited(shares: int, lendable: int, queues: int = 0, hand: int = 0,
             queue_length: int = 0) -> Obj:
    response: Obj = {"type": "Reject"}
    if queues:
        response = {"type": "Queue", "queuing": {"queues": queues, "handSize": hand,
                                                  "queueLengthLimit": queue_length}}
    return {"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
                                           "lendablePercent": lendable,
                                           "limitResponse": response}}


def _schema(name: str, level: str, precedence: int, distinguisher: str,
            *rules: Obj) -> Obj:
    spec: Obj = {"priorityLevelConfiguration": {"name": level},
                 "matchingPrecedence": precedence, "rules": list(rules)}
    if distinguisher:
        spec["distinguisherMethod"] = {"type": distinguisher}
    return {"metadata": {"name": name, "annotations": {AUTO_UPDATE: "true"}}, "spec": spec}


_LEASES = {"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
           "resources": ["leases"], "namespaces": ["*"]}

MANDATORY_LEVELS: list[Obj] = [
    _level(CATCH_ALL, _limited(5, 0)),
    _level(EXEMPT, {"type": "Exempt",
                    "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
]
MANDATORY_SCHEMAS: list[Obj] = [
    _schema(EXEMPT, EXEMPT, 1, "", _everything(_groups("system:masters"))),
    _schema(CATCH_ALL, CATCH_ALL, 10000, "ByUser",
            _everything(_groups("system:unauthenticated", "system:authenticated"))),
]
SUGGESTED_LEVELS: list[Obj] = [
    _level("system", _limited(30, 33, 64, 6, 50)),
    _level("node-high", _limited(40, 25, 64, 6, 50)),
    _level("leader-election", _limited(10, 0, 16, 4, 50)),
    _level("workload-high", _limited(40, 50, 128, 6, 50)),
    _level("workload-low", _limited(100, 90, 128, 6, 50)),
    _level("global-default", _limited(20, 50, 128, 6, 50)),
]
SUGGESTED_SCHEMAS: list[Obj] = [
    _schema("system-nodes", "system", 500, "ByUser", _everything(_groups("system:nodes"))),
    _schema("system-node-high", "node-high", 400, "ByUser", {
        "subjects": _groups("system:nodes"),
        "resourceRules": [
            {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"],
             "namespaces": ["*"], "clusterScope": True},
            {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "namespaces": ["*"]}]}),
    _schema("probes", EXEMPT, 2, "", {
        "subjects": _groups("system:unauthenticated", "system:authenticated"),
        "nonResourceRules": [{"verbs": ["get"],
                              "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}),
    _schema("system-leader-election", "leader-election", 100, "ByUser", {
        "subjects": _users("system:kube-controller-manager", "system:kube-scheduler")
        + _kube_system_accounts("*"),
        "resourceRules": [dict(_LEASES)]}),
    _schema("kube-controller-manager", "workload-high", 800, "ByNamespace",
            _everything(_users("system:kube-controller-manager"))),
    _schema("kube-scheduler", "workload-high", 800, "ByNamespace",
            _everything(_users("system:kube-scheduler"))),
    _schema("kube-system-service-accounts", "workload-high", 900, "ByNamespace",
            _everything(_kube_system_accounts("*"))),
    _schema("service-accounts", "workload-low", 9000, "ByUser",
            _everything(_groups("system:serviceaccounts"))),
    _schema("global-default", "global-default", 9900, "ByUser",
            _everything(_groups("system:unauthenticated", "system:authenticated"))),
]

MANDATORY_LEVEL_SPECS: dict[str, Obj] = {o["metadata"]["name"]: o["spec"]
                                         for o in MANDATORY_LEVELS}
MANDATORY_SCHEMA_SPECS: dict[str, Obj] = {o["metadata"]["name"]: o["spec"]
                                          for o in MANDATORY_SCHEMAS}


def should_update_spec(obj: Obj) -> bool:
    """Upstream's ensurer: the annotation decides; without a readable one, an object
    nobody changed since it was made (generation 1) is kept up to date."""
    meta = obj.get("metadata") or {}
    value = (meta.get("annotations") or {}).get(AUTO_UPDATE)
    parsed = parse_bool(value)
    if parsed is not None:
        return parsed
    return meta.get("generation") == 1


def revise(current: Obj, wanted: Obj, mandatory: bool) -> Obj | None:
    """The object the config producer writes over `current`, or None when it is fine:
    a mandatory spec is always restored; a suggested one only under auto-update; the
    annotation is set to what was decided."""
    auto = True if mandatory else should_update_spec(current)
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    fix_annotation = parse_bool(annotations.get(AUTO_UPDATE)) != auto
    fix_spec = auto and not spec_equalish(wanted.get("spec") or {}, current.get("spec") or {})
    if not (fix_annotation or fix_spec):
        return None
    revised: dict[str, Any] = {**current, "metadata": {**current["metadata"]}}
    if fix_spec:
        revised["spec"] = wanted["spec"]
    if fix_annotation:
        revised["metadata"]["annotations"] = {**annotations, AUTO_UPDATE: str(auto).lower()}
    return revised


def spec_equalish(wanted: Obj, actual: Obj) -> bool:
    """Specs compare after defaulting (what the server stored may carry defaults the
    bootstrap objects leave out)."""
    return _strip(wanted) == _strip(actual)


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if v not in (None, [], {}, False)}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def parse_bool(value: Any) -> bool | None:
    """Go's strconv.ParseBool."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None
