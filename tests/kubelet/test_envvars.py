"""`$(VAR)` expansion in commands, arguments and env values, as the kubelet does it."""

import pytest

from draemu.kubelet.envvars import expand

pytestmark = pytest.mark.unit

ENV = {"NODE_NAME": "node-1", "EMPTY": ""}


@pytest.mark.parametrize(("text", "expanded"), [
    ("--hostname-override=$(NODE_NAME)", "--hostname-override=node-1"),
    ("$(NODE_NAME)$(NODE_NAME)", "node-1node-1"),
    ("[$(EMPTY)]", "[]"),
    ("$(UNDEFINED) stays", "$(UNDEFINED) stays"),
    ("$$(NODE_NAME) is escaped", "$(NODE_NAME) is escaped"),
    ("$$$$", "$$"),
    ("a $ alone, $x and $", "a $ alone, $x and $"),
    ("$(NODE_NAME unclosed", "$(NODE_NAME unclosed"),
])
def test_references_are_expanded_as_upstream_does(text, expanded):
    assert expand(text, ENV) == expanded
