"""Runs the controllers: shared informers, then every enabled controller's workers.

`draemu up` runs it in-process; `draemu controllers` runs it alone against any
apiserver.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from draemu.client import Client, SharedInformers
from draemu.controllers.base import Controller, ControllerContext
from draemu.controllers.discovery import served
from draemu.controllers.registry import BY_NAME, defaults
from draemu.features import FeatureGates
from draemu.log import get_logger
from draemu.satokens import Signer

log = get_logger("controller-manager")


class ControllerManager:
    def __init__(self, client: Client, gates: FeatureGates | None = None, *,
                 enabled: list[str] | None = None,
                 settings: dict[str, float] | None = None,
                 client_for: Callable[[str], Client] | None = None,
                 service_account_key_file: Path | None = None,
                 informers: SharedInformers | None = None,
                 cluster_cidr: str | None = None, node_cidr_mask_size: int = 24) -> None:
        """`client_for(account)`: the client of a controller's ServiceAccount (see
        registry.py); without it every controller uses `client`.
        `service_account_key_file`: the key that signs legacy token Secrets (the
        serviceaccount-token controller runs only with it).
        `informers`: the shared informers to use (others in the process may share them);
        by default informers of our own over `client`. The manager starts and stops them.
        `cluster_cidr`: node-ipam gives each Node a `node_cidr_mask_size` block of it
        (kube-controller-manager's --allocate-node-cidrs --cluster-cidr)."""
        unknown = set(enabled or []) - set(BY_NAME)
        if unknown:
            raise ValueError(f"unknown controllers: {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(BY_NAME)}")
        self.enabled = defaults() if enabled is None else enabled
        self.ctx = ControllerContext(client, informers or SharedInformers(client),
                                     gates or FeatureGates(),
                                     dict(settings or {}), client_for,
                                     Signer.load(service_account_key_file)
                                     if service_account_key_file else None,
                                     cluster_cidr, node_cidr_mask_size)
        self.controllers: list[Controller] = []

    async def start(self) -> None:
        for name in self.enabled:
            entry = BY_NAME[name]
            # A gate off, or no key to sign with (--service-account-private-key-file).
            if entry.runs(self.ctx.gates, self.ctx.signer is not None):
                self.controllers.append(await entry.load().create(self.ctx))
        skipped = await self.ctx.informers.start(served=await served(self.ctx.client))
        if skipped:
            log.info("resources not served; their informers stay empty", resources=skipped)
        for c in self.controllers:
            await c.start()
        log.info("controllers started", controllers=[c.name for c in self.controllers])

    def metrics(self) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
        """Controller metrics with kube-controller-manager's names, for /metrics."""
        out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
        for c in self.controllers:
            out.update(c.metrics())
        return out

    async def stop(self) -> None:
        for c in self.controllers:
            await c.stop()
        await self.ctx.informers.stop()
        self.controllers.clear()
