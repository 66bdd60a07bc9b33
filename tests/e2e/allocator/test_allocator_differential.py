"""draemu's structured allocator against upstream's own (issue 33): generated cases (see
allocdiff_gen) decided by both, k8s.io/dynamic-resource-allocation v0.37.2's
`structured` package in tests/e2e/go/cmd/allocoracle (one process for the session, fed
a line per case) and scheduler/dra, and compared (allocdiff_compare).

`DRAEMU_ALLOC_DIFF_EXAMPLES` sets how many cases (2,000 by default, with a fixed seed;
100000 is the long run), `DRAEMU_ALLOC_DIFF_SEED` another seed, and
`DRAEMU_ALLOC_DIFF_OUT` a folder where every diverging case is written as a JSON file
(regressions/ holds those that were found and fixed, each with upstream's answer;
tests/scheduler/dra/test_dra_upstream_regressions.py checks draemu against those answers
without Go).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from allocdiff_compare import (
    deterministic,
    differences,
    draemu_decide,
    invalid,
    message_differs,
    normal,
)
from allocdiff_gen import case
from allocdiff_oracle import Oracle
from hypothesis import HealthCheck, Phase, given, seed, settings

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(7 * 24 * 3600)]

EXAMPLES = int(os.environ.get("DRAEMU_ALLOC_DIFF_EXAMPLES") or 2000)
SEED = int(os.environ.get("DRAEMU_ALLOC_DIFF_SEED") or 33)
REGRESSIONS = Path(__file__).parent / "regressions"
# Upstream's stable tier visits pools in Go's random map order: each of its cases runs
# this many times, and the case counts as nondeterministic when the runs disagree.
STABLE_RUNS = 3


def decide_both(oracle: Oracle, c: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    upstream = oracle.decide(c, runs=STABLE_RUNS)
    return upstream, draemu_decide(c)


def test_generated_cases_decide_as_upstream(oracle: Oracle, tmp_path: Path) -> None:
    out = Path(os.environ.get("DRAEMU_ALLOC_DIFF_OUT") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    seen: Counter[str] = Counter()
    found: list[str] = []
    started = time.monotonic()

    @seed(SEED)
    @settings(max_examples=EXAMPLES, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case())
    def one(c: dict[str, Any]) -> None:
        problems = invalid(c)
        if problems:
            seen["invalid"] += 1  # an apiserver would refuse it: not an input
            return
        upstream, mine = decide_both(oracle, c)
        seen[f"{upstream.get('tier')} {upstream['status']}"] += 1
        seen["cases"] += 1
        if not deterministic(c, upstream):
            seen["status compared only"] += 1
        diff = differences(c, upstream, mine)
        if not diff and deterministic(c, upstream) and message_differs(upstream, mine):
            diff = [f"message: upstream {upstream['error']!r}, draemu {mine.get('error')!r}"]
        if diff:
            path = out / f"divergence-{len(found)}.json"
            path.write_text(json.dumps({"differences": diff, "case": c,
                                        "upstream": normal(upstream),
                                        "draemu": normal(mine)}, indent=1))
            found.append(f"{path}: {diff[0][:300]}")

    one()
    elapsed = time.monotonic() - started
    print(f"\nallocator differential: {EXAMPLES} examples (seed {SEED}) in {elapsed:.0f} s: "
          f"{dict(sorted(seen.items()))}; {len(found)} divergences")
    assert not found, f"{len(found)} divergences from upstream:\n" + "\n".join(found[:20])
    # The generator must stay honest: nearly every case is one an apiserver accepts, and
    # every outcome is well represented.
    assert seen["invalid"] <= EXAMPLES // 10, dict(seen)
    for status in ("Allocated", "Unsatisfiable", "Error", "NodeError"):
        assert sum(n for k, n in seen.items() if k.endswith(f" {status}")) >= \
            EXAMPLES // 200, (status, dict(seen))
    for tier in ("stable", "incubating", "experimental"):
        assert sum(n for k, n in seen.items() if k.startswith(f"{tier} ")) >= \
            EXAMPLES // 50, (tier, dict(seen))


def regression_files() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.json"))


@pytest.mark.parametrize("path", regression_files(), ids=lambda p: p.stem)
def test_regression_is_decided_as_upstream(oracle: Oracle, path: Path) -> None:
    """Each kept divergence: upstream still answers as recorded, and draemu so too."""
    kept = json.loads(path.read_text())
    upstream, mine = decide_both(oracle, kept["case"])
    assert normal(upstream) == kept["upstream"]
    assert not differences(kept["case"], upstream, mine)
    assert not message_differs(upstream, mine), (upstream.get("error"), mine.get("error"))
