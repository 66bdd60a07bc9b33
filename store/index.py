"""The current value of every live key, in memory, sorted by key.

The SQLite backend is the database's only writer, so it can answer reads of the current
revision from here without touching the database: a dict for point reads and a sorted
key list (bisect) for prefix ranges, counts included.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort

from draemu.store.model import KeyValue
from draemu.store.validation import prefix_end


class CurrentIndex:
    def __init__(self, items: list[KeyValue]) -> None:
        """`items` must be sorted by key."""
        self._values = {kv.key: kv for kv in items}
        self._keys = [kv.key for kv in items]

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, key: str) -> KeyValue | None:
        return self._values.get(key)

    def put(self, kv: KeyValue) -> None:
        if kv.key not in self._values:
            insort(self._keys, kv.key)
        self._values[kv.key] = kv

    def remove(self, key: str) -> None:
        del self._values[key]
        del self._keys[bisect_left(self._keys, key)]

    def range(self, prefix: str, start_after: str,
              limit: int | None) -> tuple[list[KeyValue], bool, int]:
        """(items, more, count) of keys under `prefix` after `start_after`."""
        keys = self._keys
        start = bisect_left(keys, prefix)
        if start_after >= prefix:
            start = bisect_right(keys, start_after, lo=start)
        end = bisect_left(keys, prefix_end(prefix), lo=start)
        count = end - start
        stop = end if limit is None else min(end, start + limit)
        values = self._values
        return [values[k] for k in keys[start:stop]], stop < end, count
