"""Kubernetes' regex library (find, findAll) and the pattern compilation `matches`
shares (RE2, `draemu.cel.regex`)."""

from __future__ import annotations

from typing import Any

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.registry import register, want
from draemu.cel.regex import RegexError, compile_pattern


def compiled(pattern: str) -> Any:
    """RE2, as cel-go (linear time: no pattern can make a selector backtrack for ever)."""
    try:
        return compile_pattern(pattern)
    except RegexError as e:
        raise CELRuntimeError(str(e)) from None


@register("find", True, (1,), "string", ("string",),
          cost=costs.regex_cost, estimate=estimates.find_rule)
def find(s: str, pattern: str) -> str:
    want("find", s, str)
    m = compiled(pattern).search(s)
    return m.group(0) if m else ""


@register("findAll", True, (1, 2), "list", ("string",),
          cost=costs.regex_cost, estimate=estimates.find_rule)
def find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    want("findAll", s, str)
    found = [m.group(0) for m in compiled(pattern).finditer(s)]
    return found if limit < 0 else found[:limit]
