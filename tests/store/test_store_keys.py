"""Key and prefix rules, and the upper bound of a prefix range."""

from __future__ import annotations

import pytest

from draemu.store.validation import check_key, check_prefix, prefix_end

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("key", ["/registry/pods/default/p1", "/registry/resource.k8s.io/"
                                 "resourceclaims/ns/claim.v1", "/registry/cm/ns/ünïcödé",
                                 "/a"])
def test_kubernetes_style_keys_are_accepted(key: str) -> None:
    check_key(key)


@pytest.mark.parametrize("prefix", ["/", "/registry/", "/registry/pods/default/p"])
def test_prefixes_may_end_anywhere(prefix: str) -> None:
    check_prefix(prefix)


@pytest.mark.parametrize(("prefix", "end"), [
    ("/registry/", "/registry0"),
    ("/a\ud7ff", "/a\ue000"),
    ("/a\U0010ffff", "/b"),
])
def test_prefix_end_is_the_least_string_above_the_prefix(prefix: str, end: str) -> None:
    assert prefix_end(prefix) == end
    assert prefix + "\U0010ffff" < end
