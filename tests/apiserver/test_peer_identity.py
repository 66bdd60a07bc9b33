"""Client certificates identify a connection once: the peer certificate is read at the
first request of a TLS connection, not at every request."""

from __future__ import annotations

from typing import Any

import pytest

from draemu.apiserver.auth.authentication import Authenticator
from draemu.identity import UserInfo

pytestmark = pytest.mark.unit


class FakeTLS:
    """An ssl object's view of a connection, counting certificate reads."""

    def __init__(self, cn: str | None, *groups: str) -> None:
        subject = [[("commonName", cn)]] if cn else []
        subject += [[("organizationName", g)] for g in groups]
        self.cert: dict[str, Any] = {"subject": subject} if subject else {}
        self.reads = 0

    def getpeercert(self) -> dict[str, Any]:
        self.reads += 1
        return self.cert


def test_a_connection_certificate_is_read_once() -> None:
    auth = Authenticator()
    tls = FakeTLS("alice", "devs")
    users = [auth.authenticate(tls, None) for _ in range(3)]  # type: ignore[arg-type]
    assert tls.reads == 1
    assert users == [UserInfo("alice", groups=("devs", "system:authenticated"))] * 3


def test_each_connection_has_its_own_identity() -> None:
    auth = Authenticator()
    alice, bob = FakeTLS("alice"), FakeTLS("bob")
    assert auth.authenticate(alice, None).name == "alice"  # type: ignore[arg-type,union-attr]
    assert auth.authenticate(bob, None).name == "bob"  # type: ignore[arg-type,union-attr]


def test_a_connection_without_certificate_uses_the_token_of_each_request() -> None:
    carol = UserInfo("carol", groups=("system:authenticated",))
    auth = Authenticator({"t1": carol})
    tls = FakeTLS(None)
    assert auth.authenticate(tls, "Bearer t1") == carol  # type: ignore[arg-type]
    assert auth.authenticate(tls, "Bearer t2") is None  # type: ignore[arg-type]
    assert tls.reads == 1
