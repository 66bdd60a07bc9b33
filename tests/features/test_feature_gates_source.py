"""draemu's gate table against the Kubernetes sources it was read from: for each release
of `RELEASE_SOURCES`, every gate draemu knows has, at that release, the stage, default,
lock and dependencies that release's kube_features.go (k8s.io/kubernetes, and the staging
apiserver's and apiextensions-apiserver's features) gives it, and a gate the source no
longer has is REMOVED in draemu.

The sources are the module zips in the Go module cache ($DRAEMU_GO_CACHE/mod, as
tests/e2e/realk8s/build.sh fills it); without them the release's case skips.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from draemu.features import GA, RELEASE_SOURCES, REMOVED, dependencies, known

pytestmark = pytest.mark.unit

MODULES = Path(os.environ.get("DRAEMU_GO_CACHE") or Path.home() / ".cache" / "draemu" / "go") \
    / "mod" / "k8s.io"
_STAGES = {"Alpha": "ALPHA", "Beta": "BETA", "GA": GA, "Deprecated": "DEPRECATED"}
_BLOCK = re.compile(r"^\s*(?:\w+\.)?(\w+):\s*\{\s*\n((?:\s*(?:\{Version:|//)[^\n]*\n)+)\s*\},",
                    re.M)
_ROW = re.compile(r"\{Version: version\.MustParse\(\"([\d.]+)\"\),([^}]*)\}")
_DEPS = re.compile(r"^\s*(?:\w+\.)?(\w+):\s*\{([^}]*)\},", re.M)


@dataclass(frozen=True)
class Row:
    version: tuple[int, int]
    default: bool
    stage: str
    locked: bool
    min_compat: tuple[int, int] | None


def _minor(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def _row(version: str, rest: str) -> Row:
    fields = dict(re.findall(r"(\w+): ([^,]+?)(?:,|$)", rest.strip()))
    min_compat = re.search(r"MinCompatibilityVersion: version\.MustParse\(\"([\d.]+)\"\)", rest)
    stage = fields["PreRelease"].removeprefix("featuregate.")
    return Row(_minor(version), fields["Default"] == "true", _STAGES[stage],
               fields.get("LockToDefault", "false") == "true",
               _minor(min_compat.group(1)) if min_compat else None)


def _sources(tag: str) -> list[Path]:
    staging = "v0." + tag.removeprefix("v1.")
    return [MODULES / f"kubernetes@{tag}" / "pkg" / "features" / "kube_features.go",
            MODULES / f"apiserver@{staging}" / "pkg" / "features" / "kube_features.go",
            MODULES / f"apiextensions-apiserver@{staging}" / "pkg" / "features"
            / "kube_features.go"]


def _read(tag: str) -> tuple[dict[str, list[Row]], dict[str, set[str]]]:
    """gate -> its versioned specs, gate -> what it depends on, from the release's sources."""
    files = _sources(tag)
    if not all(f.exists() for f in files):
        pytest.skip(f"the sources of {tag} are not in {MODULES} (tests/e2e/realk8s/build.sh "
                    f"--version {tag} kube-apiserver fetches them)")
    text = "\n".join(f.read_text() for f in files)
    names = dict(re.findall(r"^\s*(\w+)\s+featuregate\.Feature\s*=\s*\"(\w+)\"", text, re.M))
    specs = {}
    for block in _BLOCK.finditer(text):
        rows = [_row(v, rest) for v, rest in _ROW.findall(block.group(2))]
        if rows:
            specs[names.get(block.group(1), block.group(1))] = rows
    table = text[text.index("defaultKubernetesFeatureGateDependencies"):]
    table = table[:table.index("\n}\n")]
    deps = {names.get(n, n): {names.get(d.strip().split(".")[-1], d.strip().split(".")[-1])
                              for d in body.split(",") if d.strip()}
            for n, body in _DEPS.findall(table)}
    return specs, deps


def _at(rows: list[Row], release: str) -> tuple[str, bool, bool]:
    """The spec in force at `release` with the minimum compatibility version one below it
    (kube-apiserver's default), as featureSpecAtEmulationAndMinCompatVersion picks it."""
    now = _minor(release)
    floor = (now[0], now[1] - 1)
    chosen = None
    for row in sorted(rows, key=lambda r: r.version):
        if row.version <= now and (row.min_compat is None or row.min_compat <= floor):
            chosen = row
    if chosen is None:
        return "", False, False
    return chosen.stage, chosen.default, chosen.locked


@pytest.mark.parametrize("release", sorted(RELEASE_SOURCES))
def test_the_gate_table_is_the_releases_source(release: str) -> None:
    specs, deps = _read(RELEASE_SOURCES[release])
    mine, theirs = {}, {}
    for name, gate in known(release).items():
        if name not in specs:
            mine[name] = gate.stage
            theirs[name] = REMOVED
            continue
        mine[name] = (gate.stage, gate.default, gate.locked, set(dependencies(name, release)))
        theirs[name] = (*_at(specs[name], release), deps.get(name, set()))
    assert {n: v for n, v in mine.items() if v != theirs[n]} == \
        {n: v for n, v in theirs.items() if v != mine[n]}
