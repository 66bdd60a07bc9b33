"""What the four rbac.authorization.k8s.io/v1 kinds share: names that are path
segments, PolicyRule and Subject validation, upstream's defaults and Table cells."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, invalid, not_supported, required
from draemu.api.types import Obj
from draemu.apiserver.registry.meta import name_is_dns_subdomain
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    CREATED_AT_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)
from draemu.identity import UserInfo

GROUP = "rbac.authorization.k8s.io"


def path_segment_name(name: str, prefix: bool = False) -> list[str]:
    """RBAC names only need to be safe in a URL path (upstream's IsPathSegmentName)."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def validate_rule(rule: Obj, namespaced: bool, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not rule.get("verbs"):
        errs.append(required(path.child("verbs"), "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            errs.append(invalid(path.child("nonResourceURLs"), urls,
                                "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(invalid(path.child("nonResourceURLs"), urls, "rules cannot apply to "
                                "both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(required(path.child("apiGroups"),
                             "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(required(path.child("resources"),
                             "resource rules must supply at least one resource"))
    return errs


def validate_rules(obj: Obj, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(obj.get("rules") or []):
        errs += validate_rule(rule or {}, namespaced, Path("rules").index(i))
    return errs


def default_binding(obj: Obj) -> None:
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and not subject.get("apiGroup") and \
                subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = GROUP


def validate_subject(subject: Obj, namespaced: bool, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name, kind, group = subject.get("name") or "", subject.get("kind") or "", \
        subject.get("apiGroup") or ""
    if not name:
        errs.append(required(path.child("name"), ""))
    if kind == "ServiceAccount":
        if name:
            errs += [invalid(path.child("name"), name, msg)
                     for msg in name_is_dns_subdomain(name, False)]
        if group:
            errs.append(not_supported(path.child("apiGroup"), group, [""]))
        if not namespaced and not subject.get("namespace"):
            errs.append(required(path.child("namespace"), ""))
    elif kind in ("User", "Group"):
        if group != GROUP:
            errs.append(not_supported(path.child("apiGroup"), group, [GROUP]))
    else:
        errs.append(not_supported(path.child("kind"), kind, ["ServiceAccount", "User", "Group"]))
    return errs


def validate_binding(obj: Obj, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    ref = obj.get("roleRef") or {}
    path = Path("roleRef")
    if (ref.get("apiGroup") or "") != GROUP:
        errs.append(not_supported(path.child("apiGroup"), ref.get("apiGroup") or "", [GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.get("kind") not in kinds:
        errs.append(not_supported(path.child("kind"), ref.get("kind") or "", kinds))
    name = ref.get("name") or ""
    if not name:
        errs.append(required(path.child("name"), ""))
    else:
        errs += [invalid(path.child("name"), name, msg) for msg in path_segment_name(name)]
    for i, subject in enumerate(obj.get("subjects") or []):
        errs += validate_subject(subject or {}, namespaced, Path("subjects").index(i))
    return errs


def requester(ctx: Context) -> UserInfo:
    if isinstance(ctx.user_info, UserInfo):
        return ctx.user_info
    return UserInfo(ctx.user, groups=tuple(ctx.groups))


class RBACStrategy(Strategy):
    group = GROUP
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        return path_segment_name(name, prefix)


class RoleTable:
    """Kinds without a printer upstream get the default Table: Name and Created At."""

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN, CREATED_AT_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), meta.get("creationTimestamp")]


class BindingTable:
    def table_columns(self) -> list[Column]:
        what = "roleBinding" if self.namespaced else "clusterRoleBinding"  # type: ignore[attr-defined]
        return [NAME_COLUMN,
                Column("Role", description="RoleRef can reference a Role in the current "
                       "namespace or a ClusterRole in the global namespace."),
                AGE_COLUMN,
                Column("Users", priority=1, description=f"Users in the {what}"),
                Column("Groups", priority=1, description=f"Groups in the {what}"),
                Column("ServiceAccounts", priority=1,
                       description=f"ServiceAccounts in the {what}")]

    def table_row(self, obj: Obj) -> list[Any]:
        ref = obj.get("roleRef") or {}
        users, groups, accounts = [], [], []
        for s in obj.get("subjects") or []:
            kind = s.get("kind")
            if kind == "ServiceAccount":
                accounts.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
            elif kind == "User":
                users.append(s.get("name", ""))
            elif kind == "Group":
                groups.append(s.get("name", ""))
        return [(obj.get("metadata") or {}).get("name", ""),
                f"{ref.get('kind', '')}/{ref.get('name', '')}", AGE, ", ".join(users),
                ", ".join(groups), ", ".join(accounts)]
