"""Label and field selectors, parsed and matched as kube-apiserver does.

Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`,
`k>1`, `k<1`; a comma means AND. Field selectors: `f=v`, `f==v`, `f!=v` with `\\`
escapes, over `metadata.name`, `metadata.namespace` and the kind's own fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from draemu.api import names
from draemu.api.errors import StatusError, bad_request

Labels = dict[str, str]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Labels) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present:
            return False
        try:
            number = int(value or "")
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.op == "gt" else number < bound


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Labels | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_TOKEN = re.compile(r"\s*(!=|==|=|>|<|\(|\)|,|!|[^\s!=<>(),]+)")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip() == "":
                break
            raise _label_error(f"unexpected character at position {pos} in {text!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _label_error(detail: str) -> StatusError:
    return bad_request(f"unable to parse requirement: {detail}")


def _check_key(key: str) -> None:
    errs = names.is_qualified_name(key)
    if errs:
        raise _label_error(f'key: Invalid value: "{key}": {"; ".join(errs)}')


def _check_value(value: str) -> None:
    errs = names.is_label_value(value)
    if errs:
        raise _label_error(f'values[0]: Invalid value: "{value}": {"; ".join(errs)}')


def parse_label_selector(text: str | None) -> LabelSelector:
    if not text or not text.strip():
        return LabelSelector()
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def take() -> str:
        nonlocal i
        if i >= len(toks):
            raise _label_error(f"found '', expected: identifier in {text!r}")
        i += 1
        return toks[i - 1]

    while i < len(toks):
        tok = take()
        if tok == "!":
            key = take()
            _check_key(key)
            reqs.append(Requirement(key, "!"))
        else:
            key = tok
            _check_key(key)
            nxt = toks[i] if i < len(toks) else ","
            if nxt == ",":
                reqs.append(Requirement(key, "exists"))
            elif nxt in ("=", "==", "!="):
                i += 1
                value = toks[i] if i < len(toks) and toks[i] != "," else ""
                if value:
                    i += 1
                _check_value(value)
                reqs.append(Requirement(key, "!=" if nxt == "!=" else "=", (value,)))
            elif nxt in (">", "<"):
                i += 1
                value = take()
                if not value.isdigit():
                    raise _label_error(f"for 'Gt', 'Lt' operators, the value must be an "
                                       f"integer: {value!r}")
                reqs.append(Requirement(key, "gt" if nxt == ">" else "lt", (value,)))
            elif nxt in ("in", "notin"):
                i += 1
                if take() != "(":
                    raise _label_error(f"found '{toks[i - 1]}', expected: '('")
                values: list[str] = []
                while True:
                    tok = take()
                    if tok == ")":
                        break
                    if tok == ",":
                        continue
                    _check_value(tok)
                    values.append(tok)
                reqs.append(Requirement(key, nxt, tuple(values)))
            else:
                raise _label_error(f"found '{nxt}', expected: in, notin, =, ==, !=, gt, lt")
        if i < len(toks):
            if toks[i] != ",":
                raise _label_error(f"found '{toks[i]}', expected: ',' or 'end of string'")
            i += 1
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, fields: dict[str, str]) -> bool:
        for r in self.requirements:
            equal = fields.get(r.field, "") == r.value
            if equal == r.negate:
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact(self, name: str) -> str | None:
        """The value the selector pins `name` to with `=`, if any."""
        for r in self.requirements:
            if r.field == name and not r.negate:
                return r.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, buf, escaped = [], [], False
    for ch in text:
        if escaped:
            buf.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
    parts.append("".join(buf))
    return parts


def _unescape(value: str) -> str:
    out, escaped = [], False
    for ch in value:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out.append(ch)
    return "".join(out)


def parse_field_selector(text: str | None) -> FieldSelector:
    if not text or not text.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for op in ("!=", "==", "="):
            idx = part.find(op)
            if idx > 0:
                reqs.append(FieldRequirement(part[:idx].strip(), _unescape(part[idx + len(op):]),
                                             op == "!="))
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(reqs))


BASE_FIELDS = ("metadata.name", "metadata.namespace")


def check_fields(selector: FieldSelector, supported: set[str] | None) -> None:
    """Reject fields the kind does not support, with upstream's 400 messages. `supported`
    is the kind's own fields (None when it has none)."""
    for r in selector.requirements:
        if r.field in BASE_FIELDS or (supported and r.field in supported):
            continue
        if supported:
            raise bad_request(f"field label not supported: {r.field}")
        raise bad_request(f'"{r.field}" is not a known field selector: only '
                          f'"metadata.name", "metadata.namespace"')

