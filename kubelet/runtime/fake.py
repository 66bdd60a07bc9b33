"""The default runtime: containers "run" without executing anything.

A container's log is what it would see: its environment as `declare -x NAME="value"`
lines (bash's `export` listing, which the upstream example driver's demos print), then
the other CDI edits it would get (device nodes, mounts, hooks) as comments. Regular
containers keep running until stopped; init containers exit 0 at once.

A pod can make its containers end by themselves, e.g. so that a Job completes:
`draemu.io/fake-exit-after: "5s"` (or a number of seconds) ends each regular container
after that time with `draemu.io/fake-exit-code` (default 0).
"""

from __future__ import annotations

import asyncio

from draemu.kubelet.runtime.base import Container, ContainerConfig, CRILogWriter, RuntimeError_

EXIT_AFTER = "draemu.io/fake-exit-after"
EXIT_CODE = "draemu.io/fake-exit-code"


def exit_plan(annotations: dict[str, str]) -> tuple[float, int] | None:
    """(seconds, exit code) from the pod's fake-runtime annotations, or None."""
    after = annotations.get(EXIT_AFTER)
    if after is None:
        return None
    text = after.strip().removesuffix("s")
    try:
        seconds = float(text)
        code = int(annotations.get(EXIT_CODE, "0"))
    except ValueError:
        raise RuntimeError_(f"annotation {EXIT_AFTER}={after!r} / {EXIT_CODE}="
                            f"{annotations.get(EXIT_CODE)!r}: expected seconds such as \"5s\" "
                            "and an integer exit code") from None
    if seconds < 0 or not 0 <= code <= 255:
        raise RuntimeError_(f"annotation {EXIT_AFTER} must be >= 0 and {EXIT_CODE} in 0..255")
    return seconds, code


def listing(config: ContainerConfig) -> list[str]:
    lines = [f'declare -x {name}="{_quote(value)}"' for name, value in sorted(config.env.items())]
    for device in config.cdi_devices:
        lines.append(f"# CDI device: {device}")
    for node in config.edits.device_nodes:
        host = node.get("hostPath") or node["path"]
        lines.append(f"# device node: {node['path']} (host {host})")
    for mount in config.edits.mounts:
        options = ",".join(mount.get("options") or [])
        lines.append(f"# mount: {mount['hostPath']} -> {mount['containerPath']}"
                     + (f" ({options})" if options else ""))
    for hook in config.edits.hooks:
        argv = " ".join([hook["path"], *(hook.get("args") or [])])
        lines.append(f"# hook {hook['hookName']}: {argv}")
    if config.edits.additional_gids:
        lines.append(f"# additional gids: {' '.join(map(str, config.edits.additional_gids))}")
    return lines


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


class FakeRuntime:
    name = "fake"

    async def start(self, config: ContainerConfig, init: bool = False) -> Container:
        writer = CRILogWriter(config.log_path)
        try:
            for line in listing(config):
                writer.write_line(line)
        finally:
            writer.close()
        plan = exit_plan(config.annotations)
        container = Container()
        if init:
            container.finish(0, "Completed")
        elif plan is not None:
            seconds, code = plan
            asyncio.get_running_loop().call_later(
                seconds, container.finish, code, "Completed" if code == 0 else "Error")
        return container

    async def kill(self, container: Container, grace_seconds: float) -> None:
        # The demos' containers trap TERM and exit 0.
        container.finish(0, "Completed")

    async def run_pod_sandbox(self, pod_uid: str, host_network: bool) -> str | None:
        return None

    async def remove_pod(self, pod_uid: str) -> None:
        return None

    async def exec(self, container: Container, argv: list[str], timeout: float
                   ) -> tuple[int, bytes]:
        raise RuntimeError_("the fake runtime runs no commands")

    def exec_argv(self, container: Container, argv: list[str]) -> list[str]:
        raise RuntimeError_("the fake runtime runs no commands")
