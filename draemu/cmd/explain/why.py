"""`draemu why pod/NAME`: why a pod's DRA claims can or cannot be allocated, node by
node and device by device, and which node won and why, from what an apiserver holds
(read through the API) and replayed with the scheduler's own plugins (replay.py)."""

from __future__ import annotations

from draemu.client import Client
from draemu.cmd.explain.replay import Decision, replay
from draemu.cmd.explain.snapshot import Cluster, load
from draemu.features import FeatureGates
from draemu.scheduler.config import SchedulerConfig


async def decision(client: Client, namespace: str, name: str,
                   gates: FeatureGates | None = None,
                   config: SchedulerConfig | None = None) -> Decision:
    return replay(await load(client, namespace, name, gates), gates, config)


async def why_report(client: Client, namespace: str, name: str,
                     gates: FeatureGates | None = None,
                     config: SchedulerConfig | None = None) -> str:
    """What `draemu why` prints (the demo and the web view show the same decision)."""
    return (await decision(client, namespace, name, gates, config)).text()


explain_pod = why_report


def report(c: Cluster) -> str:
    return replay(c).text()
