"""Fixtures of the resource.k8s.io strategy tests."""

from __future__ import annotations

import pytest

from draemu.apiserver.registry.strategy import Context
from draemu.features import FeatureGates


@pytest.fixture
def ctx() -> Context:
    """The default gates of Kubernetes 1.37."""
    return Context(gates=FeatureGates())
