"""Compiled programs by expression: each expression is compiled once (its compile error
too), so scheduling the thousandth pod or validating the thousandth object does not
compile again. The least recently used entries go first once the cache is full."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from threading import Lock
from typing import Generic, TypeVar

from draemu.cel.errors import CELCompileError

P = TypeVar("P")


class CompileCache(Generic[P]):
    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, P | CELCompileError] = OrderedDict()
        self._lock = Lock()

    def get(self, key: Hashable, compile_: Callable[[], P | CELCompileError]) -> P:
        """The program cached under `key`, compiled by `compile_` (which returns the
        program or its compile error) the first time. Raises the CELCompileError."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
        if hit is None:
            hit = compile_()
            with self._lock:
                self._items[key] = hit
                if len(self._items) > self._size:
                    self._items.popitem(last=False)
        if isinstance(hit, CELCompileError):
            # A fresh exception each time: re-raising the cached one would grow its traceback.
            raise CELCompileError(hit.detail, result_type=hit.result_type)
        return hit
