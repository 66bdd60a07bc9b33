"""Upstream's scheduler_perf DRA configurations, read as upstream's test reads them.

kube-scheduler's own benchmark (test/integration/scheduler_perf/dra/ of
k8s.io/kubernetes, here at the version the real side runs, v1.37.2) describes each test
case in a `performance-config.yaml` (feature gates, a list of operations, workloads that
give the operations' parameters) and builds every object from a Go text/template file in
`templates/`. This module reads those files from the Go module cache (downloading the
module with `go mod download` if it is missing) and renders the templates, so that
bench/draworkloads.py runs upstream's objects and counts, not our paraphrase of them.

The renderer covers the part of Go's text/template the DRA templates use: actions with
pipelines (`|`), parenthesised sub-pipelines, fields of the data (`.Index`, `.numDevices`:
a missing key is Go's zero value), variables (`$x := ...`, `range $i := ...`), `range`
over an integer or a list, `if`/`else`, literals, and the functions of upstream's
template FuncMap (Mod, DivideInt, Int, JSON, ...) plus Go's builtins or, and, not, eq, ne,
lt, le, gt, ge, len. Anything else is a TemplateError naming it.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

K8S_VERSION = "v1.37.2"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when built with it
CONFIG_DIR = "test/integration/scheduler_perf/dra"


class TemplateError(ValueError):
    pass


# --- upstream's Go module ---------------------------------------------------------------

def _go_mod_cache() -> Path:
    env = os.environ.get("DRAEMU_GO_CACHE")
    return Path(env) / "mod" if env else Path.home() / ".cache/draemu/go/mod"


@cache
def upstream_dir(version: str = K8S_VERSION) -> Path:
    """test/integration/scheduler_perf/dra of k8s.io/kubernetes at `version`, from the Go
    module cache ($DRAEMU_GO_CACHE/mod), downloaded through the module proxy if absent."""
    mod = _go_mod_cache()
    folder = mod / f"k8s.io/kubernetes@{version}" / CONFIG_DIR
    if folder.is_dir():
        return folder
    env = dict(os.environ, GOMODCACHE=str(mod), GOFLAGS="-mod=mod", GO111MODULE="on")
    try:
        out = subprocess.run(["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
                             env=env, capture_output=True, text=True, check=True, timeout=1800,
                             cwd="/")
    except (OSError, subprocess.SubprocessError) as e:
        raise FileNotFoundError(f"{folder} is missing and `go mod download "
                                f"k8s.io/kubernetes@{version}` failed: {e}") from e
    found = Path(json.loads(out.stdout)["Dir"]) / CONFIG_DIR
    if not found.is_dir():
        raise FileNotFoundError(f"{found}: no scheduler_perf DRA configs in the module")
    return found


# --- the template language --------------------------------------------------------------

# Text and actions; a `-` beside the braces trims the white space on that side.
_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+(?:\.\d+)?)|'
                    r"(?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)|"
                    r"(?P<field>(?:\.[A-Za-z0-9_]+)+|\.)|(?P<op>:=|[|()=,])|"
                    r"(?P<ident>[A-Za-z_][A-Za-z0-9_]*))")


def _number(v: Any) -> float:
    if isinstance(v, bool) or v is None:
        raise TemplateError(f"not a number: {v!r}")
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v))
    except ValueError:
        raise TemplateError(f"cannot cast {v!r} to a number") from None


def _int(v: Any) -> int:
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            raise TemplateError(f"cannot cast {v!r} to int") from None
    return int(_number(v))


def _truth(v: Any) -> bool:
    """Go templates' truth: false, 0, nil and empty values are false."""
    return bool(v) if v is not None else False


def _or(*args: Any) -> Any:
    for a in args:
        if _truth(a):
            return a
    return args[-1]


def _and(*args: Any) -> Any:
    for a in args:
        if not _truth(a):
            return a
    return args[-1]


def _json(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


FUNCS: dict[str, Callable[..., Any]] = {
    # upstream's getTemplateFuncs
    "AddFloat": lambda *a: sum(_number(x) for x in a),
    "AddInt": lambda *a: int(sum(_number(x) for x in a)),
    "DivideFloat": lambda a, b: _number(a) / _number(b),
    "DivideInt": lambda a, b: int(_number(a) / _number(b)),
    "Int": _int,
    "JSON": _json,
    "Mod": lambda a, b: int(math.fmod(int(_number(a)), int(_number(b)))),
    "MultiplyFloat": lambda *a: math.prod(_number(x) for x in a),
    "MultiplyInt": lambda *a: int(math.prod(_number(x) for x in a)),
    "SubtractFloat": lambda a, b: _number(a) - _number(b),
    "SubtractInt": lambda a, b: int(_number(a) - _number(b)),
    # Go's builtins
    "or": _or, "and": _and, "not": lambda a: not _truth(a),
    "eq": lambda a, *b: any(a == x for x in b), "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "len": len,
}


def _go_string(v: Any) -> str:
    """A value as Go's template prints it."""
    if v is None:
        return "<no value>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (list, dict)):
        raise TemplateError(f"printing a {type(v).__name__} is not supported: use JSON")
    return str(v)


@dataclass
class _Node:
    kind: str                       # text, print, set, if, range
    text: str = ""
    expr: list[Any] = field(default_factory=list)
    var: str | None = None          # set / range: the variable assigned
    body: list[_Node] = field(default_factory=list)
    orelse: list[_Node] = field(default_factory=list)


def _tokens(source: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    source = source.rstrip()
    while pos < len(source):
        m = _TOKEN.match(source, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"cannot read {source[pos:]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _pipeline(tokens: list[tuple[str, str]], i: int = 0, close: str | None = None
              ) -> tuple[list[list[Any]], int]:
    """Commands separated by `|`, each a list of operands; an operand is a token or a
    nested pipeline (a list of commands)."""
    commands: list[list[Any]] = [[]]
    while i < len(tokens):
        kind, text = tokens[i]
        if kind == "op" and text == ")" and close == ")":
            return commands, i + 1
        if kind == "op" and text == "|":
            commands.append([])
        elif kind == "op" and text == "(":
            sub, i = _pipeline(tokens, i + 1, ")")
            commands[-1].append(("pipe", sub))
            continue
        elif kind == "op":
            raise TemplateError(f"unexpected {text!r}")
        else:
            commands[-1].append((kind, text))
        i += 1
    if close:
        raise TemplateError("unclosed (")
    return commands, i


def _parse(source: str) -> list[_Node]:
    root: list[_Node] = []
    stack: list[tuple[_Node, list[_Node]]] = []
    body = root
    pos = 0
    trim_next = False
    for m in _ACTION.finditer(source):
        text = source[pos:m.start()]
        if trim_next:
            text = text.lstrip()
        if m.group(1):
            text = text.rstrip()
        if text:
            body.append(_Node("text", text))
        pos = m.end()
        trim_next = bool(m.group(3))
        action = m.group(2).strip()
        if action.startswith("/*"):
            continue
        word = action.split(None, 1)[0] if action else ""
        rest = action[len(word):].strip()
        if word in ("end", "else"):
            if not stack:
                raise TemplateError(f"{{{{{word}}}}} without if or range")
            node, outer = stack[-1]
            if word == "else":
                body = node.orelse
                continue
            stack.pop()
            body = outer
            continue
        if word in ("if", "range"):
            node = _Node(word)
            tokens = _tokens(rest)
            if word == "range" and len(tokens) > 1 and tokens[1] == ("op", ":="):
                node.var = tokens[0][1]
                tokens = tokens[2:]
            node.expr = _pipeline(tokens)[0]
            body.append(node)
            stack.append((node, body))
            body = node.body
            continue
        if word in ("with", "define", "template", "block", "break", "continue"):
            raise TemplateError(f"{{{{{word}}}}} is not supported")
        tokens = _tokens(action)
        if len(tokens) > 1 and tokens[0][0] == "var" and tokens[1] in (("op", ":="),
                                                                       ("op", "=")):
            body.append(_Node("set", var=tokens[0][1], expr=_pipeline(tokens[2:])[0]))
        else:
            body.append(_Node("print", expr=_pipeline(tokens)[0]))
    if stack:
        raise TemplateError("missing {{end}}")
    tail = source[pos:]
    if trim_next:
        tail = tail.lstrip()
    if tail:
        body.append(_Node("text", tail))
    return root


class _Scope:
    def __init__(self, data: dict[str, Any]) -> None:
        self.vars: list[dict[str, Any]] = [{"$": data}]

    def get(self, name: str) -> Any:
        for frame in reversed(self.vars):
            if name in frame:
                return frame[name]
        raise TemplateError(f"undefined variable {name}")

    def set(self, name: str, value: Any) -> None:
        self.vars[-1][name] = value


def _field(value: Any, path: str) -> Any:
    for part in path.split(".")[1:]:
        if not part:
            continue
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _operand(op: tuple[str, Any], dot: Any, scope: _Scope) -> Any:
    kind, text = op
    if kind == "pipe":
        return _run(text, dot, scope)
    if kind == "str":
        return json.loads(text)
    if kind == "num":
        return float(text) if "." in text else int(text)
    if kind == "field":
        return dot if text == "." else _field(dot, text)
    if kind == "var":
        name, _, path = text.partition(".")
        value = scope.get(name)
        return _field(value, "." + path) if path else value
    if kind == "ident":
        if text in ("true", "false"):
            return text == "true"
        if text == "nil":
            return None
        if text in FUNCS:
            return FUNCS[text]()
        raise TemplateError(f"function {text!r} not defined")
    raise TemplateError(f"unexpected {text!r}")


def _run(commands: list[list[Any]], dot: Any, scope: _Scope) -> Any:
    value: Any = None
    for k, command in enumerate(commands):
        if not command:
            raise TemplateError("empty command")
        head = command[0]
        piped = [value] if k > 0 else []
        if head[0] == "ident" and head[1] in FUNCS:
            args = [_operand(a, dot, scope) for a in command[1:]] + piped
            try:
                value = FUNCS[head[1]](*args)
            except TypeError as e:
                raise TemplateError(f"{head[1]}: {e}") from None
        elif len(command) == 1 and not piped:
            value = _operand(head, dot, scope)
        else:
            raise TemplateError(f"cannot call {head[1]!r}")
    return value


def _execute(nodes: list[_Node], dot: Any, scope: _Scope, out: list[str]) -> None:
    for node in nodes:
        if node.kind == "text":
            out.append(node.text)
        elif node.kind == "print":
            out.append(_go_string(_run(node.expr, dot, scope)))
        elif node.kind == "set":
            assert node.var is not None
            scope.set(node.var, _run(node.expr, dot, scope))
        elif node.kind == "if":
            branch = node.body if _truth(_run(node.expr, dot, scope)) else node.orelse
            scope.vars.append({})
            _execute(branch, dot, scope, out)
            scope.vars.pop()
        else:
            _range(node, dot, scope, out)


def _range(node: _Node, dot: Any, scope: _Scope, out: list[str]) -> None:
    over = _run(node.expr, dot, scope)
    if isinstance(over, bool) or over is None:
        items: Iterator[Any] = iter(())
    elif isinstance(over, (int, float)):
        items = iter(range(int(over)))
    elif isinstance(over, (list, tuple)):
        items = iter(over)
    else:
        raise TemplateError(f"range over {type(over).__name__}")
    empty = True
    for item in items:
        empty = False
        scope.vars.append({node.var: item} if node.var else {})
        _execute(node.body, item, scope, out)
        scope.vars.pop()
    if empty:
        _execute(node.orelse, dot, scope, out)


@cache
def _parsed(path: Path) -> list[_Node]:
    return _parse(path.read_text())


def render_text(path: Path, env: dict[str, Any]) -> str:
    out: list[str] = []
    _execute(_parsed(path), env, _Scope(env), out)
    return "".join(out)


def render(path: Path, env: dict[str, Any]) -> dict[str, Any]:
    """The object a template file makes for `env` (Index, Count and the parameters)."""
    obj = yaml.load(render_text(path, env), Loader=_LOADER)
    if not isinstance(obj, dict):
        raise TemplateError(f"{path}: not an object")
    return obj


# --- the configurations -----------------------------------------------------------------

@dataclass(frozen=True)
class Op:
    """One operation of a workload, its parameters resolved."""

    opcode: str
    count: int = 1
    template: Path | None = None         # templatePath, podTemplatePath, nodeTemplatePath
    namespace: str | None = None
    params: dict[str, Any] = field(default_factory=dict)   # templateParams
    steady_state: bool = False
    duration: float = 0.0
    collect_metrics: bool = False


@dataclass(frozen=True)
class TestCase:
    name: str
    folder: Path
    feature_gates: dict[str, bool]
    ops: list[dict[str, Any]]
    workloads: dict[str, dict[str, Any]]

    def gates(self, workload: str) -> dict[str, bool]:
        return {**self.feature_gates, **(self.workloads[workload].get("featureGates") or {})}

    def params(self, workload: str) -> dict[str, Any]:
        return dict(self.workloads[workload].get("params") or {})

    def resolve(self, params: dict[str, Any]) -> list[Op]:
        """The operations with `params` (a workload's, possibly changed) filled in."""
        return [_resolve(op, params, self.folder) for op in self.ops]


def _param(params: dict[str, Any], ref: str) -> Any:
    if not isinstance(ref, str) or not ref.startswith("$"):
        return ref
    key, sep, default = ref[1:].partition("|")
    if key in params:
        return params[key]
    if sep:
        return yaml.safe_load(default) if default else None
    raise KeyError(f"parameter {key!r} not given")


def _duration(text: Any) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(text))
    if not m:
        raise ValueError(f"duration {text!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def _resolve(op: dict[str, Any], params: dict[str, Any], folder: Path) -> Op:
    count = op.get("count", 1)
    if "countParam" in op:
        count = _param(params, op["countParam"])
    path = op.get("templatePath") or op.get("podTemplatePath") or op.get("nodeTemplatePath")
    steady = op.get("steadyState", False)
    if "steadyStateParam" in op:
        steady = _param(params, op["steadyStateParam"])
    duration = op.get("duration", 0)
    if "durationParam" in op:
        duration = _param(params, op["durationParam"])
    return Op(opcode=op["opcode"], count=int(count or 0),
              template=(folder / path).resolve() if path else None,
              namespace=op.get("namespace"),
              params={k: _param(params, v) for k, v in (op.get("templateParams") or {}).items()},
              steady_state=bool(steady), duration=_duration(duration or 0),
              collect_metrics=bool(op.get("collectMetrics")))


@cache
def test_cases(version: str = K8S_VERSION) -> dict[str, TestCase]:
    """Every DRA test case of upstream's configs, by name."""
    root = upstream_dir(version)
    out: dict[str, TestCase] = {}
    for config in sorted(root.rglob("performance-config.yaml")):
        for case in yaml.safe_load(config.read_text()) or []:
            out[case["name"]] = TestCase(
                name=case["name"], folder=config.parent,
                feature_gates=dict(case.get("featureGates") or {}),
                ops=list(case.get("workloadTemplate") or []),
                workloads={w["name"]: w for w in case.get("workloads") or []})
    return out
