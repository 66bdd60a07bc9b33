"""Sub-commands of `draemu`; one module each (see draemu/cli.py)."""
