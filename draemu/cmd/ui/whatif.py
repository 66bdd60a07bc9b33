"""The web view's what-if, in a worker process with a deadline and a memory limit.

A what-if decodes a pasted manifest and runs the allocator with its CEL selectors over
every published device: work a hostile paste can make long (a YAML alias bomb, a costly
selector). The web view runs in `draemu up`'s apiserver process, so that work never runs
there: a persistent child (`python -m draemu.cmd.ui.whatif`) answers one JSON line per
request, under `MEMORY_LIMIT` of address space; past `DEADLINE` it is killed (and started
again for the next request), and the answer says so. The manifest is decoded under the
API's YAML limits (aliases, nodes, integer sizes), as the apiserver decodes a body.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from draemu.api.types import Obj

DEADLINE = 10.0  # seconds for one what-if
MEMORY_LIMIT = 1 << 30  # bytes of address space the worker may map beyond what it has
KINDS = ("classes", "slices", "rules", "claims", "nodes")  # what a what-if reads


def what_if(manifest: str, cluster: dict[str, list[Obj]], gates: dict[str, Any]) -> dict[str, Any]:
    """Where a claim (or a template's claim) would land on each node, and why not elsewhere:
    the offline allocator over the cluster's devices (`cluster`: KINDS -> objects)."""
    import yaml

    from draemu.api.yamlload import YAMLLimitError, load_all
    from draemu.client import key_of
    from draemu.cmd.explain import offline
    from draemu.features import FeatureGates
    from draemu.scheduler.dra.allocator import Allocator

    try:
        docs = [d for d in load_all(manifest.encode()) if d is not None]
    except YAMLLimitError as e:
        return {"error": f"not accepted: {e}"}
    except yaml.YAMLError as e:
        return {"error": f"not YAML: {e}"}
    claim = _claim_of(docs)
    if isinstance(claim, str):
        return {"error": claim}
    feature_gates = FeatureGates(gates["overrides"], gates["version"])
    objects = [*cluster["classes"], *cluster["slices"], *cluster["rules"], *cluster["claims"],
               claim]
    try:
        inputs = offline.classify(objects, feature_gates, True)
        inventory, pending = offline.build_inventory(inputs, feature_gates)
    except offline.InputError as e:
        return {"error": str(e)}
    pending = [c for c in pending if key_of(c) == key_of(claim)]
    results = []
    allocator = Allocator(inventory)
    for node in sorted(cluster["nodes"], key=lambda n: n["metadata"]["name"]):
        outcome = allocator.allocate(node, pending)
        results.append({"node": node["metadata"]["name"], "outcome": outcome.status,
                        "devices": [f"{r['driver']}/{r['pool']}/{r['device']}"
                                    for r in _results(outcome)],
                        "text": outcome.explanation.text()})
    return {"claim": key_of(claim), "nodes": results}


def _claim_of(docs: list[Any]) -> Obj | str:
    """The one ResourceClaim pasted (a template's claim for a template), or the error."""
    if len(docs) != 1 or not isinstance(docs[0], dict):
        return "paste one ResourceClaim or ResourceClaimTemplate"
    claim = docs[0]
    if claim.get("kind") == "ResourceClaimTemplate":
        spec = (claim.get("spec") or {}).get("spec") or {}
        claim = {"apiVersion": claim.get("apiVersion", "resource.k8s.io/v1"),
                 "kind": "ResourceClaim",
                 "metadata": {"name": (claim.get("metadata") or {}).get("name", "what-if"),
                              "namespace": "default"}, "spec": spec}
    if claim.get("kind") != "ResourceClaim":
        return f"paste one ResourceClaim or ResourceClaimTemplate, not {claim.get('kind')!r}"
    if not isinstance(claim.setdefault("metadata", {}), dict):
        return "metadata must be an object"
    claim["metadata"].setdefault("namespace", "default")
    claim["metadata"].setdefault("name", "what-if")
    claim.pop("status", None)
    return claim


def _results(outcome: Any) -> list[Obj]:
    out = []
    for allocation in outcome.results or []:
        out += ((allocation or {}).get("devices") or {}).get("results") or []
    return out


class WhatIfWorker:
    """The child that runs what-ifs, one at a time, started on first use."""

    def __init__(self, deadline: float = DEADLINE) -> None:
        self.deadline = deadline
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def run(self, manifest: str, cluster: dict[str, list[Obj]],
                  gates: dict[str, Any]) -> dict[str, Any]:
        request = json.dumps({"manifest": manifest, "cluster": cluster, "gates": gates})
        async with self._lock:
            proc = await self._started()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(request.encode() + b"\n")
                await proc.stdin.drain()
                line = await asyncio.wait_for(proc.stdout.readline(), self.deadline)
            except TimeoutError:
                await self._kill()
                return {"error": f"the what-if took longer than {self.deadline:g} s and was "
                                 "stopped (a selector or manifest too costly to evaluate)"}
            except (ConnectionError, OSError):
                line = b""
            if not line:  # the worker died: out of memory, or killed
                await self._kill()
                return {"error": "the what-if stopped before it answered (it needed more "
                                 f"than {MEMORY_LIMIT >> 20} MiB of memory, or crashed)"}
            return json.loads(line)

    async def _started(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "draemu.cmd.ui.whatif", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, limit=64 << 20)
        return self._proc

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    async def stop(self) -> None:
        await self._kill()


def main() -> None:
    """The worker: one JSON request a line on stdin, one JSON answer a line on stdout."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    limit = mapped + MEMORY_LIMIT
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = what_if(request["manifest"], request["cluster"], request["gates"])
        except MemoryError:
            answer = {"error": f"the what-if needed more than {MEMORY_LIMIT >> 20} MiB of "
                               "memory and was stopped"}
        except RecursionError:
            answer = {"error": "the manifest is nested too deeply"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
