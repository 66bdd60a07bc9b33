# Fixtures for driver tests: an in-process draemu cluster (see draemu/testing/cluster.py).
pytest_plugins = ["draemu.testing.cluster"]
