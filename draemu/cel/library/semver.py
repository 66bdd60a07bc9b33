"""Kubernetes' semver library."""

from __future__ import annotations

import functools

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.registry import register, want
from draemu.cel.values import (
    Semver,
)


@register("semver", False, (1, 2), "semver",
          cost=costs.strings_traversal, estimate=estimates.arg_scan(estimates.STRING_FACTOR))
def semver(s: str, normalize: bool = False) -> Semver:
    want("semver", s, str)
    want("semver", normalize, bool)
    found = _parse(s, normalize)
    if isinstance(found, str):
        raise CELRuntimeError(f"could not parse semver: {found}")
    return found


@functools.lru_cache(maxsize=4096)
def _parse(s: str, normalize: bool) -> Semver | str:
    """The version, or why it is none (parsed once per text: versions are immutable)."""
    try:
        return Semver(s, normalize=normalize)
    except ValueError as e:
        return str(e)


@register("isSemver", False, (1, 2), "bool",
          cost=costs.strings_traversal, estimate=estimates.arg_scan(estimates.STRING_FACTOR))
def is_semver(s: str, normalize: bool = False) -> bool:
    want("isSemver", s, str)
    return not isinstance(_parse(s, bool(normalize)), str)


@register("major", True, (0,), "int", ("semver",), cost=1, estimate=estimates.fixed_rule(1))
def major(v: Semver) -> int:
    want("major", v, Semver)
    return v.major


@register("minor", True, (0,), "int", ("semver",), cost=1, estimate=estimates.fixed_rule(1))
def minor(v: Semver) -> int:
    want("minor", v, Semver)
    return v.minor


@register("patch", True, (0,), "int", ("semver",), cost=1, estimate=estimates.fixed_rule(1))
def patch(v: Semver) -> int:
    want("patch", v, Semver)
    return v.patch
