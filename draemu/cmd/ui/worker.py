"""The web view's heavy work, in a worker process with a deadline and a memory limit:
the what-if, and the explanation of a pod's decision.

A what-if decodes a pasted manifest and runs the allocator with its CEL selectors over
every published device: work a hostile paste can make long (a YAML alias bomb, a costly
selector). An explanation replays a pod's scheduling decision with the scheduler's
plugins over every node (`draemu why`), which on a big cluster takes a while. The web
view runs in `draemu up`'s apiserver process, so this work never runs there: a
persistent child (`python -m draemu.cmd.ui.worker`) answers one JSON line per request,
one request at a time, under `MEMORY_LIMIT` of address space; past `DEADLINE` it is
killed (and started again for the next request), and the answer says so. The manifest
is decoded under the API's YAML limits (aliases, nodes, integer sizes), as the apiserver
decodes a body. An explanation reads the cluster through the API with the view's own
kubeconfig, as `draemu why` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from draemu.api.types import Obj

DEADLINE = 10.0  # seconds for one what-if or explanation
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
                        "text": outcome.explanation.text(),
                        "explanation": outcome.explanation.to_dict()})
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


def explain(kubeconfig: str, context: str | None, namespace: str, name: str,
            gates: dict[str, Any], scheduler_config: str | None = None) -> dict[str, Any]:
    """`draemu why` for one pod: the decision (replay.Decision.to_dict) and its text."""
    from draemu import aio
    from draemu.client import ApiError, Client
    from draemu.cmd.explain.why import decision
    from draemu.features import FeatureGates
    from draemu.scheduler.config import load

    config = load(scheduler_config) if scheduler_config else None

    async def main() -> dict[str, Any]:
        async with Client.from_kubeconfig(kubeconfig, context,
                                          user_agent="draemu-ui-explain") as client:
            try:
                d = await decision(client, namespace, name,
                                   FeatureGates(gates["overrides"], gates["version"]), config)
            except ApiError as e:
                return {"error": str(e), "code": e.code}
        return {"decision": d.to_dict(), "text": d.text()}

    return aio.run(main())


def answer(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") == "explain":
        return explain(request["kubeconfig"], request.get("context"), request["namespace"],
                       request["name"], request["gates"], request.get("schedulerConfig"))
    return what_if(request["manifest"], request["cluster"], request["gates"])


class Worker:
    """The child that runs what-ifs and explanations, one at a time, started on first
    use."""

    def __init__(self, deadline: float = DEADLINE) -> None:
        self.deadline = deadline
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def what_if(self, manifest: str, cluster: dict[str, list[Obj]],
                      gates: dict[str, Any]) -> dict[str, Any]:
        return await self.run({"op": "whatif", "manifest": manifest, "cluster": cluster,
                               "gates": gates})

    async def explain(self, kubeconfig: str, context: str | None, namespace: str, name: str,
                      gates: dict[str, Any], scheduler_config: str | None = None
                      ) -> dict[str, Any]:
        return await self.run({"op": "explain", "kubeconfig": kubeconfig, "context": context,
                               "namespace": namespace, "name": name, "gates": gates,
                               "schedulerConfig": scheduler_config})

    async def run(self, request: dict[str, Any]) -> dict[str, Any]:
        line_out = json.dumps(request)
        async with self._lock:
            proc = await self._started()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(line_out.encode() + b"\n")
                await proc.stdin.drain()
                line = await asyncio.wait_for(proc.stdout.readline(), self.deadline)
            except TimeoutError:
                await self._kill()
                what = "explanation" if request.get("op") == "explain" else "what-if"
                return {"error": f"the {what} took longer than {self.deadline:g} s and was "
                                 "stopped (a selector or manifest too costly to evaluate, or "
                                 "a cluster too big to replay in that time)"}
            except (ConnectionError, OSError):
                line = b""
            if not line:  # the worker died: out of memory, or killed
                await self._kill()
                return {"error": "the worker stopped before it answered (it needed more "
                                 f"than {MEMORY_LIMIT >> 20} MiB of memory, or crashed)"}
            return json.loads(line)

    async def _started(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "draemu.cmd.ui.worker", stdin=asyncio.subprocess.PIPE,
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
            reply = answer(request)
        except MemoryError:
            reply = {"error": f"the worker needed more than {MEMORY_LIMIT >> 20} MiB of "
                              "memory and was stopped"}
        except RecursionError:
            reply = {"error": "the manifest is nested too deeply"}
        except Exception as e:  # an answer, never a dead worker
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
