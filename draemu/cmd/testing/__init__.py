"""Test support: throw-away servers and in-process clusters, usable as pytest fixtures."""
