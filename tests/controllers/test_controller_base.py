"""The controller worker loop: routine API failures are retried quietly."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from draemu.client import ApiError, SharedInformers
from draemu.controllers.base import Controller, ControllerContext

pytestmark = pytest.mark.unit


class Flaky(Controller):
    name = "flaky"

    def __init__(self, ctx: ControllerContext, failures: list[ApiError]) -> None:
        self.failures = failures
        self.done = asyncio.Event()
        super().__init__(ctx)

    async def reconcile(self, key: str) -> float | None:
        if self.failures:
            raise self.failures.pop(0)
        self.done.set()
        return None


@pytest.mark.parametrize("code, logged", [(404, False), (409, False), (500, True)])
async def test_a_deleted_object_or_a_conflict_is_retried_without_an_info_line(code, logged):
    ctx = ControllerContext(client=None, informers=SharedInformers(None))  # type: ignore[arg-type]
    error = ApiError(code, {"reason": "NotFound", "message": 'resourceclaims "c" not found'})
    controller = Flaky(ctx, [error])
    controller.queue.add("default/c")
    with capture_logs() as logs:
        await controller.start()
        await asyncio.wait_for(controller.done.wait(), 10)
        await controller.stop()
    infos = [e for e in logs if e["log_level"] == "info" and "reconcile failed" in e["event"]]
    assert bool(infos) is logged
