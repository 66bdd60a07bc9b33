"""Lists: served from the watch cache once it has caught up with what the request must
see; exact-revision lists and `continue` pages from the cache's objects and history
while its history reaches back to their revision (as upstream's watch cache answers
them from its snapshots), else from the store at their revision."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass

from draemu.api.errors import StatusError, bad_request
from draemu.api.types import Obj
from draemu.apiserver.registry.strategy import Strategy
from draemu.apiserver.storage.storeadapter import Storage
from draemu.apiserver.storage.watchcache import decode
from draemu.apiserver.wire.queryselectors import FieldSelector, LabelSelector, check_fields
from draemu.store.errors import CompactedError, FutureRevisionError

_CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list.")


@dataclass(frozen=True)
class Selection:
    """Which objects a list, watch or deletecollection is about (upstream's
    SelectionPredicate): a label selector and a field selector over the kind's fields."""

    labels: LabelSelector
    fields: FieldSelector
    fields_of: Callable[[Obj], dict[str, str]]

    @classmethod
    def of(cls, strategy: Strategy, labels: LabelSelector, fields: FieldSelector,
           version: str = "") -> Selection:
        """`version`: the request's, whose fields a custom resource is selected by."""
        if not fields.empty:
            check_fields(fields, supported_fields(strategy, version) or None)

        def fields_of(obj: Obj) -> dict[str, str]:
            meta = obj.get("metadata") or {}
            out = {"metadata.name": meta.get("name", ""),
                   "metadata.namespace": meta.get("namespace", "")}
            out.update(strategy.selectable_fields_in(obj, version) if version
                       else strategy.selectable_fields(obj))
            return out

        return cls(labels, fields, fields_of)

    def matches(self, obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        if not self.labels.empty and not self.labels.matches(meta.get("labels")):
            return False
        if self.fields.empty:
            return True
        return self.fields.matches(self.fields_of(obj))

    @property
    def everything(self) -> bool:
        return self.labels.empty and self.fields.empty


def supported_fields(strategy: Strategy, version: str = "") -> set[str]:
    """The kind's own selectable fields (of `version`), learnt from a skeleton object
    unless the kind names them."""
    named = strategy.selectable_field_names(version) if version else None
    if named is not None:
        return named
    skeleton: Obj = {"metadata": {"name": "", "namespace": ""}, "spec": {}, "status": {}}
    try:
        return set(strategy.selectable_fields(skeleton))
    except (KeyError, TypeError, AttributeError, IndexError):
        return set()


@dataclass(frozen=True)
class ListOptions:
    """meta/v1 ListOptions as a list reads them."""

    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass
class Page:
    objects: list[Obj]
    revision: int
    continue_token: str = ""
    # Cache keys of `objects` when read from the cache (None for an object of an older
    # revision than the cached one).
    keys: list[str | None] | None = None
    # Objects after this page; like upstream, only known (and given) for lists without
    # selectors, where it is a plain count of the keys left.
    remaining: int | None = None


def encode_continue(revision: int, start_after: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start_after},
                     separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# The revision of an inconsistent continue token: the list goes on at the latest one.
LATEST = -1


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        return int(data["rv"]), str(data["start"])
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise bad_request("continue key is not valid: invalid continue token") from None


def parse_revision(rv: str) -> int:
    try:
        value = int(rv)
    except ValueError:
        raise bad_request(f'resourceVersion: Invalid value: "{rv}": must be an integer') \
            from None
    if value < 0:
        raise bad_request(f'resourceVersion: Invalid value: "{rv}": must be non-negative')
    return value


async def list_page(storage: Storage, prefix: str, sel: Selection, opts: ListOptions) -> Page:
    limit, token = opts.limit, opts.continue_token
    rv, match = opts.resource_version, opts.resource_version_match
    if match and match not in ("Exact", "NotOlderThan"):
        raise StatusError(422, "Invalid", f'resourceVersionMatch: Unsupported value: "{match}": '
                          'supported values: "Exact", "NotOlderThan"')
    if match and not rv:
        raise StatusError(422, "Invalid", "resourceVersionMatch: Forbidden: resourceVersionMatch "
                          "is forbidden unless resourceVersion is provided")
    if token:
        if rv:
            raise StatusError(422, "Invalid", "resourceVersion: Forbidden: specifying "
                              "resource version is not allowed when using continue")
        revision, start = decode_continue(token)
        if revision == LATEST:  # an inconsistent continue: the rest at the latest revision
            await storage.caught_up()
            page = _from_cache(storage, prefix, sel, limit, storage.cache.revision,
                               prefix + start, now=True)
            assert page is not None
            return page
        return _from_cache(storage, prefix, sel, limit, revision, prefix + start) or \
            await _from_store(storage, prefix, sel, limit, revision, prefix + start)
    if match == "Exact":
        revision = parse_revision(rv)
        return _from_cache(storage, prefix, sel, limit, revision, None) or \
            await _from_store(storage, prefix, sel, limit, revision, None)
    if rv == "":
        await storage.caught_up()
    elif rv != "0":
        await storage.caught_up(parse_revision(rv))
    page = _from_cache(storage, prefix, sel, limit, storage.cache.revision, None, now=True)
    assert page is not None  # the cache can always tell its own revision
    return page


def _from_cache(storage: Storage, prefix: str, sel: Selection, limit: int,
                revision: int, start_after: str | None, now: bool = False) -> Page | None:
    """A page at `revision` from the watch cache's objects and history (see
    WatchCache.list_at); None when the cache cannot tell that revision, or the store
    has compacted it (the store's read then answers, or says 410 as upstream). `now`:
    the cache's own revision, which it always tells."""
    if not now and revision < storage.store.compacted_revision:
        return None
    found = storage.cache.list_at(prefix, revision, start_after, sel.matches, limit)
    if found is None:
        return None
    items, remaining = found
    token = ""
    if remaining >= 0:
        token = encode_continue(revision, items[-1][0][len(prefix):]) if items else ""
    return Page([obj for _, obj, _ in items], revision, token,
                [key if current else None for key, _, current in items],
                remaining if remaining >= 0 and sel.everything else None)


async def _from_store(storage: Storage, prefix: str, sel: Selection, limit: int,
                      revision: int, start_after: str | None) -> Page:
    objects: list[Obj] = []
    last_key = ""
    batch = max(limit, 100) if limit else 1000
    continue_after = start_after
    try:
        while True:
            result = await storage.store.range(prefix, start_after=start_after, limit=batch,
                                               revision=revision)
            for index, kv in enumerate(result.items):
                obj = decode(kv.value, kv.mod_revision)
                if not sel.matches(obj):
                    continue
                if limit and len(objects) == limit:
                    # `count` covers the whole range after this batch's start.
                    remaining = result.count - index if sel.everything else None
                    return Page(objects, revision,
                                encode_continue(revision, last_key[len(prefix):]),
                                remaining=remaining)
                objects.append(obj)
                last_key = kv.key
            if not result.more or not result.items:
                return Page(objects, revision)
            start_after = result.items[-1].key
    except CompactedError:
        if not continue_after:
            raise StatusError(410, "Expired", "The resourceVersion for the provided list is "
                              "too old.") from None
        # handleCompactedErrorForPaging: a token that goes on at the latest revision.
        raise StatusError(410, "Expired", _CONTINUE_TOO_OLD, list_meta={
            "continue": encode_continue(LATEST, continue_after[len(prefix):])}) from None
    except FutureRevisionError:
        raise StatusError(504, "Timeout", f"Timeout: Too large resource version: {revision}",
                          {"causes": [{"reason": "ResourceVersionTooLarge",
                                       "message": "Too large resource version"}],
                           "retryAfterSeconds": 1}) from None
