"""Identities and the default authorizer."""

from __future__ import annotations

from pathlib import Path

import pytest

from draemu.apiserver.auth.authentication import TokenFileError, load_token_file
from draemu.identity import UserInfo, user_from_peercert

pytestmark = pytest.mark.unit


def test_token_file_lines_become_users_with_groups(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('t1,alice,1,"a,b"\nt2,bob,2\n')
    tokens = load_token_file(path)
    assert tokens["t1"] == UserInfo("alice", "1", ("a", "b", "system:authenticated"))
    assert tokens["t2"].groups == ("system:authenticated",)


def test_token_file_with_too_few_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("only-a-token,alice\n")
    with pytest.raises(TokenFileError, match="line 1"):
        load_token_file(path)


def test_certificate_subject_gives_user_and_groups() -> None:
    peer = {"subject": ((("organizationName", "system:nodes"),),
                        (("commonName", "system:node:n1"),))}
    user = user_from_peercert(peer)
    assert user is not None and user.node_name == "n1"
    assert user.groups == ("system:nodes", "system:authenticated")


def test_a_node_name_needs_the_nodes_group() -> None:
    assert UserInfo("system:node:n1", groups=("system:authenticated",)).node_name is None


