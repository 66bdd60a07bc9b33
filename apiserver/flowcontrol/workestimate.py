"""How many seats a LIST (or a watch that starts with a list) takes: upstream's
object-count list work estimator — one seat per 100 objects it goes through, within
[1, the level's max seats]. draemu serves lists from the watch cache, so a list goes
through every object of its resource (upstream's `isListFromCache` case); one pinned to
a name (`fieldSelector=metadata.name=`) through one; a watch that resumes from a
resourceVersion without initial events takes one seat.

Simplified against upstream: v1.37 estimates by object size by default
(SizeBasedListCostEstimate); this is its object-count variant. Writes take one seat
(upstream's mutating estimator adds seats after the write for the watch fan-out)."""

from __future__ import annotations

import math

from aiohttp import web

from draemu.apiserver.endpoints.requestinfo import RequestInfo
from draemu.apiserver.storage.watchcache import WatchCache

OBJECTS_PER_SEAT = 100.0


def list_seats(cache: WatchCache, request: web.Request, info: RequestInfo, prefix: str,
               max_seats: int) -> int:
    """`prefix`: the store prefix of the listed resource."""
    query = request.query
    if info.verb == "watch":
        initial = query.get("sendInitialEvents") == "true"
        if not initial and query.get("resourceVersion", "") not in ("", "0"):
            return 1
    if info.name or "metadata.name=" in query.get("fieldSelector", ""):
        return 1
    count = cache.object_counts().get(prefix, 0)
    return max(1, min(max_seats, math.ceil(count / OBJECTS_PER_SEAT)))
