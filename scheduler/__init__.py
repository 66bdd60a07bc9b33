"""The scheduler: informer-fed caches, a scheduling queue, the framework and its plugins.

`Scheduler(client, gates)` is the component (`await start()` / `await stop()`); the
structured allocator lives in `draemu.scheduler.dra`. The import of `Scheduler` is lazy so
that `draemu.scheduler.dra` can be used on its own without the API client.
"""

from __future__ import annotations

from typing import Any

from draemu import check_import_name

__all__ = ["Scheduler"]


def __getattr__(name: str) -> Any:
    if name == "Scheduler":
        from draemu.scheduler.scheduler import Scheduler

        return Scheduler
    raise AttributeError(name)

check_import_name(__name__)
