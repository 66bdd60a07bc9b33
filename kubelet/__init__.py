"""Emulated kubelets: node registration, plugin registration, the DRA manager, CDI, runtimes."""

from draemu import check_import_name

check_import_name(__name__)
