"""Errors of the store. Every failure a caller can act on is a `StoreError` subclass
with a message that says what happened and what to do, never a driver traceback."""

from __future__ import annotations


class StoreError(Exception):
    """Any failure of the store."""


class KeyExistsError(StoreError):
    """`create` of a key that already exists."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} already exists")
        self.key = key


class KeyNotFoundError(StoreError):
    """`update` or `delete` of a key that does not exist."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} not found")
        self.key = key


class ConflictError(StoreError):
    """Compare-and-swap failed: the key's mod_revision is not the expected one."""

    def __init__(self, key: str, expected: int, actual: int) -> None:
        super().__init__(f"key {key!r} was modified: expected mod_revision {expected}, "
                         f"found {actual}")
        self.key = key
        self.expected = expected
        self.actual = actual


class CompactedError(StoreError):
    """The requested revision is older than the compacted revision."""

    def __init__(self, revision: int, compacted: int) -> None:
        super().__init__(f"revision {revision} has been compacted (compacted revision "
                         f"is {compacted})")
        self.revision = revision
        self.compacted = compacted


class FutureRevisionError(StoreError):
    """The requested revision has not been written yet."""

    def __init__(self, revision: int, current: int) -> None:
        super().__init__(f"revision {revision} is a future revision (current revision "
                         f"is {current})")
        self.revision = revision
        self.current = current


class StoreLockedError(StoreError):
    """Another draemu process holds the data directory."""


class InvalidKeyError(StoreError):
    """A key or prefix that is not a well-formed store path."""


class ValueTooLargeError(StoreError):
    """A value larger than the store accepts."""


class WatchTooSlowError(StoreError):
    """A watcher fell too far behind the writers and was ended; re-list and watch again."""


class StoreClosedError(StoreError):
    """The store was closed."""
