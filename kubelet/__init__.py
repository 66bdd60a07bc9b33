"""Emulated kubelets: node registration, plugin registration, the DRA manager, CDI, runtimes."""
