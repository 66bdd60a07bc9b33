"""Which part of a false selector failed on a device, in plain words.

A selector such as `device.attributes["gpu.nvidia.com"].memory >= 85899345920 &&
device.attributes["gpu.nvidia.com"].cudaMajor >= 11` is false on a T4 because of its
first half only. `failing_clause` finds that half (the first top-level `&&` operand that
is false on the device); `plain` says it as a person would: "memory 16Gi, too small
(needs >= 80Gi)". Both evaluate with the allocator's CEL environment; anything they
cannot take apart (a `||`, a ternary, a macro) is returned whole, never guessed at.
"""

from __future__ import annotations

import re
from typing import Any

from draemu.cel import CELCompileError, CelDevice, CELRuntimeError, compile_derived
from draemu.cel import compile_expression as compile_selector

_COMPARISONS = ("==", "!=", ">=", "<=", ">", "<")
_MIRRORED = {">=": "<=", "<=": ">=", ">": "<", "<": ">"}
_OPENING, _CLOSING = "([{", ")]}"
_REFERENCE = re.compile(
    r"^device\.(?:attributes|capacity)\[\s*[\"']([^\"']+)[\"']\s*\]"
    r"(?:\s*\.\s*\??([A-Za-z_][A-Za-z0-9_]*)|\s*\[\s*\??\s*[\"']([^\"']+)[\"']\s*\])$")
_COMPARE_TO = re.compile(r"^(.+)\.\s*compareTo\s*\((.+)\)$", re.S)
_FIELD = re.compile(r"^device\.(driver|allowMultipleAllocations)$")
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20))


def _top_level(text: str) -> list[tuple[int, str]]:
    """(offset, operator) of the operators outside brackets and string literals: `&&`,
    `||`, `?` (a ternary, not `.?`/`[?`) and the comparisons."""
    found: list[tuple[int, str]] = []
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            i = _after_string(text, i)
            continue
        if c in _OPENING:
            depth += 1
        elif c in _CLOSING:
            depth -= 1
        elif depth == 0:
            two = text[i:i + 2]
            if two in ("&&", "||", "==", "!=", ">=", "<="):
                found.append((i, two))
                i += 2
                continue
            if c in "<>" or (c == "?" and text[i - 1:i] not in (".", "[")):
                found.append((i, c))
        i += 1
    return found


def _after_string(text: str, start: int) -> int:
    """The offset just past the string literal starting at `start` (raw prefixes need no
    care: a backslash then only ever precedes a character that is not the quote)."""
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    i = start + len(quote)
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        i += 1
    return len(text)


def conjuncts(expression: str) -> list[str]:
    """The operands of a top-level `&&` chain; the whole expression when it is not one
    (a top-level `||` or ternary binds looser than `&&`, so it is not split)."""
    ops = _top_level(expression)
    if any(op in ("||", "?") for _, op in ops):
        return [expression.strip()]
    parts, start = [], 0
    for offset, op in ops:
        if op == "&&":
            parts.append(expression[start:offset].strip())
            start = offset + 2
    parts.append(expression[start:].strip())
    return [p for p in parts if p]


def failing_clause(expression: str, device: CelDevice) -> str:
    """The first `&&` operand that is false on the device (the whole expression when it
    cannot be split, or when no single operand is false on its own), on one line."""
    parts = conjuncts(expression)
    if len(parts) > 1:
        for part in parts:
            try:
                if compile_selector(part).evaluate(device) is False:
                    return _one_line(part)
            except (CELCompileError, CELRuntimeError):
                continue
    return _one_line(expression)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def plain(clause: str, device: CelDevice) -> str:
    """A false comparison in words ("memory 16Gi, too small (needs >= 80Gi)",
    "model "Tesla-T4", not "H100""); "" when the clause is not a comparison of a value
    with another the device gives."""
    ops = [(offset, op) for offset, op in _top_level(clause) if op in _COMPARISONS]
    if len(ops) != 1 or len(_top_level(clause)) != 1:
        return ""
    offset, op = ops[0]
    left, right = clause[:offset].strip(), clause[offset + len(op):].strip()
    m = _COMPARE_TO.match(left)
    if m and right == "0":  # a.compareTo(b) >= 0 compares a with b
        left, right = m.group(1).strip(), m.group(2).strip()
    if not _is_reference(left) and _is_reference(right):  # 80 <= x reads as x >= 80
        left, right, op = right, left, _MIRRORED.get(op, op)
    have, wanted = _value(left, device), _value(right, device)
    if have is None or wanted is None:
        return ""
    name = _name(left)
    if op in (">=", ">") and _number(have) and _number(wanted):
        return f"{name} {_show(have)}, too small (needs {op} {_show(wanted)})"
    if op in ("<=", "<") and _number(have) and _number(wanted):
        return f"{name} {_show(have)}, too large (needs {op} {_show(wanted)})"
    if op == "==" and isinstance(have, bool):
        return f"{name}={_show(have)} (needs {_show(wanted)})"
    if op == "==":
        return f"{name} {_show(have)}, not {_show(wanted)}"
    return f"{name} {_show(have)} (needs {op} {_show(wanted)})"


def _value(text: str, device: CelDevice) -> Any:
    """What an operand evaluates to on the device: a scalar, a quantity as its integer
    (None: neither, or an error)."""
    for expression in (text, f"({text}).asInteger()"):
        try:
            attribute = compile_derived(expression).evaluate(device)
        except (CELCompileError, CELRuntimeError):
            continue
        if len(attribute) == 1 and not isinstance(value := next(iter(attribute.values())),
                                                  list):
            return value
    return None


def _is_reference(text: str) -> bool:
    return bool(_REFERENCE.match(text) or _FIELD.match(text))


def _name(text: str) -> str:
    m = _REFERENCE.match(text)
    if m:
        return m.group(2) or m.group(3)
    m = _FIELD.match(text)
    return m.group(1) if m else text


def _number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: Any) -> str:
    """A value as a person reads it: byte counts as quantities (80Gi), strings quoted,
    booleans in CEL's spelling."""
    if isinstance(value, bool):
        return str(value).lower()
    if _number(value) and value > 0:
        for suffix, unit in _BINARY:
            if value % unit == 0:
                return f"{value // unit}{suffix}"
        return str(value)
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
