"""Issue 35's CEL attacks against a running `draemu up`, timed: how long until each is
refused (or admitted), how long /readyz waited meanwhile, how late node leases got.

    .venv/bin/python bench/cel_stalls.py [--draemu PATH] [--nodes N] [--only NAME,...]

`--draemu` is the `draemu` executable to start (default: this checkout's), so the same
script measures another checkout back to back (`--draemu ../old/.venv/bin/draemu`). The
cluster is `draemu up --preset example --in-memory` (8 example GPUs per node); this
process only sends requests, so what it measures is the cluster's answer.

Scenarios (the issue's figures on d164d3e in brackets):
- vap-68k: a ValidatingAdmissionPolicy `!sets.intersects(object.data.allow.split(','),
  object.data.deny.split(','))` and a 68 KiB ConfigMap [201 after 14.6 s, /readyz 14.5 s];
- crd-sets, crd-nested, crd-lower: CRD rules over unbounded strings and lists, then an
  object that makes them work hard [7.55 s, 6.0 s, 2.4 s];
- vap-100k: a policy with a nested all/exists over a custom resource's 100,000 items
  [11.4 s before "operation cancelled: actual cost limit exceeded"];
- claims: 10 claims whose selector is `!sets.intersects(<950 ints>, <950 ints>) &&
  device.driver == 'none-i'` with their pods, then an admin's pod without claims: how long
  until it is bound [49.8 s, baseline 0.23 s; node leases 16 s stale].
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from draemu.client import ApiError, Client

ADMISSION = "admissionregistration.k8s.io/v1"
PROBE_INTERVAL = 0.05


class Probe:
    """Samples /readyz and the nodes' leases while a scenario runs."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.worst_readyz = 0.0
        self.worst_lease = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _readyz(self) -> None:
        while True:
            started = time.perf_counter()
            try:
                await self.client.request("GET", "/readyz")
            except Exception:
                pass
            self.worst_readyz = max(self.worst_readyz, time.perf_counter() - started)
            await asyncio.sleep(PROBE_INTERVAL)

    async def _leases(self) -> None:
        while True:
            try:
                leases = await self.client.list("coordination.k8s.io/v1", "leases",
                                                "kube-node-lease")
                now = time.time()
                for lease in leases["items"]:
                    renewed = lease["spec"].get("renewTime")
                    if renewed:
                        age = now - _timestamp(renewed)
                        self.worst_lease = max(self.worst_lease, age)
            except Exception:
                pass
            await asyncio.sleep(0.5)

    async def __aenter__(self) -> Probe:
        self._task = asyncio.ensure_future(asyncio.gather(self._readyz(), self._leases()))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


def _timestamp(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def timed(client: Client, path: str, body: dict) -> tuple[float, str]:
    """POST `body`: how long the answer took, and what it was."""
    import json

    started = time.perf_counter()
    code, _headers, raw = await client.request("POST", path, json=body, timeout=900)
    took = time.perf_counter() - started
    if code < 300:
        return took, f"{code}: admitted"
    status = json.loads(raw)
    causes = (status.get("details") or {}).get("causes") or []
    detail = causes[0].get("message", "") if causes else status.get("message", "")
    return took, f"{code}: {detail.split(' (try ')[0][-110:]}"


def policy(name: str, expression: str, resources: list[str], group: str = "") -> dict:
    return {"apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{
                "apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE"],
                "resources": resources}]},
                "validations": [{"expression": expression}]}}


def binding(name: str) -> dict:
    return {"apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]}}


def crd(spec_schema: dict, rules: list[str]) -> dict:
    spec = dict(spec_schema)
    if rules:
        spec["x-kubernetes-validations"] = [{"rule": r} for r in rules]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "things", "kind": "Thing"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object", "properties": {"spec": spec}}}}]}}


async def with_policy(client: Client, name: str, body: dict) -> None:
    await client.create(ADMISSION, "validatingadmissionpolicies", body)
    await client.create(ADMISSION, "validatingadmissionpolicybindings", binding(name))
    await asyncio.sleep(1.0)  # in every apiserver's watch cache


async def without_policy(client: Client, name: str) -> None:
    for resource in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
        try:
            await client.delete(ADMISSION, resource, name)
        except ApiError:
            pass


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
THINGS = "/apis/example.com/v1/namespaces/default/things"


def thing(spec: dict) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
            "spec": spec}


async def served(client: Client) -> None:
    """Until things.example.com is served."""
    for _ in range(100):
        code, _h, _b = await client.request("GET", THINGS)
        if code == 200:
            return
        await asyncio.sleep(0.1)
    raise RuntimeError("things.example.com never served")


async def drop_crd(client: Client) -> None:
    try:
        await client.delete("apiextensions.k8s.io/v1", "customresourcedefinitions",
                            "things.example.com")
    except ApiError:
        return
    for _ in range(100):
        try:
            await client.get("apiextensions.k8s.io/v1", "customresourcedefinitions",
                             "things.example.com")
        except ApiError:
            return
        await asyncio.sleep(0.1)


async def vap_68k(client: Client) -> list[tuple[str, float, str]]:
    name = "sets.example.com"
    await with_policy(client, name, policy(name, "!sets.intersects(object.data.allow."
                                           "split(','), object.data.deny.split(','))",
                                           ["configmaps"]))
    half = ",".join(["a"] * 17_408)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
          "data": {"allow": half, "deny": half.replace("a", "b")}}
    took, outcome = await timed(client, "/api/v1/namespaces/default/configmaps", cm)
    await without_policy(client, name)
    return [("ConfigMap of 68 KiB", took, outcome)]


CRD_ATTACKS = {
    "crd-sets": ({"type": "object", "properties": {"allow": {"type": "string"},
                                                    "deny": {"type": "string"}}},
                 "!sets.intersects(self.allow.split(','), self.deny.split(','))",
                 lambda: {"allow": ",".join(["a"] * 17_408),
                          "deny": ",".join(["b"] * 17_408)}),
    "crd-nested": ({"type": "object", "properties": {"items": {
        "type": "array", "items": {"type": "integer"}}}},
        "self.items.all(x, self.items.exists(y, x == y))",
        lambda: {"items": list(range(3000))}),
    "crd-lower": ({"type": "object", "properties": {
        "names": {"type": "array", "items": {"type": "string"}},
        "blocked": {"type": "array", "items": {"type": "string"}}}},
        "self.names.all(n, !(n.lowerAscii() in self.blocked))",
        lambda: {"names": [f"N{i}" for i in range(3000)],
                 "blocked": [f"b{i}" for i in range(3000)]}),
}


async def crd_attack(client: Client, name: str) -> list[tuple[str, float, str]]:
    schema, rule, spec = CRD_ATTACKS[name]
    rows = []
    took, outcome = await timed(client, CRDS, crd(schema, [rule]))
    rows.append(("CRD with the rule", took, outcome))
    if outcome.endswith("admitted"):
        await served(client)
        took, outcome = await timed(client, THINGS, thing(spec()))
        rows.append(("the object", took, outcome))
    await drop_crd(client)
    return rows


async def vap_100k(client: Client) -> list[tuple[str, float, str]]:
    await client.create("apiextensions.k8s.io/v1", "customresourcedefinitions", crd(
        {"type": "object", "x-kubernetes-preserve-unknown-fields": True}, []))
    name = "nested.example.com"
    await with_policy(client, name, policy(
        name, "object.spec.items.all(x, object.spec.items.exists(y, x == y))", ["things"],
        "example.com"))
    await served(client)
    took, outcome = await timed(client, THINGS, thing({"items": list(range(100_000))}))
    await without_policy(client, name)
    await drop_crd(client)
    return [("custom resource of 100,000 items", took, outcome)]


async def claims(client: Client) -> list[tuple[str, float, str]]:
    a = ",".join(str(i) for i in range(950))
    b = ",".join(str(i + 1000) for i in range(950))
    selector = f"!sets.intersects([{a}], [{b}]) && device.driver == 'none-i'"
    for i in range(10):
        await client.create("resource.k8s.io/v1", "resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"hostile-{i}"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                "deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression": selector}}]}}]}}}, "default")
        await client.create("v1", "pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"hostile-{i}"},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu",
                                         "resourceClaimName": f"hostile-{i}"}]}},
            "default")
    await asyncio.sleep(1.0)
    started = time.perf_counter()
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "admin"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, "default")
    outcome = "never bound (120 s)"
    while time.perf_counter() - started < 120:
        pod = await client.get("v1", "pods", "admin", "default")
        if pod["spec"].get("nodeName"):
            outcome = "bound"
            break
        await asyncio.sleep(0.05)
    return [("admin pod scheduled beside 10 hostile claims", time.perf_counter() - started,
             outcome)]


SCENARIOS: dict[str, Callable[[Client], Awaitable[list[tuple[str, float, str]]]]] = {
    "vap-68k": vap_68k,
    **{name: (lambda n: lambda c: crd_attack(c, n))(name) for name in CRD_ATTACKS},
    "vap-100k": vap_100k,
    "claims": claims,
}


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="cel-stalls-"))
    kubeconfig = data / "admin.kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        args.draemu, "up", "--in-memory", "--preset", "example", "--nodes",
        str(args.nodes), "--port", "0", "--no-ui", "--kubeconfig", str(kubeconfig),
        "--log-level", "warning", stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        for _ in range(600):
            if kubeconfig.exists():
                break
            await asyncio.sleep(0.1)
        async with Client.from_kubeconfig(str(kubeconfig)) as client:
            await _ready(client, args.nodes)
            only = set(args.only.split(",")) if args.only else set(SCENARIOS)
            print(f"{'scenario':<12} {'what':<46} {'took':>8} {'/readyz':>8} "
                  f"{'lease':>6}  outcome")
            for name, scenario in SCENARIOS.items():
                if name not in only:
                    continue
                async with Probe(client) as probe:
                    rows = await scenario(client)
                for what, took, outcome in rows:
                    print(f"{name:<12} {what:<46} {took:7.2f}s {probe.worst_readyz:7.2f}s "
                          f"{probe.worst_lease:5.1f}s  {outcome}", flush=True)
    finally:
        proc.terminate()
        await proc.wait()
        shutil.rmtree(data, ignore_errors=True)


async def _ready(client: Client, nodes: int) -> None:
    for _ in range(1200):
        try:
            slices = await client.list("resource.k8s.io/v1", "resourceslices")
            if len(slices["items"]) >= nodes:
                return
        except Exception:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("the cluster did not come up")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draemu", default=str(Path(sys.executable).parent / "draemu"),
                        help="the draemu executable to start")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--only", default="", help="scenarios, comma-separated")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
