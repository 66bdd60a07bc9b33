"""The process runtime runs a container's CDI hooks as an OCI runtime runs them (what
NVIDIA's CDI specs need: nvidia-cdi-hook makes the library's links and runs ldconfig in
the container's root): the node's program, with its arguments and environment, the
container's state on stdin, its bundle's config.json naming the root, before the
container starts; a failing hook is the container's start error."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from draemu.kubelet.cdi import ContainerEdits
from draemu.kubelet.runtime import ImageMap
from draemu.kubelet.runtime.base import ContainerConfig
from draemu.kubelet.runtime.process import ProcessRuntime

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")]

# Writes into the container's root what it was given: its arguments, its environment
# (only what the spec names) and the state's id and status.
HOOK = """#!/bin/sh
state=$(cat)
root=$(printf '%s' "$state" | python3 -c '
import json, sys
state = json.load(sys.stdin)
with open(state["bundle"] + "/config.json") as f:
    print(json.load(f)["root"]["path"])')
printf '%s\\n' "args: $*" "env: $(env | grep -v '^PWD=' | grep -v '^SHLVL=' | sort | tr '\\n' ' ')" \\
  "state: $(printf '%s' "$state" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(s["id"], s["status"])')" >> "$root/etc/hooked"
"""

FAILING = """#!/bin/sh
echo "no GPU here" >&2
echo "second line" >&2
exit 3
"""


def hook(name: str, *args: str, kind: str = "createContainer") -> dict:
    path = f"/var/lib/kubelet/plugins/demo/{name}"
    return {"hookName": kind, "path": path, "args": [name, *args], "env": ["DEMO=1"]}


def config(tmp_path: Path, name: str, hooks: list[dict], command: list[str]) -> ContainerConfig:
    node = tmp_path / "node"
    resolved = [{"hookName": h["hookName"], "base": str(node),
                 "path": h["path"].removeprefix("/var/lib/kubelet/"), "program": h["path"],
                 "args": h["args"], "env": h["env"], "timeout": 10} for h in hooks]
    return ContainerConfig(
        pod_namespace="default", pod_name=name, name="main", image="host", command=command,
        args=[], env={}, working_dir=None, cdi_devices=[], edits=ContainerEdits(hooks=hooks),
        log_path=tmp_path / "logs" / name / "main" / "0.log", pod_uid=f"uid-{name}",
        host_network=True, hooks=resolved)


@pytest.fixture
def runtime(tmp_path: Path) -> ProcessRuntime:
    plugins = tmp_path / "node" / "plugins" / "demo"
    plugins.mkdir(parents=True)
    for name, text in (("hook.sh", HOOK), ("failing.sh", FAILING)):
        (plugins / name).write_text(text)
        (plugins / name).chmod(0o755)
    return ProcessRuntime(image_map=ImageMap({"host": Path("/")}))


async def test_hooks_run_in_oci_order_before_the_container_and_change_its_root(
        runtime, tmp_path):
    hooks = [hook("hook.sh", "create-symlinks", "--link", "a::b"),
             hook("hook.sh", "runtime", kind="createRuntime"),
             hook("hook.sh", "started", kind="startContainer")]
    container = await runtime.start(config(tmp_path, "ok", hooks, ["cat", "/etc/hooked"]))
    code = await asyncio.wait_for(container.exit_code, 30)
    log = (tmp_path / "logs" / "ok" / "main" / "0.log").read_text()
    assert code == 0, log
    lines = [line.split(" F ", 1)[1] for line in log.splitlines()]
    assert lines == ["args: runtime", "env: DEMO=1 ", "state: uid-ok-main-0 creating",
                     "args: create-symlinks --link a::b", "env: DEMO=1 ",
                     "state: uid-ok-main-0 creating"]
    assert not Path("/etc/hooked").exists() or "uid-ok-main-0" not in \
        Path("/etc/hooked").read_text()  # the image's folder itself is left alone


async def test_a_failing_hook_is_the_containers_start_error_with_its_output(
        runtime, tmp_path):
    hooks = [hook("failing.sh", "update-ldcache")]
    container = await runtime.start(config(tmp_path, "bad", hooks, ["true"]))
    code = await asyncio.wait_for(container.exit_code, 30)
    assert (code, container.reason) == (128, "StartError")
    assert container.message == (
        "createContainer hook /var/lib/kubelet/plugins/demo/failing.sh update-ldcache: "
        "exit status 3: no GPU here; second line")


async def test_a_hook_the_node_does_not_have_is_a_start_error(runtime, tmp_path):
    hooks = [hook("missing.sh")]
    container = await runtime.start(config(tmp_path, "missing", hooks, ["true"]))
    await asyncio.wait_for(container.exit_code, 30)
    assert container.reason == "StartError"
    assert container.message == ("createContainer hook /var/lib/kubelet/plugins/demo/"
                                 "missing.sh: No such file or directory")
