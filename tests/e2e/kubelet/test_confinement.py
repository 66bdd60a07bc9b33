"""Issue 35, defect 1: on `draemu up --runtime process`, `create pods` must not mean root
on the machine. A ServiceAccount allowed only to create pods in its namespace creates a
pod that tries to read the machine's shadow file, the data dir, the admin kubeconfig,
the ServiceAccount signing key and the store, to write markers into the machine's /tmp
and /, and to signal draemu itself; nothing outside the pod's root may be read or
written, and the pod's status says so (it exits with the number of escapes: 0).

Run without an image map (every image gets a root of the machine's system folders)
and with every image mapped to the machine's `/` (the worst case: the whole file system
below the pod's root, so only the user namespace and the files' permissions stand in
the way). The cluster's folder is made world-traversable, so that only draemu's own
permissions protect what is in it."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from draemu.cmd.testing.process import RunningDraemu, draemu_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root"),
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")]

# Each attempt prints one line; the exit code is the number of reads that worked.
SCRIPT = """
escapes=0
for path in "$@"; do
  if [ -d "$path" ]; then ls -A "$path" >/dev/null 2>&1; else head -c 1 "$path" >/dev/null 2>&1; fi
  if [ $? -eq 0 ]; then echo "READ $path"; escapes=$((escapes + 1)); else echo "denied $path"; fi
done
for marker in "$TMP_MARKER" "$ROOT_MARKER"; do
  echo escaped > "$marker" 2>/dev/null && echo "wrote $marker in the pod's root"
done
if kill -0 "$DRAEMU_PID" 2>/dev/null; then echo "SIGNALLED draemu"; escapes=$((escapes + 1))
else echo "denied signal to draemu"; fi
exit $escapes
"""


@pytest.fixture(params=["system-root", "machine-root-image"])
def cluster(request) -> Iterator[tuple[RunningDraemu, Path]]:
    folder = Path(tempfile.mkdtemp(prefix="draemu-escape-", dir="/tmp"))
    folder.chmod(0o755)  # the cluster's files are protected by draemu alone
    args = ["--preset", "empty", "--nodes", "1", "--runtime", "process"]
    if request.param == "machine-root-image":
        args += ["--image-map", "*=/"]
    try:
        with draemu_up(folder / "cluster", *args) as running:
            yield running, folder / "cluster"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def service_account_kubeconfig(c: RunningDraemu, folder: Path) -> Path:
    c.kubectl("create", "namespace", "tenant")
    c.kubectl("create", "serviceaccount", "builder", "-n", "tenant")
    c.kubectl("create", "role", "pod-creator", "--verb=create", "--resource=pods", "-n", "tenant")
    c.kubectl("create", "rolebinding", "builder", "--role=pod-creator",
              "--serviceaccount=tenant:builder", "-n", "tenant")
    path = folder / "builder.kubeconfig"
    subprocess.run([sys.executable, "-m", "draemu", "kubeconfig", "--service-account",
                    "tenant/builder", "--data-dir", str(folder / "data"), "-o", str(path)],
                   check=True, capture_output=True, timeout=60)
    return path


def test_a_pod_of_a_create_only_service_account_reads_and_writes_nothing_outside_its_root(
        cluster):
    c, folder = cluster
    data = folder / "data"
    targets = ["/etc/shadow", str(data), str(data / "state.db"), str(data / "pki" / "sa.key"),
               str(data / "kubeconfig"), str(folder / "kubeconfig"),
               str(data / "nodes" / "node-1" / "kubeconfig"), "/proc/1/root/etc/shadow"]
    token = secrets.token_hex(6)
    tmp_marker, root_marker = Path(f"/tmp/draemu-escape-{token}"), Path(f"/draemu-escape-{token}")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "escape"},
           "spec": {"restartPolicy": "Never", "containers": [{
               "name": "main", "image": "ubuntu:22.04",
               "command": ["sh", "-c", SCRIPT, "escape", *targets],
               "env": [{"name": "TMP_MARKER", "value": str(tmp_marker)},
                       {"name": "ROOT_MARKER", "value": str(root_marker)},
                       {"name": "DRAEMU_PID", "value": str(c.process.pid)}],
               "securityContext": {"runAsUser": 0}}]}}
    kubeconfig = service_account_kubeconfig(c, folder)
    created = c.kubectl("--kubeconfig", str(kubeconfig), "create", "-n", "tenant", "-f", "-",
                        input=json.dumps(pod))
    assert created.stdout == "pod/escape created\n"

    deadline = time.monotonic() + 60
    while True:
        obj = json.loads(c.kubectl("get", "pod", "escape", "-n", "tenant", "-o", "json").stdout)
        if obj["status"].get("phase") in ("Succeeded", "Failed"):
            break
        assert time.monotonic() < deadline, obj["status"]
        time.sleep(0.3)
    log = c.kubectl("logs", "escape", "-n", "tenant").stdout.splitlines()
    try:
        assert not tmp_marker.exists() and not root_marker.exists()
        assert log == [*(f"denied {t}" for t in targets),
                       f"wrote {tmp_marker} in the pod's root",
                       f"wrote {root_marker} in the pod's root",
                       "denied signal to draemu"]
        assert obj["status"]["phase"] == "Succeeded"
        assert obj["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    finally:
        tmp_marker.unlink(missing_ok=True)
        root_marker.unlink(missing_ok=True)


# draemu in a user namespace of its own in which no further one may be made: a machine
# without user namespaces, as far as draemu can tell.
NO_USER_NAMESPACES = ["unshare", "--user", "--map-root-user", "sh", "-c",
                      'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh"]


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_without_user_namespaces_the_runtime_refuses_to_start_unless_told_to_run_unconfined(
        tmp_path):
    args = ["--preset", "empty", "--nodes", "1", "--runtime", "process"]
    with pytest.raises(RuntimeError) as refused:
        with draemu_up(tmp_path / "confined", *args, prefix=NO_USER_NAMESPACES):
            pass
    assert ("error: --runtime process cannot start: this machine cannot give pods a user "
            "namespace of their own (a user namespace: No space left on device (errno ENOSPC): "
            "user namespaces are disabled or used up here (sysctl user.max_user_namespaces)); "
            "--runtime-unconfined runs them without one, as this machine's root (anyone who "
            "may create pods then controls this machine)") in str(refused.value)
    with draemu_up(tmp_path / "unconfined", *args, "--runtime-unconfined",
                   prefix=NO_USER_NAMESPACES) as c:
        c.kubectl("run", "mapped", "--image=busybox", "--restart=Never", "--command", "--",
                  "cat", "/proc/self/uid_map")
        deadline = time.monotonic() + 60
        while "Succeeded" not in c.kubectl("get", "pod", "mapped", "-o",
                                           "jsonpath={.status.phase}").stdout:
            assert time.monotonic() < deadline
            time.sleep(0.3)
        # No user namespace of its own: the pod's ids are draemu's.
        assert c.kubectl("logs", "mapped").stdout.split() == ["0", "0", "1"]


@pytest.fixture
async def node(apiserver, tmp_path):
    from draemu.cmd.nodes import node_kubeconfig, start_node
    from draemu.drivers.presets import NodeSpec

    path = node_kubeconfig(apiserver, tmp_path, "node-1")
    started = await start_node(NodeSpec("node-1"), kubeconfig=path, data_dir=tmp_path,
                               server=apiserver, runtime="process")
    yield started
    await started.stop()


async def finished_log(client, name: str) -> str:
    from draemu.cmd.testing.e2e import eventually

    async def done() -> str | None:
        obj = await client.get("v1", "pods", name, "default")
        if obj["status"].get("phase") not in ("Succeeded", "Failed"):
            return None
        _code, _h, body = await client.request(
            "GET", f"/api/v1/namespaces/default/pods/{name}/log")
        return body.decode()

    return await eventually(done)


def host_pod(name: str, script: str, volumes: list[dict], mounts: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "node-1", "restartPolicy": "Never", "containers": [{
                "name": "main", "image": "busybox", "command": ["sh", "-c", script],
                "volumeMounts": mounts}], "volumes": volumes}}


async def test_links_a_pod_leaves_in_host_paths_stay_inside_the_node(apiserver, node, tmp_path):
    from draemu.client import Client

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("machine's")
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as client:
        # A pod with the node's /srv plants links to this machine's folders ...
        await client.create("v1", "pods", host_pod(
            "planter", f"ln -s {outside} /srv/to-machine; ln -s ../../../../../.. /srv/up; "
            "ln -s /etc /srv/etc; echo planted",
            [{"name": "srv", "hostPath": {"path": "/srv", "type": "DirectoryOrCreate"}}],
            [{"name": "srv", "mountPath": "/srv"}]), "default")
        assert await finished_log(client, "planter") == "planted\n"
        # ... and a later pod's hostPath, subPath and FileOrCreate go through them.
        await client.create("v1", "pods", host_pod(
            "follower", "ls -A /a; ls -A /b; ls -A /c; ls -A /d; echo done",
            [{"name": "a", "hostPath": {"path": "/srv/to-machine"}},
             {"name": "b", "hostPath": {"path": "/srv/up/etc", "type": "DirectoryOrCreate"}},
             {"name": "c", "hostPath": {"path": "/srv"}},
             {"name": "d", "hostPath": {"path": "/srv/etc/created", "type": "FileOrCreate"}}],
            [{"name": "a", "mountPath": "/a"}, {"name": "b", "mountPath": "/b"},
             {"name": "c", "mountPath": "/c", "subPath": "to-machine"},
             {"name": "d", "mountPath": "/d"}]), "default")
        log = await finished_log(client, "follower")
    # Each link resolved inside the node's folder (its top as `/`): folders and the file
    # made there (/b and /d are the same folder of the node), not in the machine's /etc
    # or the test's folder.
    assert log == "created\n/d\ndone\n"
    root = node.kubelet.layout.root
    assert (root / "host" / "srv" / "to-machine").is_symlink()
    assert (root / str(outside).lstrip("/")).is_dir()  # made inside the node's folder
    assert (root / "etc" / "created").is_file()
    assert not Path("/etc/created").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
