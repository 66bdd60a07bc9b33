"""Random sequences of operations against a simple in-memory model of etcd.

Each example works under its own key prefix on one store, so the store (and its
database) is shared by the examples of a backend; revisions below the example's start
are outside the model.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draemu.store import (
    CompactedError,
    ConflictError,
    Event,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    RangeResult,
    Store,
    Watch,
)

pytestmark = pytest.mark.unit

KEYS = ["a", "b", "a/x", "c/d"]
PREFIXES = ["", "a", "a/", "c/"]
TIMEOUT = 10
_examples = itertools.count()

fraction = st.floats(min_value=0, max_value=1)
operation = st.one_of(
    st.tuples(st.just("create"), st.sampled_from(KEYS), st.binary(max_size=6)),
    st.tuples(st.just("update"), st.sampled_from(KEYS), st.binary(max_size=6), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(KEYS),
              st.sampled_from([None, "current", "stale"])),
    st.tuples(st.just("get"), st.sampled_from(KEYS), st.none() | fraction),
    st.tuples(st.just("range"), st.sampled_from(PREFIXES), st.none() | st.sampled_from(KEYS),
              st.integers(min_value=0, max_value=3), st.none() | fraction),
    st.tuples(st.just("compact"), fraction),
    st.tuples(st.just("watch"), st.sampled_from(PREFIXES), fraction),
)


@dataclass
class Model:
    """etcd as a list of snapshots: one per revision since the example started."""

    base: int
    compacted: int
    states: dict[int, dict[str, KeyValue]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.states[self.base] = {}

    @property
    def revision(self) -> int:
        return self.base + len(self.events)

    def at(self, fraction: float) -> int:
        return self.base + round(fraction * (self.revision - self.base))

    def current(self, key: str) -> KeyValue | None:
        return self.states[self.revision].get(key)

    def put(self, key: str, value: bytes) -> KeyValue:
        prev = self.current(key)
        rev = self.revision + 1
        if prev is None:
            new = KeyValue(key, value, rev, rev, 1)
        else:
            new = KeyValue(key, value, prev.create_revision, rev, prev.version + 1)
        self._commit({**self.states[rev - 1], key: new}, Event("put", new, prev, rev))
        return new

    def delete(self, key: str) -> tuple[int, KeyValue]:
        prev = self.current(key)
        assert prev is not None
        rev = self.revision + 1
        state = dict(self.states[rev - 1])
        del state[key]
        self._commit(state, Event("delete", KeyValue(key, b"", 0, rev, 0), prev, rev))
        return rev, prev

    def _commit(self, state: dict[str, KeyValue], event: Event) -> None:
        self.events.append(event)
        self.states[event.revision] = state

    def range(self, prefix: str, start_after: str, limit: int, rev: int) -> RangeResult:
        keys = sorted(k for k in self.states[rev] if k.startswith(prefix) and k > start_after)
        shown = keys[:limit] if limit else keys
        return RangeResult([self.states[rev][k] for k in shown], rev, len(shown) < len(keys),
                           len(keys))

    def changes(self, prefix: str, after: int) -> list[Event]:
        return [e for e in self.events if e.revision > after and e.kv.key.startswith(prefix)]


async def take(watch: Watch, count: int) -> list[Event]:
    events: list[Event] = []
    async with asyncio.timeout(TIMEOUT):
        while len(events) < count:
            events.append(await watch.__anext__())
    return events


async def check_write(store: Store, model: Model, op: tuple) -> None:
    kind, key = op[0], op[1]
    prev = model.current(key)
    if kind == "create":
        if prev is not None:
            with pytest.raises(KeyExistsError):
                await store.create(key, op[2])
        else:
            assert await store.create(key, op[2]) == model.put(key, op[2])
    elif kind == "update":
        stale = op[3]
        if prev is None:
            with pytest.raises(KeyNotFoundError):
                await store.update(key, op[2], 1)
        elif stale:
            with pytest.raises(ConflictError):
                await store.update(key, op[2], prev.mod_revision - 1)
        else:
            assert await store.update(key, op[2], prev.mod_revision) == (
                model.put(key, op[2]), prev)
    else:
        expected = op[2]
        if prev is None:
            with pytest.raises(KeyNotFoundError):
                await store.delete(key)
        elif expected == "stale":
            with pytest.raises(ConflictError):
                await store.delete(key, prev.mod_revision + 1)
        else:
            given_rev = prev.mod_revision if expected == "current" else None
            assert await store.delete(key, given_rev) == model.delete(key)


async def run_example(store: Store, ops: list[tuple]) -> None:
    ns = f"/p{next(_examples)}/"
    model = Model(await store.current_revision(), store.compacted_revision)
    watches: list[tuple[Watch, str, int]] = []
    for op in ops:
        kind = op[0]
        if kind in ("create", "update", "delete"):
            await check_write(store, model, (kind, ns + op[1], *op[2:]))
        elif kind == "get":
            key = ns + op[1]
            if op[2] is None:
                assert await store.get(key) == model.current(key)
                continue
            rev = model.at(op[2])
            if rev < model.compacted:
                with pytest.raises(CompactedError):
                    await store.get(key, revision=rev)
            else:
                assert await store.get(key, revision=rev) == model.states[rev].get(key)
        elif kind == "range":
            prefix = ns + op[1]
            after = ns + op[2] if op[2] is not None else ""
            rev = model.revision if op[4] is None else model.at(op[4])
            if rev < model.compacted:
                with pytest.raises(CompactedError):
                    await store.range(prefix, start_after=after, limit=op[3], revision=rev)
                continue
            got = await store.range(prefix, start_after=after or None, limit=op[3],
                                    revision=None if op[4] is None else rev)
            assert got == model.range(prefix, after, op[3], rev)
        elif kind == "compact":
            rev = model.at(op[1])
            await store.compact(rev)
            model.compacted = max(model.compacted, rev)
            for watch, _, _ in watches:
                await watch.aclose()
            watches.clear()
        else:
            prefix, rev = ns + op[1], model.at(op[2])
            if rev < model.compacted:
                with pytest.raises(CompactedError):
                    store.watch(prefix, rev)
                continue
            watch = store.watch(prefix, rev)
            assert await take(watch, len(model.changes(prefix, rev))) == model.changes(
                prefix, rev)
            watches.append((watch, prefix, model.revision))
    # Watches that saw no compaction since they started must have followed every write.
    for watch, prefix, started in watches:
        assert await take(watch, len(model.changes(prefix, started))) == model.changes(
            prefix, started)
        await watch.aclose()


@settings(max_examples=75, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operation, max_size=25))
async def test_store_matches_the_model(store: Store, ops: list[tuple]) -> None:
    await run_example(store, ops)
