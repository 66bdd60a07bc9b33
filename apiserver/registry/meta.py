"""Validation of ObjectMeta, shared by every kind, with upstream's paths and messages.

The apiserver's handlers call `validate_object_meta` on create and
`validate_object_meta_update` on update (and on `/status` updates), passing the
kind's name rule (`Strategy.validate_name`). Kind-specific rules live in the
strategies. This follows the core group's flavour of upstream's ObjectMeta
validation, which adds the finalizer-name rule to the generic one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, required, too_long
from draemu.api.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
)

NameFn = Callable[[str, bool], list[str]]

FIELD_IMMUTABLE = "field is immutable"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
FIELD_MANAGER_MAX = 128
SUBRESOURCE_NAME_MAX = 256
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
# ownerReferences to these kinds are refused: an event must never own anything.
_BANNED_OWNERS = {("", "v1", "Event"), ("events.k8s.io", "v1", "Event")}


def _mask_trailing_dash(name: str) -> str:
    """A generateName prefix may end in '-': validate it as if a suffix followed."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-1] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_anything(name: str, prefix: bool) -> list[str]:
    """core/v1 Events: legacy clients name them freely."""
    return []


def _split_api_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        group, _, version = api_version.partition("/")
        return group, version
    return "", api_version


def _validate_owner_references(refs: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs or []:
        group, version = _split_api_version(ref.get("apiVersion") or "")
        kind = ref.get("kind") or ""
        if not version:
            errs.append(invalid(path.child("apiVersion"), ref.get("apiVersion") or "",
                                "version must not be empty"))
        if not kind:
            errs.append(invalid(path.child("kind"), kind, "must not be empty"))
        if not ref.get("name"):
            errs.append(invalid(path.child("name"), ref.get("name") or "", "must not be empty"))
        if not ref.get("uid"):
            errs.append(invalid(path.child("uid"), ref.get("uid") or "", "must not be empty"))
        if (group, version, kind) in _BANNED_OWNERS:
            gvk = f"{group}/{version}, Kind={kind}"
            errs.append(invalid(path, ref, f"{gvk} is disallowed from being an owner"))
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name') or ''}"
            if first_controller:
                errs.append(invalid(
                    path, refs, "Only one reference can have Controller set to true. Found "
                    f'"true" in references for {first_controller} and {current}'))
            else:
                first_controller = current
    return errs


def validate_labels(labels: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in sorted(labels or {}):
        errs.extend(invalid(path, key, msg) for msg in is_qualified_name(key))
        value = labels[key]
        errs.extend(invalid(path, value, msg) for msg in is_label_value(value))
    return errs


def validate_annotations(annotations: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    size = 0
    for key in sorted(annotations or {}):
        # Annotation keys are qualified names, but case does not matter.
        errs.extend(invalid(path, key, msg) for msg in is_qualified_name(key.lower()))
        size += len(key.encode()) + len(str(annotations[key]).encode())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_finalizer_name(name: str, path: Path) -> list[FieldError]:
    errs = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if not errs and "/" not in name and name not in STANDARD_FINALIZERS:
        errs.append(invalid(path, name,
                            "name is neither a standard finalizer name nor is it fully qualified"))
    return errs


def validate_finalizers(finalizers: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    names = list(finalizers or [])
    for i, name in enumerate(names):
        # The generic rule reports at the list, the core rule at the item; upstream runs both.
        errs.extend(invalid(path, name, msg) for msg in is_qualified_name(name))
        errs.extend(validate_finalizer_name(name, path.index(i)))
    if "orphan" in names and "foregroundDeletion" in names:
        errs.append(invalid(path, names,
                            "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


def _validate_managed_fields(entries: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in enumerate(entries or []):
        p = path.index(i)
        if entry.get("operation") not in ("Apply", "Update"):
            errs.append(invalid(p.child("operation"), entry.get("operation") or "",
                                "must be `Apply` or `Update`"))
        if entry.get("fieldsType") and entry["fieldsType"] != "FieldsV1":
            errs.append(invalid(p.child("fieldsType"), entry["fieldsType"],
                                "must be `FieldsV1`"))
        manager = entry.get("manager") or ""
        if len(manager) > FIELD_MANAGER_MAX:
            errs.append(too_long(p.child("manager"), FIELD_MANAGER_MAX))
        elif not manager.isprintable():
            errs.append(invalid(p.child("manager"), manager,
                                "must only contain printable characters"))
        if len(entry.get("subresource") or "") > SUBRESOURCE_NAME_MAX:
            errs.append(too_long(p.child("subresource"), SUBRESOURCE_NAME_MAX))
    return errs


def _validate_common(meta: dict[str, Any], path: Path) -> list[FieldError]:
    errs = validate_labels(meta.get("labels"), path.child("labels"))
    errs += validate_annotations(meta.get("annotations"), path.child("annotations"))
    errs += _validate_owner_references(meta.get("ownerReferences"),
                                       path.child("ownerReferences"))
    errs += _validate_managed_fields(meta.get("managedFields"), path.child("managedFields"))
    return errs


def validate_object_meta(meta: dict[str, Any], namespaced: bool, path: Path,
                         name_fn: NameFn = name_is_dns_subdomain) -> list[FieldError]:
    """All problems of a new object's metadata. `name_fn` is the kind's name rule
    (`Strategy.validate_name`); most kinds use DNS subdomains."""
    errs: list[FieldError] = []
    generate_name = meta.get("generateName") or ""
    if generate_name:
        errs += [invalid(path.child("generateName"), generate_name, msg)
                 for msg in name_fn(generate_name, True)]
    name = meta.get("name") or ""
    if not name:
        errs.append(required(path.child("name"), "name or generateName is required"))
    else:
        errs += [invalid(path.child("name"), name, msg) for msg in name_fn(name, False)]
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            errs.append(required(path.child("namespace")))
        else:
            errs += [invalid(path.child("namespace"), namespace, msg)
                     for msg in name_is_dns_label(namespace, False)]
    elif namespace:
        errs.append(forbidden(path.child("namespace"), "not allowed on this type"))
    generation = meta.get("generation") or 0
    if generation < 0:
        errs.append(invalid(path.child("generation"), generation,
                            "must be greater than or equal to 0"))
    errs += _validate_common(meta, path)
    errs += validate_finalizers(meta.get("finalizers"), path.child("finalizers"))
    return errs


def _immutable(new: Any, old: Any, path: Path) -> list[FieldError]:
    if new == old:
        return []
    return [invalid(path, new if new is not None else "", FIELD_IMMUTABLE)]


def _go_string_slice(values: list[str]) -> str:
    """Go's %#v of a []string, as the finalizer message prints it."""
    return "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"


def validate_object_meta_update(new: dict[str, Any], old: dict[str, Any],
                                path: Path) -> list[FieldError]:
    """All problems of an update's metadata against the stored object's."""
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        added = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if added:
            errs.append(forbidden(
                path.child("finalizers"),
                "no new finalizers can be added if the object is being deleted, found new "
                f"finalizers {_go_string_slice(added)}"))
    if not new.get("resourceVersion"):
        errs.append(invalid(path.child("resourceVersion"), new.get("resourceVersion") or "",
                            "must be specified for an update"))
    if (new.get("generation") or 0) < (old.get("generation") or 0):
        errs.append(invalid(path.child("generation"), new.get("generation") or 0,
                            "must not be decremented"))
    for name in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                 "deletionGracePeriodSeconds"):
        errs += _immutable(new.get(name), old.get(name), path.child(name))
    errs += _validate_common(new, path)
    # On update only the core group's per-item finalizer rule runs, not the list rule.
    for i, name in enumerate(new.get("finalizers") or []):
        errs += validate_finalizer_name(name, path.child("finalizers").index(i))
    return errs
