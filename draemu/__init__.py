"""draemu: a Kubernetes control plane for Dynamic Resource Allocation, in one Python process."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("draemu")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

# The Kubernetes release whose API and behaviour draemu reproduces.
KUBERNETES_VERSION = "v1.37.0"
