"""The container's process identity: user, groups, capabilities, no_new_privs.

`user` (from the kubelet): uid, gid and supplementary groups as the container sees them
(inside its user namespace when it has one); `caps`, the capability numbers the
container keeps in its bounding set (None: all of them, a privileged container); a
container running as uid 0 has them effective and permitted, any other uid none (as
container runtimes leave non-root processes without ambient capabilities);
`noNewPrivs`, allowPrivilegeEscalation: false.
"""

from __future__ import annotations

import os
from typing import Any

from . import syscalls as sc


def become(user: dict[str, Any]) -> None:
    caps = user.get("caps")
    groups = [int(g) for g in user.get("groups") or []]
    gid, uid = int(user.get("gid") or 0), int(user.get("uid") or 0)
    try:
        os.setgroups(groups)
    except PermissionError as err:
        # A user namespace whose setgroups is denied (draemu itself run unconfined in one):
        # no groups to drop but those it was made with; asked-for groups cannot be given.
        if groups:
            raise sc.LaunchError(f"supplementary groups {groups}: {err.strerror}") from err
    try:
        os.setresgid(gid, gid, gid)
    except OSError as err:
        raise sc.LaunchError(f"group {gid}: {err.strerror}") from err
    if caps is not None:
        keep = set(caps)
        for cap in range(sc.last_cap() + 1):
            if cap not in keep:
                sc.prctl(sc.PR_CAPBSET_DROP, cap, "dropping a capability")
    sc.prctl(sc.PR_SET_KEEPCAPS, 0, "prctl")
    try:
        os.setresuid(uid, uid, uid)  # to a uid other than 0: the kernel clears every capability
    except OSError as err:
        raise sc.LaunchError(f"user {uid}: {err.strerror}") from err
    if uid == 0:
        sc.capset(list(range(sc.last_cap() + 1)) if caps is None else list(caps))
    sc.prctl(sc.PR_CAP_AMBIENT, sc.PR_CAP_AMBIENT_CLEAR_ALL, "clearing ambient capabilities")
    if user.get("noNewPrivs"):
        sc.prctl(sc.PR_SET_NO_NEW_PRIVS, 1, "setting no_new_privs")


def drop_everything() -> None:
    """For the container's init: no capabilities at all, none to gain."""
    for cap in range(sc.last_cap() + 1):
        sc.prctl(sc.PR_CAPBSET_DROP, cap, "dropping a capability")
    sc.capset([])
    sc.prctl(sc.PR_SET_NO_NEW_PRIVS, 1, "setting no_new_privs")
