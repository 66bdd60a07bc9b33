"""API Priority and Fairness for this apiserver: the configuration followed from the
watch cache (upstream's apf_controller), the filter every request passes (upstream's
WithPriorityAndFairness), the FlowSchemas' Dangling condition, the metrics, and the
config producer's periodic pass (`ensure`, given by the server).

A request is classified by the first matching FlowSchema (missing mandatory schemas
and levels are imagined, as upstream does); an exempt level runs it at once, a limited
level gives it seats from its QueueSet. Long-running requests other than watches
(exec, attach, log, portforward, proxy) are not limited at all; a watch holds its seat
only until its response starts, as upstream's watch initialization does."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from draemu.api.errors import StatusError, go_quote
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.endpoints.requestinfo import RequestInfo
from draemu.apiserver.flowcontrol.classifier import Classifier, Schema, compile_schema
from draemu.apiserver.flowcontrol.cpu import Timed
from draemu.apiserver.flowcontrol.queueset import QueueSet, QueuingConfig, Rejected
from draemu.apiserver.flowcontrol.workestimate import list_seats
from draemu.apiserver.registry.flowcontrol.bootstrapconfig import (
    CATCH_ALL,
    EXEMPT,
    MANDATORY_LEVELS,
    MANDATORY_SCHEMAS,
)
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.storage.storeadapter import Storage, Unchanged
from draemu.apiserver.storage.watchcache import Change
from draemu.identity import UserInfo
from draemu.log import get_logger

log = get_logger("apiserver.flowcontrol")

GROUP = "flowcontrol.apiserver.k8s.io"
FLOW_SCHEMA_UID = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_UID = "X-Kubernetes-PF-PriorityLevel-UID"
TOO_MANY = "Too many requests, please try again later."
# Upstream's long-running check (watches are limited while they start).
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
# Max seats of a level's work estimate: 15% of its limit, at most limit/handSize.
MAX_SEATS_FRACTION = 0.15
MAX_RETRY_AFTER = 32

CLASSIFIED = web.RequestKey("apf_classification", tuple)
WATCH_SEAT = web.RequestKey("apf_watch_seat", object)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Level:
    name: str
    uid: str
    exempt: bool
    nominal: int
    max_seats: int
    queues: QueueSet | None


class DroppedRequests:
    """Retry-After for a level (upstream's droppedRequestsTracker): 1 s, doubled while
    the level keeps rejecting at least 3 requests per second of the current value,
    lowered by one when it rejects fewer; at most 32 s."""

    def __init__(self) -> None:
        self.retry_after = 1
        self._history: list[tuple[int, int]] = []
        self._second = 0
        self._count = 0
        self._updated = 0

    def record(self, now: int) -> None:
        if now == self._second:
            self._count += 1
            return
        self._history.append((self._second, self._count))
        keep = min(2 * self.retry_after, MAX_RETRY_AFTER)
        self._history = [(t, n) for t, n in self._history if now - t <= keep]
        self._second, self._count = now, 1
        dropped = sum(n for t, n in self._history if now - t <= self.retry_after and t < now)
        if now - self._updated >= self.retry_after and dropped >= 3 * self.retry_after:
            self.retry_after = min(2 * self.retry_after, MAX_RETRY_AFTER)
            self._updated = now
        elif dropped < self.retry_after and self.retry_after > 1:
            self.retry_after -= 1


class FlowControl:
    def __init__(self, table: ResourceTable, storage: Storage, server_concurrency: int,
                 ensure: Callable[[], Awaitable[None]] | None = None,
                 ensure_interval: float = 60.0,
                 in_flight: dict[str, int] | None = None) -> None:
        self.storage = storage
        self.table = table
        self.server_concurrency = server_concurrency
        self.schemas_resource = table.by_group_resource(GROUP, "flowschemas")
        self.levels_resource = table.by_group_resource(GROUP, "prioritylevelconfigurations")
        self._ensure = ensure
        self.ensure_interval = ensure_interval
        self.levels: dict[str, Level] = {}
        self.classifier = Classifier([])
        self._catch_all: Schema = compile_schema(MANDATORY_SCHEMAS[1])
        self._dirty = False
        self._tasks: list[asyncio.Task[None]] = []
        self._status_queue: asyncio.Queue[str] = asyncio.Queue()
        self._dropped: dict[str, DroppedRequests] = defaultdict(DroppedRequests)
        # Metrics, keyed (priority_level, flow_schema[, reason]).
        self.executing: dict[tuple[str, str], int] = defaultdict(int)
        self.executing_seats: dict[tuple[str, str], int] = defaultdict(int)
        self.inqueue: dict[tuple[str, str], int] = defaultdict(int)
        self.dispatched: dict[tuple[str, str], int] = defaultdict(int)
        self.rejected: dict[tuple[str, str, str], int] = defaultdict(int)
        self.cpu_seconds: dict[tuple[str, str], float] = defaultdict(float)
        # apiserver_current_inflight_requests: what executes, as upstream's APF filter
        # reports it ("readOnly" for get, list and watch, else "mutating").
        self.in_flight = in_flight if in_flight is not None else {"mutating": 0,
                                                                   "readOnly": 0}
        # Requests that arrive before start() (the listeners open first) are classified
        # by the mandatory configuration: /readyz answered 500 with KeyError 'catch-all'.
        self._digest([], [])

    # Configuration -----------------------------------------------------------------------
    def start(self) -> None:
        assert self.schemas_resource is not None and self.levels_resource is not None
        for prefix in (self.schemas_resource.prefix, self.levels_resource.prefix):
            self.storage.cache.listen(prefix, self._on_change)
        self.rebuild()
        self._tasks.append(asyncio.create_task(self._write_status(), name="apf-status"))
        if self._ensure is not None:
            self._tasks.append(asyncio.create_task(self._produce(), name="apf-producer"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    def _on_change(self, change: Change | None) -> None:
        if not self._dirty:
            self._dirty = True
            asyncio.get_running_loop().call_soon(self.rebuild)

    def _objects(self, resource: Any) -> list[Obj]:
        return [obj for _key, obj in self.storage.cache.list(resource.prefix)
                if not (obj.get("metadata") or {}).get("deletionTimestamp")]

    def rebuild(self) -> None:
        """Digest the FlowSchemas and levels in the watch cache (upstream's
        digestConfigObjects); broken levels and schemas naming no level are ignored."""
        self._dirty = False
        self._digest(self._objects(self.levels_resource), self._objects(self.schemas_resource))

    def _digest(self, level_list: list[Obj], schema_objects: list[Obj]) -> None:
        level_objects = {o["metadata"]["name"]: o for o in level_list}
        for mandatory in MANDATORY_LEVELS:
            level_objects.setdefault(mandatory["metadata"]["name"], mandatory)
        shares = {name: _shares(obj) for name, obj in level_objects.items()}
        total = sum(s for s in shares.values() if s is not None) or 1
        levels: dict[str, Level] = {}
        for name, obj in level_objects.items():
            share = shares[name]
            if share is None:
                log.warning("ignoring a broken PriorityLevelConfiguration", name=name)
                continue
            levels[name] = self._level(name, obj, math.ceil(self.server_concurrency * share
                                                             / total))
        self.levels = levels
        schemas, found = [], set()
        for obj in schema_objects:
            schema = compile_schema(obj)
            self._check_dangling(obj, schema.level in levels)
            if schema.level in levels:
                schemas.append(schema)
                found.add(schema.name)
        for mandatory in MANDATORY_SCHEMAS:
            if mandatory["metadata"]["name"] not in found:
                schemas.append(compile_schema(mandatory))
        self.classifier = Classifier(schemas)
        self._catch_all = next(s for s in self.classifier.schemas if s.name == CATCH_ALL)

    def _level(self, name: str, obj: Obj, nominal: int) -> Level:
        spec = obj.get("spec") or {}
        uid = (obj.get("metadata") or {}).get("uid", "")
        if spec.get("type") == "Exempt":
            return Level(name, uid, True, nominal, 0, None)
        response = (spec.get("limited") or {}).get("limitResponse") or {}
        queuing = response.get("queuing") if response.get("type") == "Queue" else None
        config = QueuingConfig()
        max_seats = 10
        if isinstance(queuing, dict):
            config = QueuingConfig(int(queuing.get("queues") or 0),
                                    int(queuing.get("handSize") or 0),
                                    int(queuing.get("queueLengthLimit") or 0))
            max_seats = max(1, min(math.ceil(nominal * MAX_SEATS_FRACTION),
                                   nominal // max(config.hand_size, 1)))
        old = self.levels.get(name)
        queues = old.queues if old is not None else None
        if queues is None or queues.config != config:
            queues = QueueSet(nominal, config)
        else:
            queues.limit = nominal
        return Level(name, uid, False, nominal, max_seats, queues)

    def _check_dangling(self, obj: Obj, found: bool) -> None:
        if _dangling_condition(obj, found) is not None:
            self._status_queue.put_nowait(obj["metadata"]["name"])

    async def _write_status(self) -> None:
        """The Dangling condition of FlowSchemas, as upstream's controller keeps it."""
        assert self.schemas_resource is not None
        while True:
            name = await self._status_queue.get()

            async def fn(obj: Obj, current: Obj) -> Obj:
                level = ((obj.get("spec") or {}).get("priorityLevelConfiguration") or {}
                         ).get("name", "")
                condition = _dangling_condition(obj, level in self.levels)
                if condition is None:
                    raise Unchanged()
                status = obj.setdefault("status", {})
                others = [c for c in status.get("conditions") or [] if c.get("type") !=
                          "Dangling"]
                status["conditions"] = [*others, condition]
                return obj

            try:
                await self.storage.update(self.schemas_resource, "", name, fn)
            except asyncio.CancelledError:
                raise
            except StatusError as e:
                if e.reason != "NotFound":
                    log.warning("FlowSchema status not written", name=name, error=e.message)
            except Exception:  # keep following the other schemas
                log.exception("FlowSchema status not written", name=name)

    async def _produce(self) -> None:
        """Upstream's config producer runs once a minute: mandatory objects restored,
        suggested ones kept while they auto-update."""
        assert self._ensure is not None
        while True:
            await asyncio.sleep(self.ensure_interval)
            try:
                await self._ensure()
            except asyncio.CancelledError:
                raise
            except Exception:  # tried again on the next pass
                log.exception("APF configuration not ensured")

    # Requests ----------------------------------------------------------------------------
    async def handle(self, request: web.Request, info: RequestInfo, user: UserInfo,
                     handler: Handler, wait_limit: float) -> web.StreamResponse:
        schema = self.classifier.classify(user, info) or self._catch_all
        level = self.levels.get(schema.level)
        if level is None:  # the schema's level went away since the schemas were built
            schema = self._catch_all
            level = self.levels[CATCH_ALL]
        request[CLASSIFIED] = (schema.uid, level.uid)
        key = (level.name, schema.name)
        queues = level.queues
        if queues is None:
            return await self._run(request, handler, info, key, 1, None, None)
        seats = 1
        if info.verb in ("list", "watch"):
            resource = self.table.by_group_resource(info.group, info.resource)
            if resource is not None:
                seats = list_seats(self.storage.cache, request, info, resource.prefix,
                                   level.max_seats)
        distinguisher = schema.distinguish(user, info) if queues.config.queues > 1 else ""
        try:
            ticket = queues.start(seats, schema.name, distinguisher)
            if ticket.future is not None:
                self.inqueue[key] += 1
                try:
                    await queues.wait(ticket, wait_limit)
                finally:
                    self.inqueue[key] -= 1
            elif not queues.config.queues:
                # Hold the seats across one turn of the loop, so that the requests
                # arriving together compete for them (handlers often never suspend).
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError:
                    queues.finish(ticket)
                    raise
        except Rejected as e:
            self.rejected[(*key, e.reason)] += 1
            dropped = self._dropped[level.name]
            dropped.record(int(time.time()))
            retry = str(dropped.retry_after)
            raise StatusError(429, "TooManyRequests", TOO_MANY,
                              {"retryAfterSeconds": dropped.retry_after},
                              {"Retry-After": retry}) from None
        return await self._run(request, handler, info, key, seats, queues, ticket)

    async def _run(self, request: web.Request, handler: Handler, info: RequestInfo,
                   key: tuple[str, str], seats: int, queues: QueueSet | None, ticket: Any
                   ) -> web.StreamResponse:
        self.dispatched[key] += 1
        self.executing[key] += 1
        self.executing_seats[key] += seats
        kind = "readOnly" if info.verb in ("get", "list", "watch") else "mutating"
        self.in_flight[kind] += 1
        timed: Timed | None = None
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            self.in_flight[kind] -= 1
            self.executing[key] -= 1
            self.executing_seats[key] -= seats
            cpu = 0.0
            if timed is not None:
                cpu = timed.cpu
                timed.stop()  # a watch goes on: its events are not this seat's
            if queues is not None:
                self.cpu_seconds[key] += cpu
                queues.finish(ticket, cpu)

        if info.verb == "watch":
            request[WATCH_SEAT] = release
        if queues is None:
            try:
                return await handler(request)
            finally:
                release()
        timed = Timed(self._serve(request, handler))
        try:
            return await timed
        finally:
            release()

    @staticmethod
    async def _serve(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        if not response.prepared:
            # Upstream's handlers write their bodies while they hold their seats;
            # aiohttp would write (and encrypt) this one after they were freed.
            await response.prepare(request)
            await response.write_eof()
        return response

    async def on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        """Headers of a classified request; a watch's seat ends once its response
        starts."""
        classified = request.get(CLASSIFIED)
        if classified is None:
            return
        response.headers[FLOW_SCHEMA_UID] = classified[0]
        response.headers[PRIORITY_LEVEL_UID] = classified[1]
        release = request.get(WATCH_SEAT)
        if release is not None:
            release()  # type: ignore[operator]

    # Metrics -----------------------------------------------------------------------------
    def gauges(self) -> dict[str, Callable[[], dict[Any, float]]]:
        def per_flow(values: dict[tuple[str, str], int]) -> Callable[[], dict[Any, float]]:
            return lambda: {(("flow_schema", fs), ("priority_level", pl)): float(n)
                            for (pl, fs), n in values.items()}
        return {
            "apiserver_flowcontrol_current_executing_requests": per_flow(self.executing),
            "apiserver_flowcontrol_current_executing_seats": per_flow(self.executing_seats),
            "apiserver_flowcontrol_current_inqueue_requests": per_flow(self.inqueue),
            "apiserver_flowcontrol_nominal_limit_seats": lambda: {
                (("priority_level", name),): float(level.nominal)
                for name, level in self.levels.items()},
        }

    def counters(self) -> dict[str, Callable[[], dict[Any, float]]]:
        return {
            "apiserver_flowcontrol_dispatched_requests_total": lambda: {
                (("flow_schema", fs), ("priority_level", pl)): float(n)
                for (pl, fs), n in self.dispatched.items()},
            # draemu's own: the CPU the handlers of limited levels took on the loop.
            "draemu_flowcontrol_handler_cpu_seconds_total": lambda: {
                (("flow_schema", fs), ("priority_level", pl)): n
                for (pl, fs), n in self.cpu_seconds.items()},
            "apiserver_flowcontrol_rejected_requests_total": lambda: {
                (("flow_schema", fs), ("priority_level", pl), ("reason", reason)): float(n)
                for (pl, fs, reason), n in self.rejected.items()},
        }


def _shares(obj: Obj) -> int | None:
    """nominalConcurrencyShares of a level, or None when its spec is broken (union
    members not matching the type, or the type not matching the name)."""
    spec = obj.get("spec") or {}
    kind = spec.get("type")
    name = (obj.get("metadata") or {}).get("name")
    if (kind == "Exempt") != (name == EXEMPT):
        return None
    if kind == "Exempt":
        return int((spec.get("exempt") or {}).get("nominalConcurrencyShares") or 0)
    limited = spec.get("limited")
    if kind != "Limited" or not isinstance(limited, dict):
        return None
    response = limited.get("limitResponse") or {}
    if (response.get("type") == "Reject") != (response.get("queuing") is None):
        return None
    return int(limited.get("nominalConcurrencyShares") or 0)


def _dangling_condition(obj: Obj, found: bool) -> Obj | None:
    """The Dangling condition a FlowSchema should have, or None when it has it."""
    level = ((obj.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name", "")
    if found:
        status, reason = "False", "Found"
        message = (f"This FlowSchema references the PriorityLevelConfiguration object named "
                   f"{go_quote(level)} and it exists")
    else:
        status, reason = "True", "NotFound"
        message = (f"This FlowSchema references the PriorityLevelConfiguration object named "
                   f"{go_quote(level)} but there is no such object")
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Dangling" and cond.get("status") == status and \
                cond.get("reason") == reason and cond.get("message") == message:
            return None
    return {"type": "Dangling", "status": status, "lastTransitionTime": time_now(),
            "reason": reason, "message": message}
