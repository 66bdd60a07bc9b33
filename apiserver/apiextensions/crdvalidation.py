"""Validation of CustomResourceDefinitions (apiextensions.k8s.io/v1), after upstream's
`pkg/apis/apiextensions/validation` and the structural schema rules of
`pkg/apiserver/schema`, with upstream's messages for the rules that decide whether a
CRD can be served: names, group, scope, versions and the one storage version, stored
versions, structural schemas, list and map types, CEL rules, subresources, printer
columns."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    forbidden,
    invalid,
    invalid_no_value,
    not_supported,
    required,
)
from draemu.api.names import is_dns1035_label, is_dns1123_subdomain
from draemu.api.types import Obj
from draemu.apiserver.apiextensions import celrules, jsonpath
from draemu.apiserver.apiextensions.structural import compile_pattern, pattern_error

SCOPES = ["Cluster", "Namespaced"]
COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64", "name",
                  "password"]
SCHEMA_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
# What a root schema may hold beside `properties.status` when /status is served (its
# JSON names, and the Go field names upstream's message lists).
ROOT_WITH_STATUS = {
    "description": "Description", "type": "Type", "format": "Format", "title": "Title",
    "maximum": "Maximum", "exclusiveMaximum": "ExclusiveMaximum", "minimum": "Minimum",
    "exclusiveMinimum": "ExclusiveMinimum", "maxLength": "MaxLength",
    "minLength": "MinLength", "pattern": "Pattern", "maxItems": "MaxItems",
    "minItems": "MinItems", "uniqueItems": "UniqueItems", "multipleOf": "MultipleOf",
    "required": "Required", "items": "Items", "properties": "Properties",
    "externalDocs": "ExternalDocs", "example": "Example",
    "x-kubernetes-preserve-unknown-fields": "XPreserveUnknownFields",
    "x-kubernetes-validations": "XValidations"}
REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid",
           "FieldValueRequired"]
CONVERSION_STRATEGIES = ["None", "Webhook"]


def _versions(crd: Obj) -> list[Obj]:
    versions = (crd.get("spec") or {}).get("versions") or []
    return [v for v in versions if isinstance(v, dict)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def storage_version(crd: Obj) -> str:
    for v in _versions(crd):
        if v.get("storage"):
            return _text(v.get("name"))
    return ""


def validate_crd(crd: Obj, unchanged_schemas: frozenset[str] = frozenset()
                 ) -> list[FieldError]:
    """`unchanged_schemas`: on an update, the versions whose schema the update left as it
    was (their rules' cost is not held against them one by one, as upstream)."""
    errs: list[FieldError] = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = (crd.get("metadata") or {}).get("name") or ""
    if name and name != f"{names.get('plural', '')}.{spec.get('group', '')}":
        errs.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    path = Path("spec")
    group = _text(spec.get("group"))
    if not group:
        errs.append(required(path.child("group")))
    elif is_dns1123_subdomain(group):
        errs.append(invalid(path.child("group"), group, ",".join(is_dns1123_subdomain(group))))
    elif len(group.split(".")) < 2:
        errs.append(invalid(path.child("group"), group, "should be a domain with at least one "
                            "dot"))
    scope = spec.get("scope") or ""
    if not scope:
        errs.append(required(path.child("scope")))
    elif scope not in SCOPES:
        errs.append(not_supported(path.child("scope"), scope, SCOPES))
    versions = spec.get("versions") or []
    for i, version in enumerate(versions):
        if not isinstance(version, dict):
            errs.append(required(path.child("versions").index(i)))
    versions = [v for v in versions if isinstance(v, dict)]
    seen: set[str] = set()
    unique = True
    storage = 0
    for i, version in enumerate(versions):
        vpath = path.child("versions").index(i)
        vname = _text(version.get("name"))
        if version.get("storage"):
            storage += 1
        if vname in seen:
            unique = False
        seen.add(vname)
        problems = is_dns1035_label(vname)
        if problems:
            errs.append(invalid(vpath.child("name"), vname, ",".join(problems)))
        errs += _validate_version(version, vpath, vname in unchanged_schemas)
    if not versions:
        errs.append(required(path.child("versions")))
    if not unique:
        errs.append(invalid(path.child("versions"), _versions_value(versions),
                            "must contain unique version names"))
    if versions and storage != 1:
        errs.append(invalid(path.child("versions"), _versions_value(versions),
                            "must have exactly one version marked as storage version"))
    errs += _validate_names(names, path.child("names"))
    conversion = spec.get("conversion") or {}
    strategy = conversion.get("strategy") or "None"
    if strategy not in CONVERSION_STRATEGIES:
        errs.append(not_supported(path.child("conversion", "strategy"), strategy,
                                  CONVERSION_STRATEGIES))
    elif strategy == "Webhook" and not (conversion.get("webhook") or {}).get("clientConfig"):
        errs.append(required(path.child("conversion", "webhookClientConfig"),
                             "required when strategy is set to Webhook"))
    if spec.get("preserveUnknownFields"):
        errs.append(invalid(path.child("preserveUnknownFields"), True,
                            "cannot set to true, set x-kubernetes-preserve-unknown-fields to "
                            "true in spec.versions[*].schema instead"))
    errs += validate_stored_versions(crd)
    return errs


def validate_stored_versions(crd: Obj) -> list[FieldError]:
    stored = ((crd.get("status") or {}).get("storedVersions")) or []
    versions = [v.get("name") for v in _versions(crd)]
    path = Path("status").child("storedVersions")
    if not stored:
        return [invalid(path, stored, "must have at least one stored version")]
    errs: list[FieldError] = []
    current = storage_version(crd)
    if current and current not in stored:
        errs.append(invalid(path, stored, f"must have the storage version {current}"))
    for i, v in enumerate(stored):
        if v not in versions:
            errs.append(invalid(path.index(i), v, f"missing from spec.versions; {v} was "
                                f"previously a storage version, and must remain in "
                                f"spec.versions until a storage migration ensures no data "
                                f"remains persisted in {v} and removes {v} from "
                                "status.storedVersions"))
    return errs


def validate_crd_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_crd(new, _unchanged_schemas(new, old))
    new_scope = (new.get("spec") or {}).get("scope")
    old_scope = (old.get("spec") or {}).get("scope")
    if new_scope != old_scope:
        errs.append(invalid("spec.scope", new_scope, "field is immutable"))
    return errs


def _unchanged_schemas(new: Obj, old: Obj) -> frozenset[str]:
    def schemas(crd: Obj) -> dict[str, Any]:
        return {v.get("name"): (v.get("schema") or {}).get("openAPIV3Schema")
                for v in (crd.get("spec") or {}).get("versions") or []
                if isinstance(v, dict)}
    before = schemas(old)
    return frozenset(name for name, schema in schemas(new).items()
                     if name in before and before[name] == schema)


def _versions_value(versions: list[Obj]) -> Any:
    return versions


def _validate_names(names: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(required(path.child(key)))
    plural, singular = _text(names.get("plural")), _text(names.get("singular"))
    kind, list_kind = _text(names.get("kind")), _text(names.get("listKind"))
    if plural and is_dns1035_label(plural):
        errs.append(invalid(path.child("plural"), plural, ",".join(is_dns1035_label(plural))))
    if singular and is_dns1035_label(singular):
        errs.append(invalid(path.child("singular"), singular,
                            ",".join(is_dns1035_label(singular))))
    for key, value in (("kind", kind), ("listKind", list_kind)):
        if value and is_dns1035_label(value.lower()):
            errs.append(invalid(path.child(key), value, "may have mixed case, but should "
                                "otherwise match: " + ",".join(is_dns1035_label(value.lower()))))
    if kind and kind == list_kind:
        errs.append(invalid(path.child("listKind"), list_kind,
                            "kind and listKind may not be the same"))
    for key in ("shortNames", "categories"):
        for i, value in enumerate(names.get(key) or []):
            problems = is_dns1035_label(_text(value))
            if problems:
                errs.append(invalid(path.child(key).index(i), value, ",".join(problems)))
    return errs


def _validate_version(version: Obj, path: Path, unchanged: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    schema = ((version.get("schema") or {}).get("openAPIV3Schema"))
    subresources = version.get("subresources") or {}
    if schema is None:
        errs.append(required(path.child("schema").child("openAPIV3Schema")))
    else:
        errs += validate_schema(schema, path.child("schema"), "status" in subresources,
                                unchanged=unchanged)
    errs += _validate_subresources(subresources, path.child("subresources"))
    errs += _validate_selectable(version.get("selectableFields") or [], schema,
                                 path.child("selectableFields"))
    for i, column in enumerate(version.get("additionalPrinterColumns") or []):
        errs += _validate_column(column, path.child("additionalPrinterColumns").index(i))
    return errs


MAX_SELECTABLE_FIELDS = 8


def _validate_selectable(fields: list[Obj], schema: Obj | None, path: Path
                         ) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(fields) > MAX_SELECTABLE_FIELDS:
        errs.append(FieldError("TooMany", str(path), len(fields),
                               f"must have at most {MAX_SELECTABLE_FIELDS} items"))
    seen: set[str] = set()
    for i, field in enumerate(fields):
        fpath = path.index(i).child("jsonPath")
        text = field.get("jsonPath") or ""
        if not text:
            errs.append(required(fpath))
            continue
        target = _schema_at(schema, text)
        if text.startswith(".metadata"):
            errs.append(invalid(fpath, text, "must not point to fields in metadata"))
        elif target is None:
            errs.append(invalid(fpath, text, "is an invalid path: does not refer to a valid "
                                "field"))
        elif target.get("type") not in ("string", "boolean", "integer"):
            errs.append(invalid(fpath, text, "must point to a field of type string, boolean "
                                "or integer. Enum string fields and strings with formats are "
                                "allowed."))
        if text in seen:
            errs.append(FieldError("Duplicate", str(fpath), text))
        seen.add(text)
    return errs


def _schema_at(schema: Obj | None, text: str) -> Obj | None:
    """The schema of a simple `.a.b` path, None when the schema has no such field."""
    node = schema
    for part in text.lstrip(".").split("."):
        if not isinstance(node, dict):
            return None
        node = (node.get("properties") or {}).get(part)
    return node if isinstance(node, dict) else None


def _validate_subresources(subresources: Obj, path: Path) -> list[FieldError]:
    scale = subresources.get("scale")
    if scale is None:
        return []
    errs: list[FieldError] = []
    spec_path = scale.get("specReplicasPath") or ""
    status_path = scale.get("statusReplicasPath") or ""
    if not spec_path:
        errs.append(required(path.child("scale.specReplicasPath")))
    elif not spec_path.startswith(".spec."):
        errs.append(invalid(path.child("scale.specReplicasPath"), spec_path,
                            "should be a json path under .spec"))
    if not status_path:
        errs.append(required(path.child("scale.statusReplicasPath")))
    elif not status_path.startswith(".status."):
        errs.append(invalid(path.child("scale.statusReplicasPath"), status_path,
                            "should be a json path under .status"))
    selector = scale.get("labelSelectorPath")
    if selector and not selector.startswith((".spec.", ".status.")):
        errs.append(invalid(path.child("scale.labelSelectorPath"), selector,
                            "should be a json path under either .spec or .status"))
    return errs


def _validate_column(column: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not column.get("name"):
        errs.append(required(path.child("name")))
    kind = column.get("type") or ""
    if not kind:
        errs.append(required(path.child("type"), "must be one of " + ",".join(COLUMN_TYPES)))
    elif kind not in COLUMN_TYPES:
        errs.append(invalid(path.child("type"), kind, "must be one of " +
                            ",".join(COLUMN_TYPES)))
    fmt = column.get("format") or ""
    if fmt and fmt not in COLUMN_FORMATS:
        errs.append(invalid(path.child("format"), fmt, "must be one of " +
                            ",".join(COLUMN_FORMATS)))
    path_text = column.get("jsonPath") or ""
    if not path_text:
        errs.append(required(path.child("JSONPath")))
    else:
        try:
            jsonpath.parse(path_text)
        except jsonpath.JSONPathError as e:
            errs.append(invalid(path.child("JSONPath"), path_text, str(e)))
    return errs


# Schemas ---------------------------------------------------------------------------------

_UNSUPPORTED = (("id", "id is not supported"),
                ("additionalItems", "additionalItems is not supported"),
                ("patternProperties", "patternProperties is not supported"),
                ("definitions", "definitions is not supported"),
                ("dependencies", "dependencies is not supported"),
                ("$ref", "$ref is not supported"))


def validate_schema(schema: Obj, path: Path, status_enabled: bool, *,
                    unchanged: bool = False) -> list[FieldError]:
    """The rules of a version's schema; `path` is `spec.versions[i].schema`;
    `unchanged`: an update left it as it was."""
    errs: list[FieldError] = []
    root = path.child("openAPIV3Schema")
    if status_enabled:
        if schema.get("type") not in (None, "object"):
            errs.append(invalid(root.child("type"), schema.get("type"),
                                'only "object" is allowed as the type at the root of the '
                                "schema if the status subresource is enabled"))
        elif any(k not in ROOT_WITH_STATUS and _set(k, v) for k, v in schema.items()):
            errs.append(invalid_no_value(root, "only [" + " ".join(ROOT_WITH_STATUS.values())
                                         + "] fields are allowed at the root of the schema "
                                         "if the status subresource is enabled"))
    if schema.get("nullable"):
        errs.append(forbidden(root.child("nullable"), "nullable cannot be true at the root"))
    errs += _walk(schema, root, "root")
    if not errs:
        errs += celrules.check_rules(schema, root, unchanged=unchanged)
    return errs


# Go pointers among the fields not allowed at a root with /status: set even when zero.
_POINTERS = frozenset({"$ref", "default", "maxProperties", "minProperties", "not",
                       "additionalProperties", "additionalItems", "x-kubernetes-list-type",
                       "x-kubernetes-map-type"})


def _set(name: str, value: Any) -> bool:
    """Whether a schema field holds other than Go's zero value."""
    if value is None:
        return False
    return name in _POINTERS or value not in ("", [], {}) and value is not False \
        and not (type(value) is int and value == 0)


def _walk(s: Obj, path: Path, level: str) -> list[FieldError]:
    """Structural invariants (pkg/apiserver/schema/validation.go) and the OpenAPI rules
    upstream checks on each node, in upstream's order."""
    if not isinstance(s, dict):
        return [invalid(path, s, "must be a schema object")]
    kind = s.get("type") or ""
    errs = _shape_errors(s, path, kind, level)
    errs += _type_errors(s, path, kind, level)
    errs += _metadata_errors(s, path, level)
    errs += _map_type_errors(s, path, kind)
    errs += _list_type(s, path, kind)
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        errs += _rule_shape(rule, path.child("x-kubernetes-validations").index(i))
    return errs + _children_errors(s, path)


def _shape_errors(s: Obj, path: Path, kind: str, level: str) -> list[FieldError]:
    """Unsupported keys, the type's name, items and properties."""
    errs: list[FieldError] = []
    for key, detail in _UNSUPPORTED:
        if s.get(key):
            errs.append(forbidden(path.child(key), detail))
    if kind and kind not in SCHEMA_TYPES:
        errs.append(not_supported(path.child("type"), kind, SCHEMA_TYPES))
    if kind == "null":
        errs.append(forbidden(path.child("type"), "type cannot be set to null, use nullable "
                              "as an alternative"))
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(invalid(path.child("x-kubernetes-preserve-unknown-fields"), False,
                            "must be true or undefined"))
    if kind == "array" and s.get("items") is None:
        errs.append(required(path.child("items"), "must be specified"))
    if isinstance(s.get("items"), list):
        errs.append(forbidden(path.child("items"), "items must be a schema object and not an "
                              "array"))
    if s.get("uniqueItems"):
        errs.append(forbidden(path.child("uniqueItems"), "uniqueItems cannot be set to true "
                              "since the runtime complexity becomes quadratic"))
    if s.get("properties") and isinstance(s.get("additionalProperties"), dict):
        errs.append(forbidden(path.child("additionalProperties"),
                              "additionalProperties and properties are mutual exclusive"))
    if s.get("additionalProperties") is not None and level == "root":
        errs.append(forbidden(path.child("additionalProperties"), "must not be used at the "
                              "root"))
    return errs


def _type_errors(s: Obj, path: Path, kind: str, level: str) -> list[FieldError]:
    """The type an embedded resource, the root or an untyped node must have; the
    pattern."""
    errs: list[FieldError] = []
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    preserve = s.get("x-kubernetes-preserve-unknown-fields")
    if s.get("x-kubernetes-embedded-resource") and kind != "object":
        if not kind:
            errs.append(required(path.child("type"), "must be object if "
                                 "x-kubernetes-embedded-resource is true"))
        else:
            errs.append(invalid(path.child("type"), kind, "must be object if "
                                "x-kubernetes-embedded-resource is true"))
    elif not kind and not int_or_string and not preserve:
        detail = {"root": "must not be empty at the root",
                  "item": "must not be empty for specified array items",
                  "field": "must not be empty for specified object fields"}[level]
        errs.append(required(path.child("type"), detail))
    if level == "root" and kind and kind != "object":
        errs.append(invalid(path.child("type"), kind, "must be object at the root"))
    if int_or_string and preserve:
        errs.append(invalid(path.child("x-kubernetes-preserve-unknown-fields"), True,
                            "must be false if x-kubernetes-int-or-string is true"))
    pattern = s.get("pattern")
    if isinstance(pattern, str) and compile_pattern(pattern) is None:
        errs.append(invalid(path.child("pattern"), pattern,
                            "must be a valid regular expression, but isn't: " +
                            pattern_error(pattern)))
    return errs


def _metadata_errors(s: Obj, path: Path, level: str) -> list[FieldError]:
    """kind, apiVersion and metadata of the root and of embedded resources."""
    errs: list[FieldError] = []
    props = s.get("properties") or {}
    if not (level == "root" or s.get("x-kubernetes-embedded-resource")):
        return errs
    for key in ("kind", "apiVersion"):
        if key in props and (props[key] or {}).get("type") != "string":
            errs.append(invalid(path.child("properties").key(key).child("type"),
                                (props[key] or {}).get("type", ""), "must be string"))
    meta = props.get("metadata")
    if meta is None:
        return errs
    mpath = path.child("properties").key("metadata")
    if (meta or {}).get("type") != "object":
        errs.append(invalid(mpath.child("type"), (meta or {}).get("type", ""),
                            "must be object"))
    elif set((meta or {}).get("properties") or {}) - {"name", "generateName"} and \
            level == "root":
        errs.append(forbidden(mpath, "must not specify anything other than name and "
                              "generateName, but metadata is implicitly specified"))
    return errs


def _map_type_errors(s: Obj, path: Path, kind: str) -> list[FieldError]:
    if s.get("x-kubernetes-map-type") is None:
        return []
    errs: list[FieldError] = []
    map_type = s["x-kubernetes-map-type"]
    if map_type not in ("atomic", "granular"):
        errs.append(not_supported(path.child("x-kubernetes-map-type"), map_type,
                                  ["atomic", "granular"]))
    if kind != "object":
        errs.append(required(path.child("type"), "must be object if "
                             "x-kubernetes-map-type is specified") if not kind else
                    invalid(path.child("type"), kind, "must be object if "
                            "x-kubernetes-map-type is specified"))
    return errs


def _children_errors(s: Obj, path: Path) -> list[FieldError]:
    """Properties, items and additionalProperties walked; the value validations of
    allOf, anyOf, oneOf and not."""
    errs: list[FieldError] = []
    for key, sub in (s.get("properties") or {}).items():
        errs += _walk(sub, path.child("properties").key(key), "field")
    if isinstance(s.get("items"), dict):
        errs += _walk(s["items"], path.child("items"), "item")
    if isinstance(s.get("additionalProperties"), dict):
        errs += _walk(s["additionalProperties"], path.child("additionalProperties"), "field")
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(s.get(key) or []):
            errs += _value_validation(sub, path.child(key).index(i))
    if isinstance(s.get("not"), dict):
        errs += _value_validation(s["not"], path.child("not"))
    return errs


_STRUCTURAL_ONLY = (("type", "must be empty to be structural"),
                    ("additionalProperties", "must be undefined to be structural"),
                    ("default", "must be undefined to be structural"),
                    ("title", "must be empty to be structural"),
                    ("description", "must be empty to be structural"),
                    ("nullable", "must be false to be structural"),
                    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
                    ("x-kubernetes-embedded-resource", "must be false to be structural"),
                    ("x-kubernetes-int-or-string", "must be false to be structural"),
                    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
                    ("x-kubernetes-list-type", "must be undefined to be structural"),
                    ("x-kubernetes-map-type", "must be undefined to be structural"),
                    ("x-kubernetes-validations", "must be empty to be structural"))


def _value_validation(s: Obj, path: Path) -> list[FieldError]:
    """Inside allOf/anyOf/oneOf/not only value validations may appear."""
    if not isinstance(s, dict):
        return []
    if _int_or_string_pattern(s):
        return []
    errs = [forbidden(path.child(key), detail) for key, detail in _STRUCTURAL_ONLY
            if s.get(key) not in (None, "", False, [], {})]
    if "metadata" in (s.get("properties") or {}):
        errs.append(forbidden(path.child("properties").key("metadata"),
                              "must not be specified in a nested context"))
    return errs


def _int_or_string_pattern(s: Obj) -> bool:
    return s.get("type") in ("integer", "string") and len(s) == 1


def _list_type(s: Obj, path: Path, kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    list_type = s.get("x-kubernetes-list-type")
    keys = s.get("x-kubernetes-list-map-keys") or []
    if list_type is not None:
        if kind != "array":
            errs.append(required(path.child("type"), "must be array if "
                                 "x-kubernetes-list-type is specified") if not kind else
                        invalid(path.child("type"), kind, "must be array if "
                                "x-kubernetes-list-type is specified"))
        if list_type not in ("atomic", "set", "map"):
            errs.append(not_supported(path.child("x-kubernetes-list-type"), list_type,
                                      ["atomic", "set", "map"]))
    items = s.get("items") if isinstance(s.get("items"), dict) else None
    if list_type == "set" and items is not None:
        if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            errs.append(invalid(path.child("items").child("x-kubernetes-map-type"),
                                items.get("x-kubernetes-map-type"),
                                "must be atomic as item of a list with x-kubernetes-list-type="
                                "set"))
    if keys and list_type != "map":
        errs.append(required(path.child("x-kubernetes-list-type"), "must be map if "
                             "x-kubernetes-list-map-keys is non-empty") if list_type is None
                    else invalid(path.child("x-kubernetes-list-type"), list_type,
                                 "must be map if x-kubernetes-list-map-keys is non-empty"))
    if list_type == "map":
        if not keys:
            errs.append(required(path.child("x-kubernetes-list-map-keys"),
                                 "must not be empty if x-kubernetes-list-type is map"))
        if items is None:
            errs.append(required(path.child("items"), "must have a schema if "
                                 "x-kubernetes-list-type is map"))
        elif items.get("type") != "object":
            errs.append(invalid(path.child("items").child("type"), items.get("type", ""),
                                "must be object if parent array's x-kubernetes-list-type is "
                                "map"))
        else:
            item_props = items.get("properties") or {}
            if any(k not in item_props for k in keys):
                errs.append(invalid(path.child("x-kubernetes-list-map-keys"), keys,
                                    "entries must all be names of item properties"))
            if len(set(keys)) != len(keys):
                errs.append(invalid(path.child("x-kubernetes-list-map-keys"), keys,
                                    "must not contain duplicate entries"))
            for k in keys:
                sub = item_props.get(k) or {}
                if k in item_props and sub.get("type") not in ("string", "integer", "number",
                                                              "boolean"):
                    errs.append(invalid(path.child("items").child("properties").key(k)
                                        .child("type"), sub.get("type", ""),
                                        "must be a scalar type if parent array's "
                                        "x-kubernetes-list-type is map"))
                required_keys = items.get("required") or []
                if k in item_props and "default" not in sub and k not in required_keys:
                    errs.append(required(path.child("items").child("properties").key(k)
                                         .child("default"), "this property is in "
                                         "x-kubernetes-list-map-keys, so it must have a "
                                         "default or be a required property"))
    return errs


def _rule_shape(rule: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not rule.get("rule"):
        errs.append(required(path.child("rule"), "rule is not specified"))
    message = rule.get("message")
    if message is not None:
        if not message.strip():
            errs.append(invalid(path.child("message"), message, "must be non-empty if "
                                "specified"))
        elif "\n" in message:
            errs.append(invalid(path.child("message"), message, "must not contain line "
                                "breaks"))
    elif "\n" in (rule.get("rule") or ""):
        errs.append(required(path.child("message"), "message must be specified if rule "
                             "contains line breaks"))
    expr = rule.get("messageExpression")
    if expr is not None and not expr.strip():
        errs.append(required(path.child("messageExpression"), "messageExpression must be "
                             "non-empty if specified"))
    reason = rule.get("reason")
    if reason is not None and reason not in REASONS:
        errs.append(not_supported(path.child("reason"), reason, REASONS))
    field_path = rule.get("fieldPath")
    if field_path is not None:
        if not field_path.strip():
            errs.append(invalid(path.child("fieldPath"), field_path, "must be non-empty if "
                                "specified"))
        elif "\n" in field_path:
            errs.append(invalid(path.child("fieldPath"), field_path, "must not contain line "
                                "breaks"))
        else:
            try:
                jsonpath.parse(field_path)
            except jsonpath.JSONPathError:
                errs.append(invalid(path.child("fieldPath"), field_path, "must be a valid "
                                    "path"))
    return errs
