"""The strategy of a kind: everything the generic REST handlers need to know about it.

The generic handlers (create, update, patch, delete, list, watch, subresources) are
the same for every kind; a kind contributes one `Strategy` subclass in a module of
`apiserver.registry` (see `apiserver.registry.discover`). Objects reach a strategy
as plain JSON dicts **in the storage version** (decoded, defaulted in their request
version and converted by `to_storage` first); a strategy never sees the wire version.

Shape of the contract, after upstream's `rest.RESTCreateStrategy` and friends:

- `prepare_for_create` / `prepare_for_update` / `prepare_for_status_update` normalise
  an object before validation (clear status on create, keep the old status on a main
  update and the old spec on a `/status` update, drop fields of disabled gates).
- `validate*` return *all* field errors (`draemu.api.errors.FieldError`) at once; the
  handler turns them into one 422 `Status`. Generic metadata validation (name format,
  labels, annotations, ...) is done by the handler, not here.
- `selectable_fields` gives field-selector attributes beyond `metadata.name` and
  `metadata.namespace`.
- `table_columns` / `table_row` give server-side printing (`kubectl get`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from draemu.api import jsonfast
from draemu.api.errors import FieldError
from draemu.api.types import Obj
from draemu.apiserver.registry.meta import name_is_dns_subdomain
from draemu.apiserver.wire.jsoncopy import clone
from draemu.features import FeatureGates
from draemu.identity import UserInfo


def keep_old(new: Obj, old: Obj, name: str) -> None:
    """`new[name]` becomes a private copy of `old[name]`. A client's update mostly sends
    the part it may not change as it was: then its own value already is that copy
    (compared as JSON text, which tells 1 from 1.0 and true, and keys' order)."""
    if name in new:
        try:
            if jsonfast.dumps(new[name]) == jsonfast.dumps(old[name]):
                return
        except (TypeError, ValueError):
            pass
    new[name] = clone(old[name])


# `ctx.lookup(resource, group, namespace, name)` -> the object or None, and
# `ctx.listing(resource, group, namespace)` -> its objects ("" namespace: all of them, or a
# cluster-scoped kind's), both read from the watch cache.
Lookup = Callable[[str, str, str, str], Any]
Listing = Callable[[str, str, str], list[Any]]
# `ctx.resource_of_kind(group, version, kind)` -> the served resource's plural, or None.
KindResolver = Callable[[str, str, str], "str | None"]


@dataclass
class Context:
    """What a strategy may know about the request."""

    gates: FeatureGates
    user: str = ""
    groups: tuple[str, ...] = ()
    dry_run: bool = False
    subresource: str = ""
    # Lets a strategy look at other objects (e.g. a namespace's labels for adminAccess).
    lookup: Lookup | None = None
    listing: Listing | None = None
    resource_of_kind: KindResolver | None = None
    # The request's version (the one its body was written in) and API verb.
    version: str = ""
    verb: str = ""
    # What strategies keep per server between requests (the same dict for every request
    # of one server), e.g. the service address reservations.
    state: dict[str, Any] = field(default_factory=dict)
    # Validation failures of unchanged values (CRD CEL rules' ratcheting), which the
    # strategy reports as warnings.
    ratcheted: list[str] = field(default_factory=list)
    # The requesting user and the apiserver's authorizer, for strategies whose rules
    # depend on what the user may do (RBAC's escalation checks, ResourceClaim status
    # authorization): `authorizer.authorize(Attributes)`, `authorizer.rules_for(user,
    # namespace)`. None outside a request.
    user_info: UserInfo | None = None
    authorizer: Any = None
    # When the CEL a validation evaluates is interrupted (time.monotonic()); set when the
    # store runs a long validation (`Strategy.long_validation`) in a CEL worker.
    cel_deadline: float | None = None


@dataclass(frozen=True)
class Column:
    """A Table column definition (meta.k8s.io/v1 TableColumnDefinition)."""

    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0  # 1 = only with `-o wide`

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


# The columns every upstream printer starts and (mostly) ends with; an AGE cell fills Age.
NAME_COLUMN = Column("Name", format="name",
                     description="Name must be unique within a namespace.")
AGE_COLUMN = Column("Age", description="CreationTimestamp is a timestamp representing the "
                    "server time when this object was created.")
# The second column of upstream's default Table (kinds without a printer).
CREATED_AT_COLUMN = Column("Created At", type="date", description=AGE_COLUMN.description)
# ObjectMeta's whole descriptions of name and creationTimestamp: custom resources' Tables
# carry them (upstream's CRD table convertor reads them from ObjectMeta's schema).
CREATION_TIMESTAMP_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is "
    "in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
    "#metadata")
OBJECT_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")


class Strategy:
    # Identity -------------------------------------------------------------------
    group: ClassVar[str] = ""  # "" for the core group
    kind: ClassVar[str]
    resource: ClassVar[str]  # plural, lower case
    singular: ClassVar[str] = ""
    short_names: ClassVar[tuple[str, ...]] = ()
    categories: ClassVar[tuple[str, ...]] = ()
    namespaced: ClassVar[bool] = True
    # Served versions, preferred first; the storage version is one of them.
    versions: ClassVar[tuple[str, ...]]
    storage_version: ClassVar[str]
    # version -> Warning header text for deprecated versions.
    deprecated_versions: ClassVar[dict[str, str]] = {}
    # version -> (first release that serves it, first release that no longer does, or
    # None): which versions an emulated release (--emulated-version) serves. Versions
    # not listed are served by every release draemu emulates.
    version_releases: ClassVar[dict[str, tuple[str, str | None]]] = {}
    # Versions no Kubernetes release draemu emulates serves, kept for old manifests and
    # served only when the apiserver is told to (APIServerOptions.legacy_versions).
    legacy_versions: ClassVar[tuple[str, ...]] = ()
    # Subresources this kind serves besides the main resource ("status", "scale", ...).
    subresources: ClassVar[frozenset[str]] = frozenset()
    verbs: ClassVar[tuple[str, ...]] = ("create", "delete", "deletecollection", "get", "list",
                                        "patch", "update", "watch")
    # Top-level fields that only the /status subresource may change.
    status_fields: ClassVar[tuple[str, ...]] = ("status",)
    # Metadata a /status (or /finalize) write may not change: upstream's
    # ResetObjectMetaForStatus, which newer kinds use; older core and apps kinds reset
    # less (a Node's status update may relabel it, a Pod's keeps only its owners).
    status_meta_reset: ClassVar[tuple[str, ...]] = ("labels", "annotations", "finalizers",
                                                    "ownerReferences")
    # Whether `metadata.generation` is kept and bumped on changes outside
    # metadata and status.
    has_generation: ClassVar[bool] = True
    # Feature gate that must be on for the kind to be served at all.
    feature_gate: ClassVar[str] = ""
    # Where objects are stored when it is not this kind's own (group, resource): two
    # kinds that are one object in two shapes (core/v1 and events.k8s.io/v1 Events)
    # share a storage key prefix. Empty: the kind's own group and resource.
    storage_group: ClassVar[str | None] = None
    storage_resource: ClassVar[str] = ""

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        """Problems with `metadata.name` (or, with `prefix`, `generateName`): pass this to
        `apiserver.registry.meta.validate_object_meta`. Most kinds use DNS subdomains."""
        return name_is_dns_subdomain(name, prefix)

    # Versions -------------------------------------------------------------------
    def default(self, obj: Obj, version: str) -> None:
        """Apply defaults to a decoded object of `version`, in place."""

    def to_storage(self, obj: Obj, version: str) -> Obj:
        """Convert an object of `version` to the storage version."""
        if version != self.storage_version:
            raise NotImplementedError(f"{self.kind}: no conversion from {version}")
        return obj

    def from_storage(self, obj: Obj, version: str) -> Obj:
        """Convert a stored object to `version` (a fresh dict; `obj` is not changed)."""
        if version != self.storage_version:
            raise NotImplementedError(f"{self.kind}: no conversion to {version}")
        return obj

    def defaults_on_read(self, version: str) -> bool:
        """Whether `from_storage` defaults objects of `version` even when they are
        stored in it (a custom resource's schema gained a default after they were
        written: upstream defaults them when it decodes them from storage)."""
        return False

    def converts_on_read(self) -> bool:
        """Whether stored objects may be of another version than the storage version
        and be converted on every read (a custom resource with a conversion webhook)."""
        return False

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    # Writes ---------------------------------------------------------------------
    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        """Called, as upstream's BeforeCreate does, once `metadata.uid`,
        `creationTimestamp` and `name` are set (a `generateName` already expanded): a Job
        labels its pod template with its name and uid here."""
        if "status" in self.status_fields and self.subresources & {"status"}:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        """A main-resource update keeps the old status when the kind has /status."""
        if "status" in self.subresources:
            for name in self.status_fields:
                if name in old:
                    keep_old(new, old, name)
                else:
                    new.pop(name, None)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        """A /status update keeps everything of the old object but status (and the
        metadata the handler manages)."""
        for name in old:
            if name in ("metadata", "apiVersion", "kind") or name in self.status_fields:
                continue
            keep_old(new, old, name)
        for name in list(new):
            if name not in old and name not in self.status_fields and name not in (
                    "metadata", "apiVersion", "kind"):
                del new[name]

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj,
                                       ctx: Context) -> None:
        """An update (PUT/PATCH) through a subresource of `subresources` that carries the
        whole object, such as Namespace's /finalize; /status goes to
        `prepare_for_status_update`."""
        if subresource != "status":
            raise ValueError(f"{self.kind} has no updatable subresource {subresource!r}")
        self.prepare_for_status_update(new, old, ctx)

    def validate_subresource_update(self, subresource: str, new: Obj, old: Obj,
                                    ctx: Context) -> list[FieldError]:
        if subresource != "status":
            raise ValueError(f"{self.kind} has no updatable subresource {subresource!r}")
        return self.validate_status_update(new, old, ctx)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return []

    def long_validation(self, ctx: Context) -> bool:
        """True when `validate*` may evaluate CEL for seconds (a custom resource's
        `x-kubernetes-validations`): the store then calls them off the event loop
        (`draemu.cel.offload`), with `ctx.cel_deadline` set."""
        return False

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self.validate(new, ctx)

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return []

    def warnings(self, obj: Obj, ctx: Context) -> list[str]:
        """Warning headers to send for an accepted write."""
        return []

    def prepare_for_delete(self, obj: Obj) -> None:
        """Called on the first delete of an object (before deletionTimestamp is set), as
        upstream's CRD registry adds its cleanup finalizer and Terminating condition."""

    # Kinds whose schema is not a published one (custom resources) -------------------
    def prune_unknown(self, obj: Obj, version: str) -> tuple[Obj, list[str]] | None:
        """The decoded request object of `version` without the fields the kind's own
        schema does not declare, and their paths (`.spec.foo`); None: the published
        schema of the kind (`draemu.openapi.schemas`) decides."""
        return None

    def schema_node(self, version: str) -> Any:
        """The kind's own schema root (a `SchemaNode`) for patches and managed fields;
        None: the published one."""
        return None

    def openapi_schema(self, version: str) -> Obj | None:
        """The kind's own OpenAPI v3 definition for the documents; None: published."""
        return None

    def scale_of(self, obj: Obj) -> Obj | None:
        """The autoscaling/v1 Scale of an object; None: `spec.replicas`, `status.replicas`
        and `spec.selector` (Deployment, ReplicaSet, ...)."""
        return None

    def set_replicas(self, obj: Obj, replicas: int) -> None:
        obj.setdefault("spec", {})["replicas"] = replicas

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        """Errors for fields an older release had and this one removed, found in a
        decoded request object of `version` BEFORE unknown fields are pruned or refused,
        so that the user is told which field replaced them (e.g. a pod's pre-1.31
        `spec.resourceClaims[].source`). The handler answers 422 with them."""
        return []

    # Reads ----------------------------------------------------------------------
    def selectable_fields_in(self, obj: Obj, version: str) -> dict[str, str]:
        """Field-selector values of a stored object as `version` serves it (a custom
        resource's selectable fields are its version's, on the object converted)."""
        return self.selectable_fields(obj)

    def selectable_field_names(self, version: str) -> set[str] | None:
        """The field-selector attributes of `version` beyond metadata's, when the kind
        names them; None: learnt from `selectable_fields` of a skeleton object."""
        return None

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        return {}

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN, AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        """Cells for `table_columns`; the handler renders "Age" cells itself when a cell
        is the `AGE` marker."""
        return [obj.get("metadata", {}).get("name", ""), AGE]

    def table_sort(self, objects: list[Obj]) -> list[Obj]:
        """The order of a list's Table rows (a few upstream printers sort them)."""
        return objects


class _Age:
    """Marker for an age cell: the handler prints the object's age from its
    creationTimestamp, as the real printers do."""

    def __repr__(self) -> str:
        return "AGE"


AGE = _Age()
