"""Which FlowSchema a request matches (upstream's util/flowcontrol/rule.go), compiled
once per configuration into sets so that classifying a request costs a few set
lookups: subjects by user name, group and service account; resource rules by verb,
API group, resource[/subresource] and namespace (or cluster scope); non-resource rules
by verb and URL (exact, or anything below it: `/healthz` also matches `/healthz/etcd`,
`/apis/*` everything under `/apis/`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from draemu.api.types import Obj
from draemu.apiserver.endpoints.requestinfo import RequestInfo
from draemu.identity import UserInfo

_SA_PREFIX = "system:serviceaccount:"
# Sets standing for "every value" (upstream's single-element "*" lists).
ALL: frozenset[str] = frozenset({"\0*"})


def _members(values: Any, wildcard: str = "*") -> frozenset[str]:
    items = [str(v) for v in values or []]
    if items == [wildcard]:
        return ALL
    return frozenset(items)


def _has(members: frozenset[str], value: str) -> bool:
    return members is ALL or value in members


@dataclass(frozen=True)
class ResourceRule:
    verbs: frozenset[str]
    groups: frozenset[str]
    resources: frozenset[str]
    namespaces: frozenset[str]
    cluster_scope: bool

    def matches(self, info: RequestInfo) -> bool:
        if not _has(self.verbs, info.verb):
            return False
        resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
        if not _has(self.resources, resource) or not _has(self.groups, info.group):
            return False
        if not info.namespace:
            return self.cluster_scope
        return _has(self.namespaces, info.namespace)


@dataclass(frozen=True)
class NonResourceRule:
    verbs: frozenset[str]
    urls: frozenset[str]
    prefixes: tuple[str, ...]

    def matches(self, info: RequestInfo) -> bool:
        if not _has(self.verbs, info.verb):
            return False
        path = info.path
        return _has(self.urls, path) or path.startswith(self.prefixes)


@dataclass(frozen=True)
class Subjects:
    users: frozenset[str]
    groups: frozenset[str]
    # Exact service-account user names, and namespaces whose every account matches.
    accounts: frozenset[str]
    account_namespaces: frozenset[str]

    def matches(self, user: UserInfo) -> bool:
        if _has(self.users, user.name) or self.groups is ALL:
            return True
        if self.groups and not self.groups.isdisjoint(user.groups):
            return True
        if user.name.startswith(_SA_PREFIX):
            if user.name in self.accounts:
                return True
            rest = user.name[len(_SA_PREFIX):]
            namespace, sep, _ = rest.partition(":")
            return bool(sep) and namespace in self.account_namespaces
        return False


@dataclass(frozen=True)
class Rule:
    subjects: Subjects
    resource_rules: tuple[ResourceRule, ...]
    non_resource_rules: tuple[NonResourceRule, ...]

    @property
    def everything(self) -> bool:
        """Every request (most bootstrap schemas): no need to look at it."""
        return any(r.verbs is ALL and r.groups is ALL and r.resources is ALL and
                   r.namespaces is ALL and r.cluster_scope for r in self.resource_rules) and \
            any(r.verbs is ALL and r.urls is ALL for r in self.non_resource_rules)

    def matches_request(self, info: RequestInfo) -> bool:
        if info.resource_request:
            return any(r.matches(info) for r in self.resource_rules)
        return any(r.matches(info) for r in self.non_resource_rules)


@dataclass(frozen=True)
class Schema:
    """One FlowSchema, compiled."""

    name: str
    uid: str
    level: str
    precedence: int
    distinguisher: str  # "ByUser", "ByNamespace" or ""
    rules: tuple[Rule, ...]

    def subject_rules(self, user: UserInfo) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.subjects.matches(user))

    def distinguish(self, user: UserInfo, info: RequestInfo) -> str:
        if self.distinguisher == "ByUser":
            return user.name
        if self.distinguisher == "ByNamespace":
            return info.namespace
        return ""


def compile_schema(obj: Obj) -> Schema:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    rules = []
    for rule in spec.get("rules") or []:
        users, groups, accounts, account_namespaces = [], [], [], []
        for subject in rule.get("subjects") or []:
            kind = subject.get("kind")
            if kind == "User":
                users.append((subject.get("user") or {}).get("name", ""))
            elif kind == "Group":
                groups.append((subject.get("group") or {}).get("name", ""))
            elif kind == "ServiceAccount":
                sa = subject.get("serviceAccount") or {}
                if sa.get("name") == "*":
                    account_namespaces.append(sa.get("namespace", ""))
                else:
                    accounts.append(f"{_SA_PREFIX}{sa.get('namespace', '')}:{sa.get('name', '')}")
        subjects = Subjects(ALL if "*" in users else frozenset(users),
                            ALL if "*" in groups else frozenset(groups),
                            frozenset(accounts), frozenset(account_namespaces))
        resource_rules = tuple(
            ResourceRule(_members(r.get("verbs")), _members(r.get("apiGroups")),
                         _members(r.get("resources")), _members(r.get("namespaces")),
                         bool(r.get("clusterScope")))
            for r in rule.get("resourceRules") or [])
        non_resource_rules = []
        for r in rule.get("nonResourceRules") or []:
            urls = [str(u) for u in r.get("nonResourceURLs") or []]
            prefixes = []
            for url in urls:
                prefix = url[:-1] if url.endswith("*") else url
                prefixes.append(prefix if prefix.endswith("/") else prefix + "/")
            non_resource_rules.append(NonResourceRule(
                _members(r.get("verbs")), ALL if "*" in urls else frozenset(urls),
                () if "*" in urls else tuple(prefixes)))
        rules.append(Rule(subjects, resource_rules, tuple(non_resource_rules)))
    method = spec.get("distinguisherMethod")
    return Schema(meta.get("name", ""), meta.get("uid", ""),
                  (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
                  int(spec.get("matchingPrecedence") or 0),
                  method.get("type", "") if isinstance(method, dict) else "", tuple(rules))


class Classifier:
    """The schemas in matching order; the rules whose subjects match a user are kept per
    user (a cluster has few identities, each sending many requests)."""

    MAX_USERS = 4096

    def __init__(self, schemas: list[Schema]) -> None:
        self.schemas = sorted(schemas, key=lambda s: (s.precedence, s.name))
        # user -> (schema, its rules matching the user's subjects, any of them
        # matching every request), in matching order.
        self._by_user: dict[tuple[str, tuple[str, ...]],
                            tuple[tuple[Schema, tuple[Rule, ...], bool], ...]] = {}

    def classify(self, user: UserInfo, info: RequestInfo) -> Schema | None:
        key = (user.name, user.groups)
        candidates = self._by_user.get(key)
        if candidates is None:
            if len(self._by_user) >= self.MAX_USERS:
                self._by_user.clear()
            candidates = self._by_user[key] = tuple(
                (s, rules, any(r.everything for r in rules))
                for s in self.schemas if (rules := s.subject_rules(user)))
        for schema, rules, everything in candidates:
            if everything:
                return schema
            for rule in rules:
                if rule.matches_request(info):
                    return schema
        return None
