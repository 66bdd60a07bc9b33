"""The default runtime: containers "run" without executing anything.

A container's log is what it would see: its environment as `declare -x NAME="value"`
lines (bash's `export` listing, which the upstream example driver's demos print), then
the other CDI edits it would get (device nodes, mounts, hooks) as comments. Regular
containers keep running until stopped; init containers exit 0 at once.
"""

from __future__ import annotations

from draemu.kubelet.runtime.base import Container, ContainerConfig, CRILogWriter


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
        container = Container()
        if init:
            container.finish(0, "Completed")
        return container

    async def kill(self, container: Container, grace_seconds: float) -> None:
        # The demos' containers trap TERM and exit 0.
        container.finish(0, "Completed")
