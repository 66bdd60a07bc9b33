"""`draemu up --emulated-version R` against the real kube-apiserver of release R (each
release of `draemu.features.RELEASE_SOURCES` whose kube-apiserver is built; issue 33):
both must serve the same discovery and list the same feature gates.

- Discovery (aggregated, apidiscovery.k8s.io/v2): resource.k8s.io and scheduling.k8s.io
  exactly (versions in order; per version the resources with kind, scope, verbs,
  subresources, short names, categories); every group's GA versions exactly; a beta or
  alpha version draemu serves must be one the release serves. kube-apiserver runs with
  `--runtime-config api/all=true`: draemu serves every version of the emulated release
  without asking (apiserver/registry/resource/README.md), gated kinds only with their gates
  (so kube-apiserver is told to leave out a gated kind of a beta or alpha version whose gate
  is off, `_gated_off`).
- /metrics kubernetes_feature_enabled: for every gate draemu knows, the same row (present
  or not, stage label, value) at the release's defaults.
- /version: the same emulated release.

Each release runs twice: with its default gates, and with the gates of the DRA and
workload APIs that are off by default turned on (GATES), so that their kinds are compared
too.

kube-apiserver at another release than the default one: `DRAEMU_REALK8S_BIN=
~/.cache/draemu/realk8s/bin-1.38 tests/e2e/realk8s/build.sh --version v1.38.0-beta.0
kube-apiserver` (draemu.cmd.testing.kubeapiserver.binary_for finds it); without it the
release's case skips, in CI too. etcd is the default build's (`build.sh etcd`). About 15 s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from draemu.apiserver.registry import discover
from draemu.client import Client
from draemu.cmd.testing.etcd import EtcdCluster, EtcdUnavailable
from draemu.cmd.testing.kubeapiserver import KubeApiserver, binary_for, kube_apiserver
from draemu.cmd.testing.process import draemu_up
from draemu.features import RELEASE_SOURCES, FeatureGates, known

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
EXACT_GROUPS = ("resource.k8s.io", "scheduling.k8s.io")
_FEATURE = re.compile(r'^kubernetes_feature_enabled\{name="([^"]*)",stage="([^"]*)"\} (\S+)$',
                      re.M)
_STAGE = re.compile(r"v\d+(alpha|beta)\d+$")

Discovery = dict[str, dict[str, dict[str, tuple[Any, ...]]]]  # group -> version -> resource


# The off-by-default gates that add kinds or versions to resource.k8s.io and
# scheduling.k8s.io.
GATES = {"defaults": "",
         "apis-on": "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,"
                    "DRAWorkloadResourceClaims=true,DRAResourcePoolStatus=true,"
                    "CompositePodGroup=true"}


@pytest.fixture(params=sorted(RELEASE_SOURCES))
def release(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=sorted(GATES))
def gates(request: pytest.FixtureRequest) -> str:
    return GATES[str(request.param)]


@pytest.fixture
def real(release: str, gates: str, tmp_path: Path) -> Iterator[KubeApiserver]:
    tag = RELEASE_SOURCES[release]
    binary = binary_for(tag)
    if binary is None:
        pytest.skip(f"kube-apiserver {tag} not built (DRAEMU_REALK8S_BIN=~/.cache/draemu/"
                    f"realk8s/bin-{release} tests/e2e/realk8s/build.sh --version {tag} "
                    "kube-apiserver)")
    try:
        etcd = EtcdCluster(1)
    except EtcdUnavailable as error:
        pytest.skip(str(error))
    try:
        flags = ["--runtime-config", ",".join(["api/all=true", *_gated_off(release, gates)])]
        if gates:
            flags += ["--feature-gates", gates]
        with kube_apiserver(binary, tmp_path / "real", etcd.endpoints, flags) as server:
            yield server
    finally:
        etcd.stop()


def _gated_off(release: str, gates: str) -> list[str]:
    """draemu has no --runtime-config: a kind of a beta or alpha version behind a gate is
    served when the gate is on. kube-apiserver gates some in storage too (Workload,
    PodGroup) but serves others whenever their version is enabled
    (ResourcePoolStatusRequest); it is told the same as draemu's gate says."""
    on = FeatureGates.parse(gates, release)
    return [f"{s.group}/{v}/{s.resource}=false" for s in discover()
            if s.feature_gate and not on.enabled(s.feature_gate)
            for v in s.versions if _STAGE.match(v)]


def _resource(r: dict[str, Any]) -> tuple[Any, ...]:
    kind = (r.get("responseKind") or {}).get("kind")
    subresources = sorted((s["subresource"], tuple(sorted(s.get("verbs") or [])))
                          for s in r.get("subresources") or [])
    return (kind, r.get("scope"), tuple(sorted(r.get("verbs") or [])), tuple(subresources),
            r.get("singularResource"), tuple(sorted(r.get("shortNames") or [])),
            tuple(sorted(r.get("categories") or [])))


async def _discovery(client: Client) -> Discovery:
    """Every group's versions (in the served order) and their resources."""
    out: Discovery = {}
    for path in ("/api", "/apis"):
        status, _, body = await client.request("GET", path, headers={"Accept": V2})
        assert status == 200, body[:500]
        for group in json.loads(body)["items"]:
            name = group["metadata"].get("name", "") or "core"
            out[name] = {v["version"]: {r["resource"]: _resource(r)
                                        for r in v.get("resources") or []}
                         for v in group["versions"]}
    return out


async def _features(client: Client) -> dict[str, tuple[str, float]]:
    status, _, body = await client.request("GET", "/metrics")
    assert status == 200, body[:500]
    return {name: (stage, float(value))
            for name, stage, value in _FEATURE.findall(body.decode())}


async def _version(client: Client) -> tuple[str, str]:
    status, _, body = await client.request("GET", "/version")
    assert status == 200, body[:500]
    info = json.loads(body)
    return info.get("emulationMajor"), info.get("emulationMinor")


async def _observe(kubeconfig: Path) -> tuple[Discovery, dict[str, tuple[str, float]],
                                              tuple[str, str]]:
    async with Client.from_kubeconfig(str(kubeconfig)) as client:
        return await _discovery(client), await _features(client), await _version(client)


def _group_differences(ours: Discovery, theirs: Discovery) -> dict[str, Any]:
    """Per group: GA versions that differ, and beta/alpha versions only draemu serves."""
    out = {}
    for group in sorted(set(ours) | set(theirs)):
        mine, real = list(ours.get(group, {})), list(theirs.get(group, {}))
        ga_mine = [v for v in mine if not _STAGE.match(v)]
        ga_real = [v for v in real if not _STAGE.match(v)]
        extra = [v for v in mine if _STAGE.match(v) and v not in real]
        if ga_mine != ga_real or extra:
            out[group] = {"draemu": mine, "kube-apiserver": real}
    return out


def _resource_differences(ours: Discovery, theirs: Discovery) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group in EXACT_GROUPS:
        mine, real = ours.get(group, {}), theirs.get(group, {})
        if list(mine) != list(real):
            out[group] = {"draemu": list(mine), "kube-apiserver": list(real)}
        for version in sorted(set(mine) & set(real)):
            for name in sorted(set(mine[version]) | set(real[version])):
                a, b = mine[version].get(name), real[version].get(name)
                if a != b:
                    out[f"{group}/{version}/{name}"] = {"draemu": a, "kube-apiserver": b}
    return out


async def test_draemu_serves_what_the_release_serves(release: str, gates: str,
                                                     real: KubeApiserver,
                                                     tmp_path: Path) -> None:
    async with Client.from_kubeconfig(str(real.admin)) as client:
        await real.ready(client)
    theirs, real_gates, real_version = await _observe(real.admin)
    flags = ["--feature-gates", gates] if gates else []
    with draemu_up(tmp_path / "draemu", "--emulated-version", release, "--preset", "empty",
                   "--no-scheduler", "--no-controllers", "--no-ui", *flags) as up:
        ours, our_gates, our_version = await _observe(up.kubeconfig)
    # Both answered something to compare: DRA's group and the gate rows.
    assert theirs.get("resource.k8s.io") and real_gates.get("DRAAdminAccess")
    assert our_version == real_version
    assert _resource_differences(ours, theirs) == {}
    assert _group_differences(ours, theirs) == {}
    names = sorted(known(release))
    assert {n: our_gates.get(n) for n in names if our_gates.get(n) != real_gates.get(n)} == \
        {n: real_gates.get(n) for n in names if our_gates.get(n) != real_gates.get(n)}
