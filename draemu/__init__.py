"""draemu: a Kubernetes control plane for Dynamic Resource Allocation, in one Python process."""

from __future__ import annotations

# The Kubernetes release whose API and behaviour draemu reproduces.
KUBERNETES_VERSION = "v1.37.0"


def __getattr__(name: str) -> str:
    # `__version__` on first use: importlib.metadata costs every command ~10 ms at start.
    if name != "__version__":
        raise AttributeError(f"module 'draemu' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    global __version__
    try:
        __version__ = version("draemu")
    except PackageNotFoundError:  # running from a source tree that was never installed
        __version__ = "0.0.0+source"
    return __version__
