"""The shape every controller shares: informers feed keys into a rate-limited work
queue; workers reconcile one key at a time from the latest cached state; any key may be
reconciled any number of times. A periodic resync re-queues every key, so a missed
event is repaired within `resync_seconds`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from draemu.api.types import Obj
from draemu.client import (
    ApiError,
    Client,
    EventRecorder,
    Informer,
    SharedInformers,
    ShutDown,
    WorkQueue,
    key_of,
)
from draemu.controllers.registry import service_account
from draemu.features import FeatureGates
from draemu.log import get_logger


@dataclass
class ControllerContext:
    client: Client
    informers: SharedInformers
    gates: FeatureGates = field(default_factory=FeatureGates)
    # Tunables (seconds), shortened in tests.
    settings: dict[str, float] = field(default_factory=dict)
    # A controller's own client, by its ServiceAccount name (controllers/registry.py);
    # None: every controller writes with `client`.
    client_for: Callable[[str], Client] | None = None
    # Signs legacy ServiceAccount token Secrets (draemu.satokens.Signer); None: not done.
    signer: Any = None
    # --cluster-cidr with --allocate-node-cidrs (node-ipam), and --node-cidr-mask-size.
    cluster_cidr: str | None = None
    node_cidr_mask_size: int = 24

    def setting(self, name: str, default: float) -> float:
        return float(self.settings.get(name, default))


class Controller:
    name: ClassVar[str]
    workers: ClassVar[int] = 1
    resync_seconds: ClassVar[float] = 30.0

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        account = service_account(self.name)
        self.client = ctx.client_for(account) if ctx.client_for and account else ctx.client
        self.queue = WorkQueue()
        self.recorder = EventRecorder(self.client, self.component())
        self.log = get_logger(f"controller.{self.name}")
        self._tasks: list[asyncio.Task[None]] = []
        self.setup()

    @classmethod
    async def create(cls, ctx: ControllerContext) -> Controller:
        """The controller, built (one that must ask the API first overrides this)."""
        return cls(ctx)

    def metrics(self) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
        """Its metrics, by kube-controller-manager's names: labels -> value."""
        return {}

    def component(self) -> str:
        return f"{self.name}-controller"

    def setup(self) -> None:
        """Ask for informers (`self.ctx.informers.informer(...)`) and add handlers."""

    def primary(self) -> Informer | None:
        """The informer whose keys are resynced periodically."""
        return None

    async def reconcile(self, key: str) -> float | None:
        """Make the world match the object behind `key`. Return seconds after which to
        look again (None: only on the next event). Raise to retry with back-off."""
        raise NotImplementedError

    def enqueue(self, obj: Obj) -> None:
        self.queue.add(key_of(obj))

    def handlers_enqueue(self, informer: Informer) -> None:
        informer.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n),
                             on_delete=self.enqueue)

    async def start(self) -> None:
        for i in range(self.workers):
            self._tasks.append(asyncio.create_task(self._worker(), name=f"{self.name}-{i}"))
        if self.primary() is not None and self.resync_seconds > 0:
            self._tasks.append(asyncio.create_task(self._resync(), name=f"{self.name}-resync"))

    async def stop(self) -> None:
        self.queue.shutdown()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.resync_seconds)
            inf = self.primary()
            if inf is not None:
                for key in inf.keys():
                    self.queue.add(key)

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                again = await self.reconcile(key)
                self.queue.forget(key)
                if again is not None:
                    self.queue.add_after(key, again)
            except asyncio.CancelledError:
                raise
            except ApiError as e:
                # Routine, retried with fresh state: a conflict, or an object deleted
                # while it was reconciled (the informer has not seen the delete yet).
                routine = e.code in (404, 409)
                (self.log.debug if routine else self.log.info)(
                    "reconcile failed, will retry", key=key, error=str(e))
                self.queue.add_rate_limited(key)
            except Exception:
                self.log.exception("reconcile crashed, will retry", key=key)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)


def split_key(key: str) -> tuple[str | None, str]:
    if "/" in key:
        ns, name = key.split("/", 1)
        return ns, name
    return None, key
