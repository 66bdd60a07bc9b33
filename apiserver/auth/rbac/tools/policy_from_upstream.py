"""Write `apiserver/auth/rbac/policy.json`, the bootstrap roles and bindings, from the facts
of upstream's bootstrap policy (the rendered lists a kubernetes source tree keeps in
`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/`, default feature gates).

    python apiserver/auth/rbac/tools/policy_from_upstream.py <kubernetes source dir>

The JSON keeps only what differs between objects: name, namespace, extra labels and
annotations, rules, aggregationRule, roleRef and subjects. The label
`kubernetes.io/bootstrapping: rbac-defaults` and the annotation
`rbac.authorization.kubernetes.io/autoupdate: "true"`, common to all, are added back by
`apiserver/auth/rbac/bootstrappolicy.py`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parent.parent / "policy.json"
FILES = {"clusterRoles": ["cluster-roles.yaml", "controller-roles.yaml"],
         "clusterRoleBindings": ["cluster-role-bindings.yaml", "controller-role-bindings.yaml"],
         "roles": ["namespace-roles.yaml"], "roleBindings": ["namespace-role-bindings.yaml"]}
COMMON_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
COMMON_ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def compact(item: dict[str, Any]) -> dict[str, Any]:
    meta = item["metadata"]
    out: dict[str, Any] = {"name": meta["name"]}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if COMMON_LABELS.get(k) != v}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if COMMON_ANNOTATIONS.get(k) != v}
    if labels:
        out["labels"] = labels
    if annotations:
        out["annotations"] = annotations
    for key in ("aggregationRule", "rules", "roleRef", "subjects"):
        if item.get(key) is not None:
            out[key] = item[key]
    return out


def main() -> None:
    testdata = Path(sys.argv[1]) / "plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata"
    policy: dict[str, list[dict[str, Any]]] = {}
    for key, files in FILES.items():
        policy[key] = [compact(item) for name in files
                       for item in yaml.safe_load((testdata / name).read_text())["items"]]
    OUT.write_text(json.dumps(policy, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main()
