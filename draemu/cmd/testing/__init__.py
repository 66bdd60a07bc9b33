"""Test support: throw-away servers and in-process clusters, usable as pytest fixtures
(`apiserver`, `cluster`, `store` plugins), a throw-away PostgreSQL (`postgres`), processes
(`process`) and helpers for tests against a running apiserver (`e2e`)."""
