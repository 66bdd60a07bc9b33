from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from allocdiff_oracle import Oracle, build


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    """One allocoracle process for the whole session."""
    try:
        binary = build()
    except FileNotFoundError as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Go is required under CI=true: {e}")
        pytest.skip(str(e))
    o = Oracle(binary)
    yield o
    o.close()
