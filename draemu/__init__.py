"""draemu: a Kubernetes control plane for Dynamic Resource Allocation, in one Python process.

This package is the shared library (`api`, `client`, `cel`, `kubeletapi`, `pki`,
`identity`, `features`, `log`, ...), which imports no component; `draemu.cmd` is the
composition root; `draemu.<part>` for `store`, `apiserver`, `scheduler`, ... are links to
the top-level folders of the same names, so an import name is a path (ARCHITECTURE.md).
"""

from __future__ import annotations

# The Kubernetes release whose API and behaviour draemu reproduces.
KUBERNETES_VERSION = "v1.37.0"


def check_import_name(name: str) -> None:
    """Each top-level folder (`store/`, `apiserver/`, ...) is a package only as
    `draemu.<folder>`. Imported by its bare name (`import store` from the repository root,
    where the folder is on `sys.path`), every module under it would load a second time,
    with classes that are not the draemu.* ones (`store.errors.ConflictError is not
    draemu.store.errors.ConflictError`): so that import fails at once."""
    if not name.startswith("draemu."):
        raise ImportError(f"import draemu.{name}, not {name}: the top-level folders are "
                          "packages of draemu only (ARCHITECTURE.md, 'The rule')")


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
