"""YAML read under limits that a hostile document cannot get around: the apiserver's
request bodies, and every YAML file or paste any draemu process reads (presets, kind
configs, scheduler configs, CDI specs, `draemu allocate`'s inputs, the web view's
what-if).

A few hundred bytes of nested aliases expand to billions of nodes once anything walks
the value (a copy, validation, encoding), and YAML can also spell self-containing values,
integers too long to print and mappings with one key twice. So the composer (libyaml's
events, PyYAML's composer) counts every node as it would be expanded, refuses aliases
that add more than a small budget (upstream's YAML decoder refuses "excessive aliasing"
too), anchors that contain themselves and documents of more than MAX_NODES nodes, and
records duplicate keys for fieldValidation; the constructor refuses integers of more
than `MAX_INT_DIGITS` digits.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from yaml._yaml import CParser as _Parser  # libyaml's events (PyYAML's wheels carry libyaml)
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.resolver import Resolver

# What aliases may add to a document, in nodes (a node is a scalar, a list or a map).
MAX_ALIAS_NODES = 10_000
# Nodes a document may have in all (aliases expanded). PyYAML's composer is Python: some
# 10-20 us a node, so this bounds one body's parse to about a second of the event loop.
# Manifests have far fewer; JSON (what kubectl and client libraries send) has no such cap.
MAX_NODES = 50_000
# Files a user hands a command (a dump of every ResourceSlice of a big cluster is more
# than MAX_NODES): the node count only bounds time there; aliases keep their budget.
MAX_FILE_NODES = 20_000_000
# Python prints no longer integer (sys.get_int_max_str_digits); Go's decoder reads none.
MAX_INT_DIGITS = 4300
_MAX_INT_BITS = 14_284  # 10**4300 < 2**14284


class YAMLLimitError(yaml.YAMLError):
    """The document breaks a limit; the message is the whole answer."""


class YAMLTooLarge(YAMLLimitError):
    """More nodes than MAX_NODES: a 413."""


class _LimitedComposer(Composer):
    def __init__(self, max_nodes: int = MAX_NODES) -> None:
        super().__init__()
        self.max_nodes = max_nodes
        self.expanded = 0  # nodes as the value will be walked, aliases expanded
        self.alias_nodes = 0
        self._sizes: dict[int, int] = {}  # anchored node -> its expanded size
        self.duplicates: list[tuple[MappingNode, str]] = []
        # Where each of `duplicates` repeats its key: (0-based line, column).
        self.duplicate_marks: list[tuple[int, int]] = []

    def new_document(self) -> None:
        """The limits count each document of a stream on its own."""
        self.expanded = self.alias_nodes = 0
        self._sizes.clear()

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(AliasEvent):
            anchor = self.peek_event().anchor
            node = super().compose_node(parent, index)
            size = self._sizes.get(id(node))
            if size is None:
                raise YAMLLimitError(f'yaml: anchor "{anchor}" value contains itself')
            self.alias_nodes += size
            self.expanded += size
            if self.alias_nodes > MAX_ALIAS_NODES or self.expanded > self.max_nodes:
                raise YAMLLimitError("yaml: document contains excessive aliasing")
            return node
        anchor = getattr(self.peek_event(), "anchor", None)
        before = self.expanded
        self.expanded += 1
        if self.expanded > self.max_nodes:
            raise YAMLTooLarge(f"yaml: the document has more than {self.max_nodes} nodes (send "
                               "large objects as JSON)")
        node = super().compose_node(parent, index)
        if anchor is not None:
            self._sizes[id(node)] = self.expanded - before
        return node

    def compose_mapping_node(self, anchor: str | None) -> MappingNode:
        node = super().compose_mapping_node(anchor)
        if len(node.value) > 1:
            seen: set[str] = set()
            for key, _ in node.value:
                if isinstance(key, ScalarNode):
                    if key.value in seen:
                        self.duplicates.append((node, key.value))
                        self.duplicate_marks.append((key.start_mark.line,
                                                     key.start_mark.column))
                    seen.add(key.value)
        return node


class _LimitedConstructor(SafeConstructor):
    def construct_yaml_int(self, node: ScalarNode) -> int:
        digits = sum(c.isdigit() for c in node.value)
        if digits > MAX_INT_DIGITS:
            raise _too_long(node)
        value = super().construct_yaml_int(node)
        if value.bit_length() > _MAX_INT_BITS:  # hexadecimal, binary, sexagesimal
            raise _too_long(node)
        return value

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep)
        if all(type(key) is str for key in mapping):
            return mapping
        # JSON keys are strings: `1: a` and `true: b` become "1" and "true", as upstream's
        # YAML-to-JSON conversion writes them.
        return {_json_key(key): value for key, value in mapping.items()}


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, (bool, int, float)) or key is None:
        return json.dumps(key)
    raise YAMLLimitError(f"yaml: invalid map key: {key!r}")


_LimitedConstructor.add_constructor("tag:yaml.org,2002:int",
                                    _LimitedConstructor.construct_yaml_int)


def _too_long(node: ScalarNode) -> YAMLLimitError:
    return YAMLLimitError(f"yaml: line {node.start_mark.line + 1}: integer "
                          f"{node.value[:20]}... is too long: at most {MAX_INT_DIGITS} "
                          f"digits are allowed")


class _JSONResolver(Resolver):
    """YAML 1.1's implicit types less timestamps: a date stays the string it is, as in
    the JSON upstream's YAML-to-JSON conversion gives."""


_JSONResolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()}


class LimitedLoader(_LimitedComposer, _Parser, _LimitedConstructor, _JSONResolver):
    def __init__(self, stream: Any, max_nodes: int = MAX_NODES) -> None:
        _Parser.__init__(self, stream)
        _LimitedComposer.__init__(self, max_nodes)
        _LimitedConstructor.__init__(self)
        _JSONResolver.__init__(self)


def load(raw: bytes) -> tuple[Any, list[str]]:
    """The one document of `raw` and the paths of keys it has twice (`spec.a`)."""
    loader = LimitedLoader(raw)
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node) if node is not None else None
        if loader.alias_nodes:
            value = _unshared(value)  # as JSON would have it: each place its own copy
        duplicates = _paths(node, loader.duplicates) if loader.duplicates else []
        return value, duplicates
    finally:
        loader.dispose()


def duplicate_key_errors(raw: bytes) -> list[str]:
    """The keys `raw` (one YAML or JSON document `load` accepts) has twice in a mapping,
    worded as Go's yaml.UnmarshalStrict words them (`line 7: key "a" already set in
    map`), in document order."""
    loader = LimitedLoader(raw)
    try:
        loader.get_single_node()
        found = sorted(zip(loader.duplicate_marks, (key for _, key in loader.duplicates),
                           strict=True))
        return [f"line {line + 1}: key {json.dumps(key, ensure_ascii=False)} already set "
                "in map" for (line, _), key in found]
    finally:
        loader.dispose()


def load_all(raw: bytes | str, max_nodes: int = MAX_NODES) -> list[Any]:
    """Every document of a YAML stream, each under the limits of `load` (duplicate keys
    are kept as the last value, as a manifest reader keeps them)."""
    loader = LimitedLoader(raw.encode() if isinstance(raw, str) else raw, max_nodes)
    docs = []
    try:
        while loader.check_node():
            loader.new_document()
            node = loader.get_node()
            value = loader.construct_document(node)
            docs.append(_unshared(value) if loader.alias_nodes else value)
        return docs
    finally:
        loader.dispose()


def load_file_text(text: str) -> Any:
    """The one document of a file's text (None when empty), under the limits with
    MAX_FILE_NODES: what `yaml.safe_load` would give, but a hostile file cannot stall or
    exhaust the reader. yaml.YAMLError (YAMLLimitError for a limit) on bad input."""
    docs = load_all(text, MAX_FILE_NODES)
    if len(docs) > 1:
        raise yaml.YAMLError("expected a single document in the stream")
    return docs[0] if docs else None


def load_file_documents(text: str) -> list[Any]:
    """Every document of a file's text, as `yaml.safe_load_all` gives them, under limits."""
    return load_all(text, MAX_FILE_NODES)


def _unshared(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshared(v) for v in value]
    return value


def _paths(root: Node | None, duplicates: list[tuple[MappingNode, str]]) -> list[str]:
    wanted = {id(node) for node, _ in duplicates}
    where: dict[int, str] = {}
    stack: list[tuple[Node, str]] = [(root, "")] if root is not None else []
    seen: set[int] = set()
    while stack and len(where) < len(wanted):
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            if id(node) in wanted:
                where[id(node)] = path
            for key, value in node.value:
                name = key.value if isinstance(key, ScalarNode) else "?"
                stack.append((value, f"{path}.{name}" if path else str(name)))
        elif isinstance(node.value, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node.value))
    return [f"{where[id(node)]}.{key}" if where.get(id(node)) else key
            for node, key in duplicates]
