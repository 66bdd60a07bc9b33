"""The values the store hands out: key-values, watch events and range results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One key at one revision, as etcd's mvccpb.KeyValue."""

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int


@dataclass(frozen=True, slots=True)
class Event:
    """A committed change. For a delete, `kv` carries the key and the delete's revision
    as `mod_revision` with an empty value (as etcd does); the deleted value is `prev_kv`."""

    type: Literal["put", "delete"]
    kv: KeyValue
    prev_kv: KeyValue | None
    revision: int


@dataclass(frozen=True, slots=True)
class RangeResult:
    """Keys under a prefix, sorted by key.

    `revision` is the revision the range was read at, `count` the number of keys in the
    range after `start_after` (not only the returned ones, like etcd's count) and `more`
    whether a limit cut the items short.
    """

    items: list[KeyValue]
    revision: int
    more: bool
    count: int
