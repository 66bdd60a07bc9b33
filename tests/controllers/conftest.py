from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from draemu.client import Client
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.controllers.manager import ControllerManager

# Short periods so that node and eviction behaviour shows within a test.
SETTINGS = {"node_monitor_grace_period": 2.0, "node_monitor_period": 0.5,
            "orphaned_pod_grace_period": 1.0, "job_backoff_base": 0.2}


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Client]:
    """An apiserver with every controller running; yields an admin client."""
    server = await start_apiserver(tmp_path / "apiserver")
    manager = ControllerManager(Client.from_kubeconfig(server.kubeconfig_path,
                                                       user_agent="test-controllers"),
                                settings=SETTINGS)
    client = Client.from_kubeconfig(server.kubeconfig_path, user_agent="test")
    try:
        await manager.start()
        yield client
    finally:
        await manager.stop()
        await manager.ctx.client.close()
        await client.close()
        await server.stop()
