"""The strategy of a custom resource, built at run time from its CustomResourceDefinition:
one instance per CRD (and per change of it), serving every served version with `None`
conversion (only `apiVersion` changes), the version's structural schema for pruning,
defaulting and validation, CEL rules, the status and scale subresources and the
additional printer columns."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from draemu.api.errors import FieldError, StatusError, bad_request
from draemu.api.meta import human_duration, now, parse_time
from draemu.api.types import Obj
from draemu.apiserver.apiextensions import celrules, jsonpath, structural
from draemu.apiserver.registry.resources import version_priority
from draemu.apiserver.registry.strategy import (
    CREATION_TIMESTAMP_DESCRIPTION,
    OBJECT_NAME_DESCRIPTION,
    Column,
    Context,
    Strategy,
)
from draemu.openapi import schemas
from draemu.openapi.schemas.fields import first_type_error
from draemu.openapi.schemas.node import SchemaNode

# Objects (of one apiVersion) and the apiVersion wanted -> the converted objects.
Converter = Callable[[list[Obj], str], list[Obj]]

DEFAULT_COLUMNS = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                    "description": CREATION_TIMESTAMP_DESCRIPTION}]
# Blocking errors: CEL rules are not run on an object that has them (upstream's
# hasBlockingErr).
_BLOCKING = {"NotSupported", "Required", "TooLong", "TooMany", "TypeInvalid"}


def _add_type_and_object_meta(props: Obj) -> None:
    props["apiVersion"] = {"type": "string", "description": "APIVersion defines the "
                           "versioned schema of this representation of an object."}
    props["kind"] = {"type": "string", "description": "Kind is a string value "
                     "representing the REST resource this object represents."}
    props["metadata"] = {"allOf": [{"$ref": schemas.REF_PREFIX + structural.OBJECT_META}],
                         "description": "Standard object's metadata."}


def _with_embedded_resources(schema: Any) -> None:
    """An `x-kubernetes-embedded-resource` object publishes apiVersion, kind (both
    required) and ObjectMeta, whatever its schema says of them (upstream's
    addEmbeddedProperties): kubectl and server-side apply type them."""
    if not isinstance(schema, dict):
        return
    for sub in (schema.get("properties") or {}).values():
        _with_embedded_resources(sub)
    _with_embedded_resources(schema.get("items"))
    _with_embedded_resources(schema.get("additionalProperties"))
    if schema.get("x-kubernetes-embedded-resource") is True:
        _add_type_and_object_meta(schema.setdefault("properties", {}))
        required = schema.setdefault("required", [])
        required += [name for name in ("kind", "apiVersion") if name not in required]


class CustomResourceStrategy(Strategy):
    """Identity and behaviour from `crd` (a stored apiextensions.k8s.io/v1 object)."""

    def __init__(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        self.crd_name = crd["metadata"]["name"]
        self.crd_uid = crd["metadata"].get("uid", "")
        # A CRD being deleted still serves its objects (to delete them) but no new ones.
        self.terminating = bool(crd["metadata"].get("deletionTimestamp"))
        self.group = spec["group"]
        self.kind = names["kind"]
        self.list_kind = names.get("listKind") or self.kind + "List"
        self.resource = names["plural"]
        self.singular = names.get("singular") or self.kind.lower()
        self.short_names = tuple(names.get("shortNames") or ())
        self.categories = tuple(names.get("categories") or ())
        self.namespaced = spec.get("scope") == "Namespaced"
        versions = [v for v in spec.get("versions") or [] if v.get("served")]
        self.versions = tuple(sorted((v["name"] for v in versions), key=version_priority))
        self.storage_version = next((v["name"] for v in spec.get("versions") or []
                                     if v.get("storage")), self.versions[0])
        self.deprecated_versions = {
            v["name"]: v.get("deprecationWarning") or
            f"{self.group}/{v['name']} {self.kind} is deprecated"
            for v in versions if v.get("deprecated")}
        self._schemas: dict[str, Obj] = {}
        self._subresources: dict[str, Obj] = {}
        self._columns: dict[str, list[Obj]] = {}
        self._selectable: dict[str, list[str]] = {}
        for v in spec.get("versions") or []:
            self._schemas[v["name"]] = ((v.get("schema") or {}).get("openAPIV3Schema")) or {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}
            self._subresources[v["name"]] = v.get("subresources") or {}
            self._columns[v["name"]] = v.get("additionalPrinterColumns") or DEFAULT_COLUMNS
            self._selectable[v["name"]] = [f.get("jsonPath") or "" for f in
                                          v.get("selectableFields") or []]
        subs: set[str] = set()
        for v in versions:
            subs |= set(self._subresources[v["name"]])
        self.subresources = frozenset(s for s in subs if s in ("status", "scale"))
        # Without a status subresource, status is part of the main resource: its changes
        # bump the generation too (as upstream).
        self.status_fields = ("status",) if "status" in self.subresources else ()
        self._nodes: dict[str, SchemaNode] = {}
        # Versions whose schema has defaults: objects read from storage get them too
        # (written before the default was added to the CRD).
        self._defaulted = frozenset(name for name, schema in self._schemas.items()
                                    if structural.has_defaults(schema))
        # `spec.conversion`; with the Webhook strategy, versions are converted by
        # `converter` (set by whoever serves the CRD: it calls the webhook).
        self.conversion: Obj = spec.get("conversion") or {}
        self.converter: Converter | None = None

    # Schemas ---------------------------------------------------------------------------
    def openapi_schema(self, version: str) -> Obj:
        """The version's schema as published (apiVersion, kind and metadata added)."""
        out = copy.deepcopy(self._schemas.get(version) or {})
        _with_embedded_resources(out)
        _add_type_and_object_meta(out.setdefault("properties", {}))
        out["type"] = "object"
        out["x-kubernetes-group-version-kind"] = [{"group": self.group, "kind": self.kind,
                                                   "version": version}]
        return out

    def schema_node(self, version: str) -> SchemaNode:
        node = self._nodes.get(version)
        if node is None:
            node = self._nodes[version] = SchemaNode(self.openapi_schema(version),
                                                     schemas.definition)
        return node

    def prune_unknown(self, obj: Obj, version: str) -> tuple[Obj, list[str]] | None:
        """Pruned in place: the caller keeps no other reference to `obj`."""
        meta = obj.get("metadata")
        problem = "metadata: must be an object" if meta is not None and \
            not isinstance(meta, dict) else None
        if isinstance(meta, dict):
            problem = first_type_error(structural.object_meta_node(), meta, "ObjectMeta")
            if problem:
                problem = problem.replace("Go struct field ObjectMeta.",
                                          "Go struct field ObjectMeta.metadata.")
        if problem:
            raise bad_request(f'{self.kind} in version "{version}" cannot be handled as a '
                              f"{self.kind}: {problem}")
        unknown: list[str] = []
        pruned = structural.prune(obj, self._schemas.get(version) or {}, unknown)
        return pruned, unknown

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        if self.terminating:
            raise StatusError(405, "MethodNotAllowed", "create not allowed while custom "
                              "resource definition is terminating",
                              {"group": self.group, "kind": self.resource})
        super().prepare_for_create(obj, ctx)

    # Versions ------------------------------------------------------------------------------
    def default(self, obj: Obj, version: str) -> None:
        structural.default(obj, self._schemas.get(version) or {})

    @property
    def webhook_conversion(self) -> bool:
        return self.conversion.get("strategy") == "Webhook" and self.converter is not None

    def _convert(self, obj: Obj, api_version: str) -> Obj:
        """`obj` in `api_version`: by the conversion webhook when the CRD has one and
        the versions differ, else relabelled (the None strategy)."""
        if obj.get("apiVersion") != api_version and self.webhook_conversion:
            assert self.converter is not None
            return self.converter([obj], api_version)[0]
        out = dict(obj)
        out["apiVersion"] = api_version
        return out

    def to_storage(self, obj: Obj, version: str) -> Obj:
        if version != self.storage_version:
            return self._convert(obj, self.api_version(self.storage_version))
        return obj

    def defaults_on_read(self, version: str) -> bool:
        return version in self._defaulted

    def converts_on_read(self) -> bool:
        # With several versions, objects written before the storage version changed are
        # stored in the older one: each read converts (or relabels) them.
        return self.webhook_conversion or len(self._schemas) > 1

    def from_storage(self, obj: Obj, version: str) -> Obj:
        out = self._convert(obj, self.api_version(version))
        if version in self._defaulted:
            out = copy.deepcopy(out)
            structural.default(out, self._schemas[version], prune_nulls=False)
        return out

    # Validation ------------------------------------------------------------------------------
    def _version(self, ctx: Context) -> str:
        return ctx.version or self.storage_version

    def _validate(self, obj: Obj, old: Obj | None, ctx: Context) -> list[FieldError]:
        schema = self._schemas.get(self._version(ctx)) or {}
        errs = structural.validate(obj, schema) if old is None else \
            structural.validate(obj, schema, old)
        if not celrules.has_rules(schema):
            return errs
        if any(e.type in _BLOCKING for e in errs):
            errs.append(FieldError("Invalid", "", None, "some validation rules were not "
                                   "checked because the object was invalid; correct the "
                                   "existing errors to complete validation"))
            return errs
        if old is None:
            return errs + celrules.evaluate(schema, obj, deadline=ctx.cel_deadline)
        return errs + celrules.evaluate(schema, obj, old, ctx.ratcheted,
                                        deadline=ctx.cel_deadline)

    def long_validation(self, ctx: Context) -> bool:
        return celrules.has_rules(self._schemas.get(self._version(ctx)) or {})

    def warnings(self, obj: Obj, ctx: Context) -> list[str]:
        """CEL failures on unchanged values (ratcheted by the update's validation)."""
        found, ctx.ratcheted = ctx.ratcheted, []
        return found

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return self._validate(obj, None, ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self._validate(new, old, ctx)

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self._validate(new, old, ctx)

    # Scale -------------------------------------------------------------------------------
    def _scale_paths(self) -> Obj:
        return self._subresources.get(self.storage_version, {}).get("scale") or {}

    def scale_of(self, obj: Obj) -> Obj | None:
        paths = self._scale_paths()
        meta = obj["metadata"]
        spec_found = jsonpath.find(obj, paths.get("specReplicasPath") or ".spec.replicas")
        status_found = jsonpath.find(obj, paths.get("statusReplicasPath") or
                                     ".status.replicas")
        selector_path = paths.get("labelSelectorPath")
        selector = jsonpath.find(obj, selector_path) if selector_path else []
        status: Obj = {"replicas": int(status_found[0]) if status_found and
                       isinstance(status_found[0], (int, float)) else 0}
        if selector and isinstance(selector[0], str):
            status["selector"] = selector[0]
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid",
                                                  "resourceVersion", "creationTimestamp")
                             if k in meta},
                "spec": {"replicas": int(spec_found[0]) if spec_found and
                         isinstance(spec_found[0], (int, float)) else 0},
                "status": status}

    def set_replicas(self, obj: Obj, replicas: int) -> None:
        path = (self._scale_paths().get("specReplicasPath") or ".spec.replicas").lstrip(".")
        target = obj
        parts = path.split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = replicas

    # Reads -------------------------------------------------------------------------------
    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        """`selectableFields` of the CRD's storage version (`spec.color` for
        `.spec.color`); a missing value selects as the empty string."""
        return self._field_values(obj, self.storage_version)

    def selectable_fields_in(self, obj: Obj, version: str) -> dict[str, str]:
        """The selectable fields of `version`, on the object converted to it."""
        if not self._selectable.get(version):
            return {}
        if obj.get("apiVersion") != self.api_version(version):
            obj = self.from_storage(obj, version)
        return self._field_values(obj, version)

    def selectable_field_names(self, version: str) -> set[str] | None:
        return {path.lstrip(".") for path in self._selectable.get(version) or ()}

    def _field_values(self, obj: Obj, version: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for path in self._selectable.get(version) or ():
            try:
                found = jsonpath.find(obj, path)
            except jsonpath.JSONPathError:
                continue
            out[path.lstrip(".")] = jsonpath.text(found[0]) if found and \
                found[0] is not None else ""
        return out

    # Tables ------------------------------------------------------------------------------
    def _printer_columns(self) -> list[Obj]:
        return self._columns.get(self.storage_version) or DEFAULT_COLUMNS

    def table_columns(self) -> list[Column]:
        out = [Column("Name", format="name", description=OBJECT_NAME_DESCRIPTION)]
        for col in self._printer_columns():
            out.append(Column(col["name"], col.get("type") or "string", col.get("format") or "",
                              col.get("description") or "Custom resource definition column "
                              f"(in JSONPath format): {col.get('jsonPath')}",
                              int(col.get("priority") or 0)))
        return out

    def table_row(self, obj: Obj) -> list[Any]:
        cells: list[Any] = [(obj.get("metadata") or {}).get("name", "")]
        for col in self._printer_columns():
            try:
                found = jsonpath.find(obj, col.get("jsonPath") or "")
            except jsonpath.JSONPathError:
                found = []
            cells.append(_cell(col.get("type") or "string", found[0]) if found else None)
        return cells


def _cell(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "string":
        return jsonpath.text(value)
    if kind == "integer":
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else None
    if kind == "number":
        return float(value) if isinstance(value, (int, float)) and \
            not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        if not isinstance(value, str):
            return None
        when = parse_time(value)
        if when is None:
            return "<invalid>"
        return human_duration((now() - when).total_seconds())
    return None

