"""Label and field selector parsing and matching."""

from __future__ import annotations

import pytest

from draemu.api.errors import StatusError
from draemu.apiserver.wire.queryselectors import parse_field_selector, parse_label_selector

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("text", "labels", "expected"), [
    ("a=1", {"a": "1"}, True),
    ("a=1", {"a": "2"}, False),
    ("a!=1", {}, True),
    ("a in (1, 2)", {"a": "2"}, True),
    ("a notin (1,2)", {"a": "3"}, True),
    ("a notin (1,2)", {}, True),
    ("a", {"a": ""}, True),
    ("!a", {"a": ""}, False),
    ("a>1", {"a": "5"}, True),
    ("a<1", {"a": "5"}, False),
    ("a=1,b", {"a": "1"}, False),
    ("example.com/k=v", {"example.com/k": "v"}, True),
    ("a=", {"a": ""}, True),
])
def test_label_selector_matching(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


@pytest.mark.parametrize("text", ["a in 1", "a in (1", "a=b=c", "=x", "a b"])
def test_label_selector_syntax_errors_are_400(text: str) -> None:
    with pytest.raises(StatusError) as e:
        parse_label_selector(text)
    assert e.value.code == 400


def test_field_selector_escapes_and_operators() -> None:
    sel = parse_field_selector(r"metadata.name=a\,b,spec.nodeName!=n1")
    assert sel.matches({"metadata.name": "a,b", "spec.nodeName": "n2"})
    assert not sel.matches({"metadata.name": "a,b", "spec.nodeName": "n1"})
    assert sel.exact("metadata.name") == "a,b"


def test_field_selector_without_operator_is_400() -> None:
    with pytest.raises(StatusError) as e:
        parse_field_selector("metadata.name")
    assert e.value.code == 400
