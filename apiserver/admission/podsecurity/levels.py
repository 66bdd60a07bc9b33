"""Levels, versions and a namespace's policy, from its `pod-security.kubernetes.io/*`
labels: `enforce`, `audit` and `warn` with a level (privileged, baseline, restricted),
each pinned by its `-version` label to `v1.N` or `latest` (the default). A bad enforce
label is an error that denies (restricted); bad audit and warn labels fail open
(privileged). Without a warn label, warn follows a stricter enforce, as upstream."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from draemu.api.errors import FieldError, invalid

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
PREFIX = "pod-security.kubernetes.io/"
ENFORCE, ENFORCE_VERSION = PREFIX + "enforce", PREFIX + "enforce-version"
AUDIT, AUDIT_VERSION = PREFIX + "audit", PREFIX + "audit-version"
WARN, WARN_VERSION = PREFIX + "warn", PREFIX + "warn-version"
_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


@dataclass(frozen=True, order=True)
class Version:
    """v1.N, or `latest` (newer than any v1.N)."""

    minor: int = 0
    latest: bool = False

    def __str__(self) -> str:
        return "latest" if self.latest else f"v1.{self.minor}"

    def older(self, other: Version) -> bool:
        if self.latest:
            return False
        return other.latest or self.minor < other.minor


LATEST = Version(latest=True)


@dataclass(frozen=True)
class LevelVersion:
    level: str
    version: Version = LATEST

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"

    def equivalent(self, other: LevelVersion) -> bool:
        return (self.level == PRIVILEGED and other.level == PRIVILEGED) or self == other


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion = LevelVersion(PRIVILEGED)
    audit: LevelVersion = LevelVersion(PRIVILEGED)
    warn: LevelVersion = LevelVersion(PRIVILEGED)

    def fully_privileged(self) -> bool:
        return PRIVILEGED == self.enforce.level == self.audit.level == self.warn.level

    def equivalent(self, other: Policy) -> bool:
        return self.enforce.equivalent(other.enforce) and self.audit.equivalent(other.audit) \
            and self.warn.equivalent(other.warn)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as level `a` is less strict, as strict or stricter than `b`."""
    return (LEVELS.index(a) > LEVELS.index(b)) - (LEVELS.index(a) < LEVELS.index(b))


def parse_level(text: str) -> str | None:
    return text if text in LEVELS else None


def parse_version(text: str) -> Version | None:
    if text == "latest":
        return LATEST
    match = _VERSION.match(text)
    return Version(int(match.group(1))) if match else None


@dataclass
class _Parsed:
    errors: list[FieldError] = field(default_factory=list)

    def level(self, labels: dict[str, str], key: str, on_error: str) -> str:
        value = labels[key]
        level = parse_level(value)
        if level is None:
            self.errors.append(invalid(f"metadata.labels[{key}]", value,
                                       "must be one of privileged, baseline, restricted"))
            return on_error
        return level

    def version(self, labels: dict[str, str], key: str) -> Version:
        value = labels[key]
        version = parse_version(value)
        if version is None:
            self.errors.append(invalid(f"metadata.labels[{key}]", value,
                                       'must be "latest" or "v1.x"'))
            return LATEST
        return version


def policy_of(labels: dict[str, str] | None, default: Policy | None = None
              ) -> tuple[Policy, list[FieldError]]:
    """The namespace's policy, and what is wrong with its labels."""
    default = default or Policy()
    if not labels:
        return default, []
    parsed = _Parsed()
    enforce, audit, warn = default.enforce, default.audit, default.warn
    has_enforce = False
    if ENFORCE in labels:
        before = len(parsed.errors)
        enforce = LevelVersion(parsed.level(labels, ENFORCE, RESTRICTED),
                               enforce.version)
        has_enforce = len(parsed.errors) == before
    if ENFORCE_VERSION in labels:
        enforce = LevelVersion(enforce.level, parsed.version(labels, ENFORCE_VERSION))
    if AUDIT in labels:
        audit = LevelVersion(parsed.level(labels, AUDIT, PRIVILEGED), audit.version)
    if AUDIT_VERSION in labels:
        audit = LevelVersion(audit.level, parsed.version(labels, AUDIT_VERSION))
    if WARN in labels:
        warn = LevelVersion(parsed.level(labels, WARN, PRIVILEGED), warn.version)
    if WARN_VERSION in labels:
        warn = LevelVersion(warn.level, parsed.version(labels, WARN_VERSION))
    if WARN not in labels and has_enforce and compare(enforce.level, warn.level) > 0:
        warn = LevelVersion(enforce.level,
                            warn.version if WARN_VERSION in labels else enforce.version)
    return Policy(enforce, audit, warn), parsed.errors
