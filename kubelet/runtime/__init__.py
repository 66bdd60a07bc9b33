"""Container runtimes: `fake` (default; nothing runs) and `process` (opt-in; containers are
local processes confined in their own namespaces, images mapped to local executables)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from draemu.kubelet.runtime.base import ContainerConfig, Runtime, RuntimeError_
from draemu.kubelet.runtime.fake import FakeRuntime
from draemu.kubelet.runtime.imagemap import ImageMap, ImageMapError
from draemu.kubelet.runtime.process import NamespacesUnavailable, ProcessRuntime

if TYPE_CHECKING:
    from draemu.podnetwork import NodeNetwork

RUNTIMES: dict[str, type[Any]] = {"fake": FakeRuntime, "process": ProcessRuntime}


def make_runtime(name: str, image_map: ImageMap | None = None,
                 api_server: tuple[str, int] | None = None, unconfined: bool = False,
                 node_folder: Path | None = None, network: NodeNetwork | None = None
                 ) -> Runtime:
    if name == "fake":
        return FakeRuntime()
    if name == "process":
        return ProcessRuntime(image_map, api_server, unconfined=unconfined,
                              node_folder=node_folder, network=network)
    raise ValueError(f"unknown runtime {name!r} (known: {', '.join(RUNTIMES)})")


__all__ = [
    "RUNTIMES",
    "ContainerConfig",
    "FakeRuntime",
    "ImageMap",
    "ImageMapError",
    "NamespacesUnavailable",
    "ProcessRuntime",
    "Runtime",
    "RuntimeError_",
    "make_runtime",
]
