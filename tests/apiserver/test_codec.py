"""Wire details: Go-style bools, Accept negotiation, ages as kubectl prints them."""

from __future__ import annotations

import pytest

from draemu.api.errors import StatusError
from draemu.api.meta import human_duration
from draemu.apiserver.wire.codec import negotiate, parse_bool

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("text", "value"), [("true", True), ("True", True), ("1", True),
                                             ("t", True), ("FALSE", False), ("0", False),
                                             ("", False), (None, False)])
def test_bools_parse_like_go(text: str | None, value: bool) -> None:
    assert parse_bool(text, "watch") is value


def test_a_bool_go_would_refuse_is_400() -> None:
    with pytest.raises(StatusError) as e:
        parse_bool("yes", "watch")
    assert e.value.code == 400


@pytest.mark.parametrize(("seconds", "text"), [(5, "5s"), (119, "119s"), (150, "2m30s"),
                                               (600, "10m"), (3 * 3600 + 60, "3h1m"),
                                               (30 * 3600, "30h"), (3 * 86400, "3d"),
                                               (3 * 86400 + 7200, "3d2h"), (400 * 86400, "400d"),
                                               (3 * 365 * 86400, "3y")])
def test_ages_print_like_kubectl(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_accept_order_decides_table_or_discovery() -> None:
    assert negotiate("application/json;as=Table;v=v1;g=meta.k8s.io,application/json").table \
        == "v1"
    assert negotiate("application/json,application/json;as=Table;v=v1;g=meta.k8s.io").table \
        == ""
    v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert negotiate(f"{v2},application/json").discovery_v2
    assert not negotiate(f"{v2};profile=nopeer,application/json").discovery_v2
    assert negotiate("application/vnd.kubernetes.protobuf,application/json") == negotiate(None)
