"""Sub-commands of `draemu`; one module each (see draemu/cmd/cli.py)."""
