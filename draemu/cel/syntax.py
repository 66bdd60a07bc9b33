"""CEL source → a small AST, using cel-python's lark grammar.

cel-python's grammar predates CEL's optional syntax (`a.?b`, `m[?k]`). Both are
rewritten before parsing by blanking the `?` (so every position in error messages
stays that of the user's text) and recognised again from the original text.
"""

from __future__ import annotations

import ast as pyast
import contextlib
import math
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import celpy.celparser
from celpy.celparser import CELParseError, CELParser
from lark import Lark, Token, Tree

from draemu.cel.errors import CELCompileError


@dataclass(eq=False)
class Node:
    pos: int = field(default=0, kw_only=True)  # offset in the source, for messages


@dataclass(eq=False)
class Literal(Node):
    value: object


@dataclass(eq=False)
class Ident(Node):
    name: str


@dataclass(eq=False)
class Select(Node):
    operand: Node
    field: str
    optional: bool = False
    test_only: bool = False  # has(a.b)


@dataclass(eq=False)
class Index(Node):
    operand: Node
    key: Node
    optional: bool = False


@dataclass(eq=False)
class Call(Node):
    function: str
    target: Node | None
    args: list[Node]


@dataclass(eq=False)
class ListLit(Node):
    items: list[Node]


@dataclass(eq=False)
class MapLit(Node):
    entries: list[tuple[Node, Node]]


@dataclass(eq=False)
class StructLit(Node):
    """`Name{field: value, ...}`: a message construction; `type_name` is the qualified
    name as written (`Object.spec`)."""

    type_name: str
    fields: list[tuple[str, Node]]


class Uint(int):
    """A CEL uint (Python's int is CEL's int)."""

    __slots__ = ()


_BINARY = {
    "relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
    "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in",
    "addition_add": "_+_", "addition_sub": "_-_",
    "multiplication_mul": "_*_", "multiplication_div": "_/_", "multiplication_mod": "_%_",
}

_parser: CELParser | None = None

# cel-go's parser default (parser.MaxRecursionDepth): brackets, and the AST, nest at most
# this deep.
MAX_RECURSION_DEPTH = 250


def _blank_optional_markers(text: str) -> tuple[str, set[int]]:
    """Replace the `?` of `.?` and `[?` outside string literals by a space, and runs of
    unary operators by their parity; refuse brackets nested deeper than cel-go's parser
    takes.

    Returns the rewritten text and the offsets of the blanked `?`.
    """
    out = list(text)
    marks: set[int] = set()
    depth = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            raw = i > 0 and text[i - 1] in "rR"
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                j += 2 if text[j] == "\\" and not raw else 1
            i = j + len(quote)
            continue
        if c == "/" and text.startswith("//", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if c == "?" and i > 0 and text[i - 1] in ".[":
            out[i] = " "
            marks.add(i)
        elif c in "([{":
            depth += 1
            if depth > MAX_RECURSION_DEPTH:
                raise CELCompileError(f"ERROR: <input>:-1:0: expression recursion limit "
                                      f"exceeded: {MAX_RECURSION_DEPTH}")
        elif c in ")]}":
            depth -= 1
        elif c in "!-":
            i = _collapse_unary_run(text, out, i)
            continue
        i += 1
    return "".join(out), marks


def _collapse_unary_run(text: str, out: list[str], i: int) -> int:
    """Blank all but the parity of a run of unary `!` or `-` (upstream's grammar reads a
    run as one rule and keeps its parity: `!!!!x` is `x`), so a thousand `!` are no
    thousand levels of recursion. Returns where the run ends."""
    c, n = text[i], len(text)
    run = [i]
    j = i + 1
    while j < n and (text[j] == c or text[j] in " \t\r\n"):
        if text[j] == c:
            run.append(j)
        j += 1
    if c == "!" and j < n and text[j] == "=" and run[-1] == j - 1:
        run.pop()  # the last `!` is `!=`'s
    if c == "-":
        k = i - 1
        while k >= 0 and text[k] in " \t\r\n":
            k -= 1
        if k >= 0 and text[k] not in "([{,:?!+-*/%<>=&|":
            run.pop(0)  # the first `-` is the binary operator
    if len(run) >= 2:
        for pos in run[: len(run) - len(run) % 2]:
            out[pos] = " "
    return j


def _cache_file() -> str | None:
    """Where lark keeps the parser's tables: a folder of this user's, never the shared
    temporary folder (lark loads the file with pickle). None when it cannot be made."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    folder = Path(root) / "draemu"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    return str(folder / "cel-parser.lark")


def _new_parser() -> CELParser:
    """cel-python's parser, with the LALR tables of its grammar cached on disk: building
    them took a quarter of a second of every start-up that checks a CEL expression. The
    Lark options are cel-python's own; lark's cache file holds a hash of the grammar,
    the options and lark's and Python's versions, and is built anew when one differs."""
    cache = _cache_file()
    if CELParser.CEL_PARSER is None and cache is not None:
        grammar = (Path(celpy.celparser.__file__).parent / "cel.lark").read_text()
        # lark writes a missing cache file in place; several processes starting at once
        # could read one another's half-written file. So a missing file is written under
        # a name of this process's own and renamed into place whole.
        fresh = not os.path.exists(cache)
        target = f"{cache}.{os.getpid()}.tmp" if fresh else cache
        CELParser.CEL_PARSER = Lark(
            grammar, parser="lalr", start="expr", debug=True, g_regex_flags=re.M,
            lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
            propagate_positions=True, maybe_placeholders=False, priority="invert",
            tree_class=Tree, cache=target)
        if fresh:
            with contextlib.suppress(OSError):
                os.replace(target, cache)
    return CELParser()


def parse(text: str) -> Node:
    global _parser
    if _parser is None:
        _parser = _new_parser()
    rewritten, marks = _blank_optional_markers(text)
    with deep_recursion():
        try:
            tree = _parser.parse(rewritten)
        except CELParseError as e:
            raise CELCompileError(format_error(text, "Syntax error: mismatched input",
                                               _offset(text, e.line, e.column))) from None
        try:
            node = _Builder(text, marks).build(tree)
        except RecursionError:
            node = None
    if node is None or ast_depth(node, balanced_logic=True) > MAX_RECURSION_DEPTH:
        raise CELCompileError("ERROR: <input>:-1:0: max recursion depth exceeded")
    return node


@contextlib.contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for the parser and the compiler on expressions nested up to
    MAX_RECURSION_DEPTH (some twenty Python frames a level; Python-to-Python calls use no
    C stack)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 40 * MAX_RECURSION_DEPTH + 2000))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def ast_depth(root: Node, *, balanced_logic: bool = False) -> int:
    """How deep the AST nests (iteratively: it may be deeper than Python recurses).
    `balanced_logic`: count a chain of `&&` (or `||`) as cel-go's parser builds it, a
    balanced tree, where ours is a left-leaning one."""
    deepest = 0
    stack: list[tuple[Node, float]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, math.ceil(depth))
        for child in children(node):
            same = balanced_logic and isinstance(node, Call) and isinstance(child, Call) \
                and child.function == node.function and node.function in ("_&&_", "_||_")
            stack.append((child, depth + (0.05 if same else 1)))
    return deepest


def children(node: Node) -> list[Node]:
    if isinstance(node, Select):
        return [node.operand]
    if isinstance(node, Index):
        return [node.operand, node.key]
    if isinstance(node, Call):
        return ([node.target] if node.target is not None else []) + list(node.args)
    if isinstance(node, ListLit):
        return list(node.items)
    if isinstance(node, MapLit):
        return [part for entry in node.entries for part in entry]
    if isinstance(node, StructLit):
        return [value for _, value in node.fields]
    return []


def _offset(text: str, line: int | None, column: int | None) -> int:
    if not line:
        return 0
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[: line - 1]) + (column or 1) - 1


def format_error(text: str, message: str, pos: int) -> str:
    """One error in cel-go's shape: location, message, the source line and a caret."""
    line_no = text.count("\n", 0, pos) + 1
    line_start = text.rfind("\n", 0, pos) + 1
    col = pos - line_start
    line_end = text.find("\n", pos)
    source = text[line_start: line_end if line_end >= 0 else len(text)]
    return f"ERROR: <input>:{line_no}:{col + 1}: {message}\n | {source}\n | {'.' * col}^"


class _Builder:
    def __init__(self, text: str, marks: set[int]) -> None:
        self.text = text
        self.marks = marks

    def error(self, message: str, pos: int) -> CELCompileError:
        return CELCompileError(format_error(self.text, message, pos))

    def build(self, t: Tree | Token) -> Node:
        if isinstance(t, Token):  # pragma: no cover - the grammar wraps every token
            raise self.error("Syntax error: unexpected token", t.start_pos or 0)
        method = getattr(self, "_" + t.data)
        return method(t)

    def _pos(self, t: Tree | Token) -> int:
        if isinstance(t, Token):
            return t.start_pos or 0
        pos = getattr(t.meta, "start_pos", None) if not t.meta.empty else None
        if pos is None:
            # A subtree of keywords only (`true`, `null`) carries no position: the end of
            # the text before it is as good for messages and optional markers.
            return 0
        return pos

    # Binary operators come as "<op> [left <op-node>] right" chains.
    def _expr(self, t: Tree) -> Node:
        if len(t.children) == 1:
            return self.build(t.children[0])
        cond, a, b = (self.build(c) for c in t.children)
        return Call("_?_:_", None, [cond, a, b], pos=self._pos(t))

    def _logical(self, t: Tree, name: str) -> Node:
        if len(t.children) == 1:
            return self.build(t.children[0])
        left, right = t.children
        return Call(name, None, [self.build(left), self.build(right)], pos=self._pos(right))

    def _conditionalor(self, t: Tree) -> Node:
        return self._logical(t, "_||_")

    def _conditionaland(self, t: Tree) -> Node:
        return self._logical(t, "_&&_")

    def _chain(self, t: Tree) -> Node:
        # "relation: [relation op] addition": a left operand wrapped with its operator.
        if len(t.children) == 1:
            return self.build(t.children[0])
        op_tree, right = t.children
        left = self.build(op_tree.children[0])
        return Call(_BINARY[op_tree.data], None, [left, self.build(right)],
                    pos=self._pos(op_tree.children[0]))

    _relation = _addition = _multiplication = _chain

    def _unary(self, t: Tree) -> Node:
        if len(t.children) == 1:
            return self.build(t.children[0])
        op, operand = t.children
        name = "!_" if op.data == "unary_not" else "-_"
        inner = self.build(operand)
        if name == "-_" and isinstance(inner, Literal) and type(inner.value) in (int, float) \
                and not isinstance(inner.value, bool):
            return Literal(-inner.value, pos=self._pos(t))  # type: ignore[operator]
        return Call(name, None, [inner], pos=self._pos(t))

    def _member(self, t: Tree) -> Node:
        return self.build(t.children[0])

    def _primary(self, t: Tree) -> Node:
        return self.build(t.children[0])

    def _member_dot(self, t: Tree) -> Node:
        operand, name = t.children
        return Select(self.build(operand), str(name), optional=self._optional_before(name),
                      pos=name.start_pos or 0)

    def _optional_before(self, tok: Token) -> bool:
        i = (tok.start_pos or 0) - 1
        while i >= 0 and self.text[i] in " \t\r\n" and i not in self.marks:
            i -= 1
        return i in self.marks

    def _optional_after(self, pos: int) -> bool:
        """Whether a blanked `?` follows the bracket at `pos` (before any element)."""
        i = pos + 1
        while i < len(self.text) and (self.text[i] in " \t\r\n" or i in self.marks):
            if i in self.marks:
                return True
            i += 1
        return False

    def _member_dot_arg(self, t: Tree) -> Node:
        operand, name = t.children[0], t.children[1]
        args = self._args(t.children[2]) if len(t.children) > 2 else []
        if self._optional_before(name):
            raise self.error("Syntax error: optional call syntax is not supported",
                             name.start_pos or 0)
        return Call(str(name), self.build(operand), args, pos=name.start_pos or 0)

    def _member_index(self, t: Tree) -> Node:
        operand, key = t.children
        end = operand.meta.end_pos if isinstance(operand, Tree) else 0
        opening = self.text.find("[", end)
        optional = opening >= 0 and any(
            p in self.marks for p in range(opening + 1, self._pos(key)))
        return Index(self.build(operand), self.build(key), optional=optional, pos=opening)

    def _member_object(self, t: Tree) -> Node:
        operand = t.children[0]
        end = operand.meta.end_pos if isinstance(operand, Tree) else 0
        opening = self.text.find("{", end)  # cel-go places the construction at its `{`
        name = _qualified_name(self.build(operand))
        if name is None:
            raise self.error("Syntax error: mismatched input '{'", opening)
        fields: list[tuple[str, Node]] = []
        inits = t.children[1].children if len(t.children) > 1 else []
        for field_name, value in zip(inits[::2], inits[1::2], strict=True):
            fields.append((str(field_name), self.build(value)))
        return StructLit(name, fields, pos=opening)

    def _args(self, exprlist: Tree | None) -> list[Node]:
        if exprlist is None:
            return []
        return [self.build(c) for c in exprlist.children]

    def _ident_arg(self, t: Tree) -> Node:
        name = t.children[0]
        args = self._args(t.children[1]) if len(t.children) > 1 else []
        return Call(str(name), None, args, pos=name.start_pos or 0)

    def _dot_ident_arg(self, t: Tree) -> Node:
        return self._ident_arg(t)

    def _ident(self, t: Tree) -> Node:
        tok = t.children[0]
        return Ident(str(tok), pos=tok.start_pos or 0)

    _dot_ident = _ident

    def _paren_expr(self, t: Tree) -> Node:
        return self.build(t.children[0])

    def _list_lit(self, t: Tree) -> Node:
        pos = self._pos(t)
        if t.children and self._optional_after(pos):
            raise self.error("Syntax error: optional list elements are not supported", pos)
        return ListLit(self._args(t.children[0]) if t.children else [], pos=pos)

    def _map_lit(self, t: Tree) -> Node:
        items = [self.build(c) for c in t.children[0].children] if t.children else []
        return MapLit(list(zip(items[0::2], items[1::2], strict=True)), pos=self._pos(t))

    def _literal(self, t: Tree) -> Node:
        tok = t.children[0]
        return Literal(_literal_value(tok, self), pos=tok.start_pos or 0)


def _qualified_name(node: Node) -> str | None:
    """`a.b.c` of a construction's type name (None when it is no plain name)."""
    if isinstance(node, Ident):
        return node.name
    if isinstance(node, Select) and not node.optional and not node.test_only:
        prefix = _qualified_name(node.operand)
        return None if prefix is None else f"{prefix}.{node.field}"
    return None


def _literal_value(tok: Token, builder: _Builder) -> object:
    text = str(tok)
    kind = tok.type
    try:
        if kind == "BOOL_LIT":
            return text == "true"
        if kind == "NULL_LIT":
            return None
        if kind == "INT_LIT":
            value = int(text, 0) if "0x" not in text else int(text.replace("0x", ""), 16)
            if not -(2**63) <= value < 2**63:
                raise ValueError("int out of range")
            return value
        if kind == "UINT_LIT":
            body = text[:-1]
            value = int(body, 16) if "0x" in body else int(body)
            if not 0 <= value < 2**64:
                raise ValueError("uint out of range")
            return Uint(value)
        if kind == "FLOAT_LIT":
            return float(text)
        if kind in ("STRING_LIT", "MLSTRING_LIT"):
            return _string(text)
        if kind == "BYTES_LIT":
            s = _string(text[1:])
            return s.encode("utf-8", "surrogatepass")
    except (ValueError, SyntaxError) as e:
        raise builder.error(f"Syntax error: {e}", tok.start_pos or 0) from None
    raise builder.error(f"Syntax error: unexpected literal {text}", tok.start_pos or 0)


def _string(text: str) -> str:
    raw = text[:1] in "rR"
    body = text[1:] if raw else text
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    inner = body[len(quote):-len(quote)]
    if raw:
        return inner
    # CEL escapes are a subset of Python's, except octal \ooo which Python also reads.
    return pyast.literal_eval("'" + inner.replace("'", "\\'").replace("\n", "\\n") + "'") \
        if "\\" in inner else inner
