pytest_plugins = ["draemu.testing.apiserver"]
