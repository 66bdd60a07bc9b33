"""Manifests users apply (installed as `draemu.examples` so `draemu demo` finds them)."""
