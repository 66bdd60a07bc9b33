"""The JSONPath subset printer columns and scale paths use (client-go's `jsonpath` in
`{...}`): `.a.b`, `.a[0]`, `.a[*].b`, `.a['key.with.dots']`, `[?(@.type=="Ready")]`,
missing keys allowed."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

Step = tuple[str, Any]

_TOKEN = re.compile(
    r"""\.\.?(?P<name>[A-Za-z0-9_$@-]+)?      # .field (or .. recursive, not supported)
      |\[\s*\?\(\s*@\.(?P<fpath>[A-Za-z0-9_.-]+)\s*(?P<op>==|!=)\s*(?P<lit>"[^"]*"|'[^']*'|[^)\s]+)\s*\)\s*\]
      |\[\s*(?P<q>'[^']*'|"[^"]*")\s*\]
      |\[\s*(?P<idx>-?\d+|\*)\s*\]""", re.X)


class JSONPathError(ValueError):
    pass


@lru_cache(maxsize=512)
def parse(path: str) -> tuple[Step, ...]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise JSONPathError(f"unrecognized character in action: {text[pos:]!r}")
        if m.group(0).startswith(".."):
            raise JSONPathError("recursive descent is not supported")
        if m.group("name") is not None:
            steps.append(("field", m.group("name")))
        elif m.group("fpath") is not None:
            literal = m.group("lit")
            if literal[:1] in "\"'":
                value: Any = literal[1:-1]
            else:
                try:
                    value = json.loads(literal)
                except ValueError:
                    value = literal
            steps.append(("filter", (tuple(m.group("fpath").split(".")), m.group("op"), value)))
        elif m.group("q") is not None:
            steps.append(("field", m.group("q")[1:-1]))
        elif m.group("idx") is not None:
            idx = m.group("idx")
            steps.append(("all", None) if idx == "*" else ("index", int(idx)))
        pos = m.end()
    return tuple(steps)


def find(obj: Any, path: str) -> list[Any]:
    """Every value the path reaches (missing keys reach nothing)."""
    current = [obj]
    for kind, arg in parse(path):
        nxt: list[Any] = []
        for value in current:
            if kind == "field":
                if isinstance(value, dict) and arg in value:
                    nxt.append(value[arg])
            elif kind == "index":
                if isinstance(value, list) and -len(value) <= arg < len(value):
                    nxt.append(value[arg])
            elif kind == "all":
                if isinstance(value, list):
                    nxt.extend(value)
                elif isinstance(value, dict):
                    nxt.extend(value.values())
            elif kind == "filter" and isinstance(value, list):
                keys, op, literal = arg
                for item in value:
                    got: Any = item
                    for k in keys:
                        got = got.get(k) if isinstance(got, dict) else None
                    if (got == literal) == (op == "=="):
                        nxt.append(item)
        current = nxt
    return current


def text(value: Any) -> str:
    """A value as jsonpath prints it (strings bare, others as JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, separators=(",", ":"))
