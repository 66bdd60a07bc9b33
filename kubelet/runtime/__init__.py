"""Container runtimes: `fake` (default; nothing runs) and `process` (opt-in; local processes)."""

from draemu.kubelet.runtime.base import ContainerConfig, Runtime, RuntimeError_
from draemu.kubelet.runtime.fake import FakeRuntime
from draemu.kubelet.runtime.process import ProcessRuntime

RUNTIMES: dict[str, type[Runtime]] = {"fake": FakeRuntime, "process": ProcessRuntime}


def make_runtime(name: str) -> Runtime:
    try:
        return RUNTIMES[name]()
    except KeyError:
        raise ValueError(f"unknown runtime {name!r} (known: {', '.join(RUNTIMES)})") from None


__all__ = [
    "RUNTIMES",
    "ContainerConfig",
    "FakeRuntime",
    "ProcessRuntime",
    "Runtime",
    "RuntimeError_",
    "make_runtime",
]
