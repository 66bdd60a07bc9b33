"""Which checks a level runs at a version, and their results together.

Baseline runs the baseline checks; restricted runs the restricted ones and the baseline
ones no restricted check overrides, each check in the variant that applies at the
version (the newest whose version is not newer), baseline checks first, each group
ordered by ID, as upstream. `latest`, and a version newer than the newest check (or
than the emulated Kubernetes version), mean that newest one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from draemu.api.types import Obj
from draemu.apiserver.admission.podsecurity.checks import CHECKS, Check, CheckFn, CheckResult
from draemu.apiserver.admission.podsecurity.levels import (
    BASELINE,
    PRIVILEGED,
    RESTRICTED,
    LevelVersion,
    Version,
)

NEWEST = max(c.variants[-1].since for c in CHECKS)
_ORDER = [c.id for c in sorted(CHECKS, key=lambda c: (c.level != BASELINE, c.id))]


@dataclass(frozen=True)
class Aggregate:
    allowed: bool
    reasons: tuple[str, ...] = ()
    details: tuple[str, ...] = ()

    def reason(self) -> str:
        return ", ".join(self.reasons)

    def detail(self) -> str:
        return ", ".join(f"{r} ({d})" if d else r
                         for r, d in zip(self.reasons, self.details, strict=True))


def _variant(check: Check, version: Version):  # type: ignore[no-untyped-def]
    applicable = [var for var in check.variants if not version.older(var.since)]
    return applicable[-1] if applicable else None


@lru_cache(maxsize=256)
def checks_for(level: str, version: Version) -> tuple[CheckFn, ...]:
    chosen = {}
    overridden: set[str] = set()
    for check in CHECKS:
        if check.level == BASELINE or level == RESTRICTED:
            variant = _variant(check, version)
            if variant is not None:
                chosen[check.id] = variant.check
                if check.level == RESTRICTED:
                    overridden.update(variant.overrides)
    return tuple(chosen[i] for i in _ORDER if i in chosen and i not in overridden)


class Evaluator:
    def __init__(self, emulated: Version | None = None) -> None:
        self.newest = emulated if emulated is not None and emulated.older(NEWEST) else NEWEST

    def evaluate(self, lv: LevelVersion, meta: Obj, spec: Obj) -> Aggregate:
        if lv.level == PRIVILEGED:
            return Aggregate(True)
        version = self.newest if self.newest.older(lv.version) else lv.version
        results: list[CheckResult] = [check(meta, spec) for check in checks_for(lv.level, version)]
        failed = [r for r in results if not r.allowed]
        return Aggregate(not failed, tuple(r.reason or "unknown forbidden reason" for r in failed),
                         tuple(r.detail for r in failed))
