"""The DRA introduction's three scenarios, step by step, with real kubectl.

Each step prints the kubectl command it runs and its output; the scheduling decision is
shown as `draemu why` shows it (draemu/cmd/explain/why.py) and the pods' logs show the devices the
drivers injected. Everything the demo creates is deleted at the end of its scenario.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from draemu.client import Client
from draemu.cmd.explain.devices import V1, build, render
from draemu.cmd.explain.why import why_report

SEED_NODES = ("gpu-node-01", "gpu-node-02", "gpu-node-03")
NUMA_ATTRIBUTE = "resource.kubernetes.io/numaNode"


def manifests() -> Path:
    return Path(str(resources.files("draemu.examples.seed")))


class Demo:
    def __init__(self, kubeconfig: Path, kubectl: str, *, pause: bool = False,
                 out: Callable[[str], None] = print, folder: Path | None = None) -> None:
        # The scenarios' manifests: examples/seed, or examples/seed_nvidia (the same
        # objects, written for what NVIDIA's real driver publishes).
        self.folder = folder or manifests()
        self.kubeconfig = kubeconfig
        self.kubectl = kubectl
        self.pause = pause
        self.out = out
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig)}

    # Output ---------------------------------------------------------------------------
    def title(self, text: str) -> None:
        self.out("")
        self.out("━" * 78)
        self.out(text)
        self.out("━" * 78)

    def say(self, text: str) -> None:
        self.out(text)

    def wait_for_enter(self) -> None:
        if self.pause:
            try:
                input("\n[press Enter to continue]")
            except EOFError:
                self.pause = False

    async def run(self, *args: str, check: bool = True) -> str:
        # Asynchronously: the cluster may be serving from this very event loop.
        self.out(f"\n$ kubectl {' '.join(shlex.quote(a) for a in args)}")
        proc = await asyncio.create_subprocess_exec(
            self.kubectl, *args, env=self.env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), 120)
        except TimeoutError:
            proc.kill()
            raise DemoError(f"kubectl {' '.join(args)} did not finish in 120 s") from None
        stdout, stderr = out.decode(), err.decode()
        text = (stdout + stderr).rstrip()
        if text:
            self.out(text)
        if check and proc.returncode != 0:
            raise DemoError(f"kubectl {' '.join(args)} failed:\n{text}")
        return stdout

    async def pods_exist(self, selector: str, timeout: float = 30.0) -> None:
        """Until a controller has created a pod with these labels (kubectl wait -l fails
        while none exists)."""
        async with Client.from_kubeconfig(self.kubeconfig, user_agent="draemu-demo") as c:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while not (await c.list("v1", "pods", "default", label_selector=selector)
                       ).get("items"):
                if loop.time() > deadline:
                    raise DemoError(f"no pod with labels {selector} after {timeout:.0f} s")
                await asyncio.sleep(0.1)

    async def devices(self, node: str) -> None:
        self.out(f"\n$ draemu devices --node {node}")
        async with Client.from_kubeconfig(self.kubeconfig, user_agent="draemu-demo") as c:
            slices = (await c.list_all(V1, "resourceslices")).get("items") or []
            claims = (await c.list_all(V1, "resourceclaims")).get("items") or []
        self.out(render([r for r in build(slices, claims) if r.node == node]))

    async def numa_of(self, claim: str) -> dict[str, str]:
        """request -> 'pool/device (NUMA n)' of an allocated claim."""
        async with Client.from_kubeconfig(self.kubeconfig, user_agent="draemu-demo") as c:
            obj = await c.get(V1, "resourceclaims", claim, "default")
            slices = (await c.list_all(V1, "resourceslices")).get("items") or []
        numa: dict[tuple[str, str, str], str] = {}
        for s in slices:
            spec = s.get("spec") or {}
            for dev in spec.get("devices") or []:
                value = (dev.get("attributes") or {}).get(NUMA_ATTRIBUTE) or {}
                numa[(spec["driver"], spec["pool"]["name"], dev["name"])] = str(
                    value.get("int", "?"))
        out = {}
        for r in obj["status"]["allocation"]["devices"]["results"]:
            where = numa.get((r["driver"], r["pool"], r["device"]), "?")
            out[r["request"]] = f"{r['pool']}/{r['device']} (NUMA {where})"
        return out

    async def decision(self, pod: str) -> None:
        self.out(f"\n$ draemu why pod/{pod}")
        async with Client.from_kubeconfig(self.kubeconfig, user_agent="draemu-demo") as c:
            self.out(await why_report(c, "default", pod))

    # Scenarios ------------------------------------------------------------------------
    async def scenario_1(self) -> None:
        self.title("Scenario 1: large model training must get 80 GB of GPU memory")
        self.say("The claim asks for memory >= 80 GiB and CUDA >= 11; a Job's pod uses it.")
        f = str(self.folder / "1-large-model-training.yaml")
        await self.run("apply", "-f", f)
        await self.pods_exist("job-name=llm-training-80gb")
        await self.run("wait", "--for=condition=Ready", "pod", "-l", "job-name=llm-training-80gb",
                       "--timeout=60s")
        await self.run("get", "resourceclaim", "large-model-gpu-claim", "-o",
                 "custom-columns=CLAIM:.metadata.name,NODE:.status.allocation.nodeSelector"
                 ".nodeSelectorTerms[0].matchFields[0].values[0],DEVICE:.status.allocation"
                 ".devices.results[0].device,STATE:.status.reservedFor[0].name")
        pod = await self.run("get", "pod", "-l", "job-name=llm-training-80gb", "-o",
                             "jsonpath={.items[0].metadata.name}")
        await self.decision(pod)
        await self.run("logs", "job/llm-training-80gb")
        self.wait_for_enter()
        await self.run("delete", "-f", f, "--wait=true")

    async def scenario_2(self) -> None:
        self.title("Scenario 2a: two pods share one GPU through one claim")
        f = str(self.folder / "2a-shared-gpu-claim.yaml")
        await self.run("apply", "-f", f)
        await self.run("wait", "--for=condition=Ready", "pod/inference-pod-a",
                       "pod/inference-pod-b", "--timeout=60s")
        await self.run("get", "pods", "inference-pod-a", "inference-pod-b", "-o", "wide")
        await self.run("get", "resourceclaim", "shared-gpu-claim", "-o",
                 "custom-columns=CLAIM:.metadata.name,DEVICE:.status.allocation.devices"
                 ".results[0].device,RESERVED-FOR:.status.reservedFor[*].name")
        await self.decision("inference-pod-a")
        self.say("Both pods name the claim: the first one scheduled decided its device, and "
                 "the other followed it to that node.")
        self.wait_for_enter()
        await self.run("delete", "-f", f, "--wait=true")

        self.title("Scenario 2b: the same intent with consumable capacity (10Gi each)")
        self.say("Each pod gets its own claim for 10Gi of one shareable A100 80GB.")
        f = str(self.folder / "2b-consumable-capacity.yaml")
        await self.run("apply", "-f", f)
        await self.run("wait", "--for=condition=Ready", "pod/inference-share-a",
                 "pod/inference-share-b", "--timeout=60s")
        await self.run("get", "resourceclaims", "-o",
                 "custom-columns=CLAIM:.metadata.name,DEVICE:.status.allocation.devices"
                 ".results[0].device,SHARE-ID:.status.allocation.devices.results[0].shareID,"
                 "CONSUMED:.status.allocation.devices.results[0].consumedCapacity.memory")
        await self.decision("inference-share-b")
        await self.devices("gpu-node-01")
        self.say("Both claims got gpu-0 with their own share ID; 60Gi of it are still free.")
        await self.run("logs", "inference-share-a")
        self.wait_for_enter()
        await self.run("delete", "-f", f, "--wait=true")

    async def scenario_3(self) -> None:
        self.title("Scenario 3: a GPU and an RDMA NIC on the same NUMA node")
        f = str(self.folder / "3-gpu-plus-nic.yaml")
        await self.run("apply", "-f", f)
        await self.run("wait", "--for=condition=Ready", "pod/distributed-training-pod",
                 "--timeout=60s")
        await self.run("get", "resourceclaim", "gpu-plus-nic-claim", "-o",
                 "jsonpath={range .status.allocation.devices.results[*]}{.request}{\"\\t\"}"
                 "{.pool}/{.device}{\"\\n\"}{end}")
        await self.decision("distributed-training-pod")
        aligned = await self.numa_of("gpu-plus-nic-claim")
        self.say("\nWith matchAttribute on " + NUMA_ATTRIBUTE + ":")
        for request, where in aligned.items():
            self.say(f"  {request:<14} {where}")
        await self.run("logs", "distributed-training-pod")
        self.wait_for_enter()
        await self.run("delete", "-f", f, "--wait=true")

        self.title("Scenario 3, without the constraint: the pair may straddle NUMA nodes")
        f = str(self.folder / "3b-gpu-plus-nic-unaligned.yaml")
        await self.run("apply", "-f", f)
        await self.run("wait", "--for=condition=Ready", "pod/unaligned-training-pod",
                       "--timeout=60s")
        unaligned = await self.numa_of("gpu-plus-nic-unaligned")
        self.say("\nWithout the constraint:")
        for request, where in unaligned.items():
            self.say(f"  {request:<14} {where}")
        self.say("The allocator took the first fitting GPU and NIC; nothing asked for the "
                 "same NUMA node.")
        self.wait_for_enter()
        await self.run("delete", "-f", f, "--wait=true")

    async def run_all(self) -> None:
        await self.scenario_1()
        await self.scenario_2()
        await self.scenario_3()
        self.title("Done: every object the demo created has been deleted.")


class DemoError(Exception):
    pass


async def cluster_has_seed_nodes(kubeconfig: Path) -> bool:
    try:
        async with Client.from_kubeconfig(kubeconfig, user_agent="draemu-demo") as c:
            names = {n["metadata"]["name"] for n in
                     (await asyncio.wait_for(c.list("v1", "nodes"), 5)).get("items") or []}
    except Exception:
        return False
    return set(SEED_NODES) <= names
