"""The divergences from upstream's allocator that the differential test found and draemu
fixed (tests/e2e/allocator/regressions/, each with upstream's recorded answer), checked
without Go: draemu must still answer each as upstream did."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[2] / "e2e" / "allocator"
sys.path.insert(0, str(HERE))

from allocdiff_compare import draemu_decide, message_differs, normal  # noqa: E402

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("path", sorted((HERE / "regressions").glob("*.json")),
                         ids=lambda p: p.stem)
def test_draemu_answers_as_upstream_did(path: Path) -> None:
    kept = json.loads(path.read_text())
    mine = draemu_decide(kept["case"])
    assert normal(mine) == kept["upstream"], kept["note"]
    assert not message_differs(kept["upstream"], mine)
