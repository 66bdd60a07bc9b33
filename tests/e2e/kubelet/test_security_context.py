"""The process runtime applies a container's securityContext inside the pod's user
namespace: each field as the container sees it, and as this machine sees the same
process (its /proc/<pid>/status): never one of the machine's own users or groups, never
the machine's root."""

from __future__ import annotations

import asyncio
import base64
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from draemu.client import Client
from draemu.cmd.nodes import node_kubeconfig, start_node
from draemu.cmd.testing.e2e import eventually
from draemu.drivers.presets import NodeSpec
from draemu.kubelet.runtime.userns import FIRST

pytestmark = [pytest.mark.e2e, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")]

DEFAULT_CAPS = 0xA80425FB  # containerd's default set
ALL_CAPS = (1 << (int(Path("/proc/sys/kernel/cap_last_cap").read_text()) + 1)) - 1
CAP_NET_ADMIN, CAP_CHOWN, CAP_KILL = 12, 0, 5


@pytest.fixture
async def client(apiserver):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def node(apiserver, tmp_path):
    path = node_kubeconfig(apiserver, tmp_path, "node-1")
    started = await start_node(NodeSpec("node-1"), kubeconfig=path, data_dir=tmp_path,
                               server=apiserver, runtime="process")
    yield started
    await started.stop()


def status_of(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def machine_view(marker: str) -> dict[str, str]:
    """/proc/<pid>/status, as this machine sees it, of the process running `sleep marker`."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", marker.encode()]:
                return status_of(int(entry.name))
    raise AssertionError(f"no process runs sleep {marker}")


async def run(client, name: str, script: str, container: dict[str, Any] | None = None,
              **spec: Any) -> tuple[list[str], dict[str, str], dict[str, Any]]:
    """Run `script` in a container, then `sleep`: its log, the machine's view of it, the pod."""
    marker = f"{random.randint(100000, 999999)}"
    body = {"name": "main", "image": "busybox", "command": ["sh", "-c", f"{script}\n"
            f"echo ready; exec sleep {marker}"], **(container or {})}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 1,
                    "containers": [body], **spec}}
    created = await client.create("v1", "pods", pod, "default")

    async def ready() -> tuple[list[str]] | None:
        code, _h, raw = await client.request(
            "GET", f"/api/v1/namespaces/default/pods/{name}/log")
        lines = raw.decode().splitlines() if code == 200 else []
        return (lines[:-1],) if lines and lines[-1] == "ready" else None

    (lines,) = await eventually(ready)
    return lines, machine_view(marker), created


def ids(text: str) -> list[int]:
    return [int(v) for v in text.split()]


async def test_run_as_user_is_a_user_of_the_pod_never_of_the_machine(client, node):
    lines, machine, pod = await run(
        client, "user", "id -u; touch /data/made-by-pod; stat -c %u /data/made-by-pod",
        {"securityContext": {"runAsUser": 1000},
         "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
        volumes=[{"name": "data", "emptyDir": {}}])
    assert lines == ["1000", "1000"]
    real, effective, saved, fs = ids(machine["Uid"])
    assert real == effective == saved == fs
    assert real >= FIRST + 1000 and (real - FIRST) % 65536 == 1000
    # The volume stores the pod's own ids (an ID-mapped mount), as on a real node.
    folder = node.kubelet.layout.root / "volumes" / pod["metadata"]["uid"] / "data"
    assert (folder / "made-by-pod").stat().st_uid == 1000


async def test_run_as_group_is_a_group_of_the_pod_never_of_the_machine(client, node):
    lines, machine, _pod = await run(client, "group", "id -g",
                                     {"securityContext": {"runAsUser": 1000,
                                                          "runAsGroup": 3000}})
    assert lines == ["3000"]
    real, effective, saved, fs = ids(machine["Gid"])
    assert real == effective == saved == fs and (real - FIRST) % 65536 == 3000
    assert real >= FIRST + 3000


async def test_supplemental_groups_and_fs_group_are_the_processes_groups(client, node):
    lines, machine, _pod = await run(
        client, "groups", "id -G", {"securityContext": {"runAsUser": 1000, "runAsGroup": 3000}},
        securityContext={"supplementalGroups": [4000, 5000], "fsGroup": 2000})
    assert sorted(ids(lines[0])) == [2000, 3000, 4000, 5000]
    machine_groups = ids(machine["Groups"])
    assert len(machine_groups) == 3 and all(g >= FIRST for g in machine_groups)
    assert sorted((g - FIRST) % 65536 for g in machine_groups) == [2000, 4000, 5000]


async def test_fs_group_owns_the_pods_volumes(client, node):
    await client.create("v1", "secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "key"},
        "data": {"key": base64.b64encode(b"s3cret").decode()}}, "default")
    lines, _machine, _pod = await run(
        client, "fsgroup",
        "stat -c '%g %A' /scratch; cat /secret/key; echo; touch /scratch/new; "
        "stat -c '%g' /scratch/new",
        {"securityContext": {"runAsUser": 1000},
         "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"},
                          {"name": "secret", "mountPath": "/secret"}]},
        securityContext={"fsGroup": 2000},
        volumes=[{"name": "scratch", "emptyDir": {}},
                 {"name": "secret", "secret": {"secretName": "key", "defaultMode": 0o400}}])
    # Upstream's volume ownership: group 2000, setgid folders, group-readable files.
    assert lines == ["2000 drwxrwsrwx", "s3cret", "2000"]


async def test_a_read_only_root_file_system_refuses_writes_but_not_to_volumes(client, node):
    lines, _machine, _pod = await run(
        client, "readonly",
        "touch /made 2>&1 | sed 's/.*: //'; touch /tmp/made 2>&1 | sed 's/.*: //'; "
        "touch /data/made && echo volume written",
        {"securityContext": {"readOnlyRootFilesystem": True},
         "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
        volumes=[{"name": "data", "emptyDir": {}}])
    assert lines == ["Read-only file system", "Read-only file system", "volume written"]


async def test_capabilities_are_containerds_defaults_with_add_and_drop(client, node):
    script = "grep -E '^Cap(Bnd|Eff)' /proc/self/status | cut -f2"
    default, machine, _pod = await run(client, "caps-default", script)
    assert [int(v, 16) for v in default] == [DEFAULT_CAPS, DEFAULT_CAPS]
    assert int(machine["CapBnd"], 16) == DEFAULT_CAPS
    changed, _machine, _pod = await run(client, "caps-changed", script, {"securityContext": {
        "capabilities": {"add": ["NET_ADMIN"], "drop": ["CHOWN", "KILL"]}}})
    expected = (DEFAULT_CAPS | 1 << CAP_NET_ADMIN) & ~(1 << CAP_CHOWN | 1 << CAP_KILL)
    assert [int(v, 16) for v in changed] == [expected, expected]
    none, _machine, _pod = await run(client, "caps-none", script, {"securityContext": {
        "capabilities": {"drop": ["ALL"]}}})
    assert [int(v, 16) for v in none] == [0, 0]


async def test_a_user_other_than_root_has_no_effective_capabilities(client, node):
    lines, _machine, _pod = await run(
        client, "caps-user", "grep -E '^Cap(Bnd|Eff)' /proc/self/status | cut -f2",
        {"securityContext": {"runAsUser": 1000}})
    assert [int(v, 16) for v in lines] == [0, DEFAULT_CAPS]  # CapEff, CapBnd


async def test_no_privilege_escalation_sets_no_new_privs(client, node):
    lines, machine, _pod = await run(client, "nnp", "grep NoNewPrivs /proc/self/status | cut -f2",
                                     {"securityContext": {"allowPrivilegeEscalation": False}})
    assert lines == ["1"]
    assert machine["NoNewPrivs"] == "1"
    lines, _machine, _pod = await run(client, "escalate",
                                      "grep NoNewPrivs /proc/self/status | cut -f2")
    assert lines == ["0"]


async def test_a_privileged_container_has_every_capability_of_its_user_namespace_only(
        client, node):
    lines, machine, _pod = await run(
        client, "privileged",
        "grep -E '^Cap(Bnd|Eff)' /proc/self/status | cut -f2; "
        "mount -t tmpfs none /tmp 2>/dev/null && echo mounted || echo mount refused; "
        "ls /dev/vda /dev/sda 2>&1 | wc -l; "
        "head -c 1 /proc/kcore >/dev/null 2>&1 && echo kcore read || echo kcore denied",
        {"securityContext": {"privileged": True}})
    assert [int(v, 16) for v in lines[:2]] == [ALL_CAPS, ALL_CAPS]
    assert lines[2] == "mount refused"  # the mount namespace is the machine's root's
    assert lines[3] == "2"  # two "No such file" lines: no device of the machine
    assert lines[4] == "kcore denied"
    assert ids(machine["Uid"])[0] >= FIRST  # not the machine's root


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_exec_runs_with_the_containers_identity(client, node, apiserver):
    await run(client, "identity", "true", {"securityContext": {
        "runAsUser": 1000, "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}})
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(apiserver.kubeconfig_path), "exec", "identity", "--",
        "sh", "-c", "id -u; grep -E '^(CapBnd|NoNewPrivs)' /proc/self/status | cut -f2; "
        "ps -e -o pid= | wc -l", stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    # uid, bounding set (NET_BIND_SERVICE only), no_new_privs, and the container's
    # processes only (its init, sleep, sh, ps, wc)
    assert out.decode().split() == ["1000", f"{1 << 10:016x}", "1", "5"]
