"""Fixture plugins shared by the whole suite (pytest only honours `pytest_plugins` in
the top-level conftest)."""

pytest_plugins = ["draemu.cmd.testing.apiserver", "draemu.cmd.testing.store"]
