"""Server-side apply (`application/apply-patch+yaml`).

An applier declares the fields it cares about. Applying merges that configuration into
the live object; a field whose value changes while another manager owns it is a
conflict (409) unless `force` moves its ownership to the applier; fields the applier
applied before and no longer applies are removed, unless another manager owns them.
The applier's `Apply` entry in `managedFields` then holds exactly the applied fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from draemu.api.errors import StatusError, bad_request
from draemu.api.meta import time_now
from draemu.apiserver.wire.jsoncopy import clone
from draemu.apiserver.wire.patch import fieldpath, managed, typed
from draemu.apiserver.wire.patch.fieldpath import Path
from draemu.openapi.schemas.node import SchemaNode

KUBECTL = "kubectl"  # the field manager of `kubectl apply --server-side`
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class Conflict:
    """A field owned by another manager that an apply would change."""

    entry: managed.Entry
    path: Path

    @property
    def manager(self) -> str:
        return self.entry.manager

    @property
    def field(self) -> str:
        return fieldpath.path_string(self.path)

    @property
    def manager_text(self) -> str:
        """The manager as conflict messages name it (Update managers with version and time)."""
        entry = self.entry
        text = f'"{entry.manager}"'
        if entry.subresource:
            text += f' with subresource "{entry.subresource}"'
        if entry.operation == managed.UPDATE:
            text += f" using {entry.api_version}"
            if entry.time:
                text += f" at {entry.time}"
        return text


def server_side_apply(live: dict[str, Any] | None, applied: dict[str, Any], manager: str,
                      force: bool = False, schema: SchemaNode | None = None, *,
                      api_version: str | None = None, time: str | None = None,
                      subresource: str = "", reset_fields: tuple[str, ...] = (),
                      ) -> tuple[dict[str, Any], list[Conflict]]:
    """Apply `applied` (the request body) over `live` (None when the object does not
    exist yet) for `manager`.

    `reset_fields` are top-level fields this endpoint may not change (upstream's reset
    fields: `status` on the main resource of a kind with /status, everything but
    `status` on /status); they are dropped from the configuration, so they are neither
    changed nor owned.

    Returns `(merged, conflicts)`. Conflicts are returned only when nothing was applied
    (`merged` is then `live`): raise `conflict_error(conflicts)`. Otherwise `merged` is
    the new object with its `metadata.managedFields` updated (with `force`, conflicting
    fields have moved to `manager`). `live` is not changed.
    """
    if (applied.get("metadata") or {}).get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    node = schema if schema is not None else managed.schema_of(applied)
    if reset_fields:
        applied = {k: v for k, v in applied.items() if k not in reset_fields}
    errors = typed.typing_errors(applied, node)
    if errors:
        raise _untyped(applied, errors)
    base = live or {}
    stamp = time or time_now()
    entries = managed.decode(base)
    mine = managed.find(entries, manager, managed.APPLY, "", subresource, stamp)
    others = [e for e in entries if e is not mine]

    new_set = typed.applied_set(applied, node)
    # A deep copy: merge shares untouched subtrees, and removal below works in place.
    merged = typed.merge(clone(base), applied, node)
    changed = typed.compare(base, merged, node).modified
    conflicts = [Conflict(other, path) for other in others
                 for path in sorted(other.fields & changed)]
    if conflicts and not force and not _upgrades_client_side_apply(base, conflicts, manager,
                                                                   node):
        return base, conflicts
    # Forced (or taken over from client-side apply): the fields change hands.
    for other in others:
        other.fields -= changed

    owned_by_others: fieldpath.FieldSet = set().union(*(o.fields for o in others))
    keep = owned_by_others | new_set
    # Outer paths first: removing a list item before its fields keeps its key readable.
    # A map or list owned as a whole (the "." of an entry taken over from client-side
    # apply) stays while the configuration still sets something inside it.
    for path in sorted(mine.fields - new_set, key=len):
        if not _owned_at_or_below(path, keep) and not fieldpath.under(path, new_set):
            typed.remove(merged, path, node, keep)

    mine.fields = new_set
    mine.time = stamp
    mine.api_version = api_version or applied.get("apiVersion", "")
    managed.store(merged, entries)
    if manager == KUBECTL and _last_applied(merged) is not None:
        _set_last_applied(merged, applied)
    return merged, []


def _untyped(applied: dict[str, Any], errors: list[str]) -> StatusError:
    """Upstream fails such an apply outside its error types: a 500 whose reason is
    unknown (kubectl prints `Error from server: failed to create typed patch object`)."""
    meta = applied.get("metadata") or {}
    group, _, version = str(applied.get("apiVersion", "")).rpartition("/")
    gvk = f"{group}/{version}, Kind={applied.get('kind', '')}"
    where = f"{meta.get('namespace', '')}/{meta.get('name', '')}; {gvk}"
    # structured-merge-diff's ValidationErrors: one alone, or a list under "errors:".
    text = errors[0] if len(errors) == 1 else "\n  ".join(["errors:", *errors])
    return StatusError(500, "", f"failed to create typed patch object ({where}): {text}")


def _last_applied(obj: dict[str, Any]) -> str | None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(LAST_APPLIED) or None


def _set_last_applied(obj: dict[str, Any], applied: dict[str, Any]) -> None:
    """kubectl's server-side apply keeps the client-side annotation in step, so that a
    later client-side apply computes its patch from what was last applied."""
    config = clone(applied)
    annotations = (config.get("metadata") or {}).get("annotations")
    if annotations is not None:
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            del config["metadata"]["annotations"]
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    obj["metadata"]["annotations"][LAST_APPLIED] = text


def _upgrades_client_side_apply(live: dict[str, Any], conflicts: list[Conflict], manager: str,
                                node: SchemaNode) -> bool:
    """Moving from `kubectl apply` to `kubectl apply --server-side`: conflicts on fields
    of the last client-side applied configuration are the same user's, and are overridden
    while that configuration still matches the live object."""
    text = _last_applied(live) if manager == KUBECTL else None
    if text is None:
        return False
    try:
        last = json.loads(text)
    except ValueError:
        return False
    if not isinstance(last, dict):
        return False
    last_set = typed.applied_set(last, node)
    if any(c.path not in last_set for c in conflicts):
        return False
    for path in last_set:
        now, then = typed.value_at(live, path, node), typed.value_at(last, path, node)
        # List items and empty maps (kubectl writes `annotations: {}`) only need to exist;
        # what they hold is compared field by field.
        if now is typed.MISSING or (not path[-1].startswith("k:") and then != {}
                                    and now != then):
            return False
    return True


def _owned_at_or_below(path: Path, owned: fieldpath.FieldSet) -> bool:
    return any(p[:len(path)] == path for p in owned)


def conflict_error(conflicts: list[Conflict]) -> StatusError:
    """The 409 kube-apiserver answers: one line for one conflict, a list grouped by
    manager for several."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {c.manager_text}",
               "field": c.field} for c in conflicts]
    if len(conflicts) == 1:
        c = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {c.manager_text}: {c.field}"
    else:
        by_manager: dict[str, list[str]] = {}
        for c in conflicts:
            by_manager.setdefault(c.manager_text, []).append(c.field)
        lines = []
        for who in sorted(by_manager):
            lines.append(f"conflicts with {who}:")
            lines.extend(f"- {f}" for f in by_manager[who])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})
