"""The admission chain every write goes through, the HTTP handlers' and the apiserver's
own start-up writers' alike (`genericregistry.Store` calls it), as kube-apiserver's:

- the mutating phase (`admit`) runs before the strategy prepares and validates the
  object: each plugin may refuse the request or replace `attrs.obj`; it runs a second
  time when a plugin asks (`admission/reinvocation.py`);
- the validating phase (`validate`) runs after the strategy's validation, on the object
  that would be stored: each plugin may only refuse it.

A plugin is an object with `operations` (the ones it looks at) and `admit(attrs)`,
`validate(attrs)` or both (coroutines); `close()` when it holds connections. Plugins are
named, built and ordered in one place, `admission/plugins.py`; a plugin whose methods
are not these is refused when the chain is built (the apiserver does not start).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from draemu.api.types import Obj
from draemu.apiserver.admission.matching import Request
from draemu.apiserver.admission.reinvocation import ReinvocationContext
from draemu.apiserver.auth.authorization import Authorizer
from draemu.apiserver.registry.request import RequestContext
from draemu.apiserver.registry.resources import Resource, ResourceTable
from draemu.apiserver.storage.cachedobjects import CachedObjects
from draemu.apiserver.storage.storeadapter import Storage
from draemu.features import FeatureGates
from draemu.identity import UserInfo

if TYPE_CHECKING:
    from draemu.netns import NetnsDialer

OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


@dataclass(eq=False, slots=True)
class Attributes:
    """One write as admission sees it (upstream's admission.Attributes). Objects are in
    the storage version; `served` gives them in the request's."""

    operation: str
    request: RequestContext
    # The object written (None on DELETE), and the stored one (None on CREATE).
    obj: Obj | None
    old: Obj | None
    dry_run: bool
    subresource: str
    # The mutating phase's reinvocation state (`admission/reinvocation.py`).
    reinvocation: ReinvocationContext = field(default_factory=ReinvocationContext)

    @property
    def resource(self) -> Resource:
        return self.request.resource

    @property
    def user(self) -> UserInfo:
        return self.request.user

    @property
    def namespace(self) -> str:
        return self.request.namespace

    @property
    def name(self) -> str:
        meta = (self.obj or self.old or {}).get("metadata") or {}
        return meta.get("name") or self.request.name

    def served(self, obj: Obj | None) -> Obj | None:
        """`obj` in the request's version."""
        return None if obj is None else self.request.out(obj)

    def matching(self) -> Request:
        """What policies and webhooks match rules against."""
        r = self.resource
        return Request(self.operation, r.group, self.request.version, r.name,
                       self.subresource, r.kind, self.namespace, self.name, r.namespaced)


@runtime_checkable
class MutatingPlugin(Protocol):
    operations: frozenset[str]

    async def admit(self, attrs: Attributes) -> None: ...


@runtime_checkable
class ValidatingPlugin(Protocol):
    operations: frozenset[str]

    async def validate(self, attrs: Attributes) -> None: ...


@dataclass(frozen=True)
class AdmissionServices:
    """What a plugin's factory may use."""

    table: ResourceTable
    storage: Storage
    objects: CachedObjects
    authorizer: Authorizer
    # The apiserver's feature gates and emulated release.
    gates: FeatureGates = field(default_factory=FeatureGates)
    # Where webhooks on the pod network are dialled from (None: this namespace).
    dialer: NetnsDialer | None = None


@dataclass(frozen=True)
class PluginEntry:
    name: str
    factory: Callable[[AdmissionServices], Any]


# What a plugin may have besides private members.
_INTERFACE = frozenset({"operations", "admit", "validate", "close"})


def check_plugin(name: str, plugin: Any) -> None:
    """Refuse a plugin that would silently never run (or run other than asked): one
    with neither `admit` nor `validate`, a public method of another name (a misspelled
    one), a phase method that is not a coroutine, or an unknown operation."""
    unknown = sorted(a for a, member in inspect.getmembers(type(plugin))
                     if not a.startswith("_") and a not in _INTERFACE and callable(member))
    if unknown:
        raise TypeError(f"admission plugin {name}: unknown method(s) {', '.join(unknown)} "
                        "(a plugin has admit(attrs), validate(attrs) and close())")
    phases = [m for m in ("admit", "validate", "close") if hasattr(plugin, m)]
    if not {"admit", "validate"} & set(phases):
        raise TypeError(f"admission plugin {name}: implements neither admit(attrs) nor "
                        "validate(attrs)")
    for method in phases:
        if not inspect.iscoroutinefunction(getattr(plugin, method)):
            raise TypeError(f"admission plugin {name}: {method} must be a coroutine (async)")
    operations = getattr(plugin, "operations", None)
    if not isinstance(operations, frozenset) or not operations <= OPERATIONS:
        raise TypeError(f"admission plugin {name}: operations must be a frozenset of "
                        f"{', '.join(sorted(OPERATIONS))}, not {operations!r}")


class AdmissionChain:
    def __init__(self, entries: Sequence[PluginEntry], services: AdmissionServices) -> None:
        self.plugins: list[tuple[str, Any]] = []
        for entry in entries:
            plugin = entry.factory(services)
            check_plugin(entry.name, plugin)
            self.plugins.append((entry.name, plugin))
        # Operation -> the plugins of each phase that look at it, in order.
        self._mutating = {op: [p for _, p in self.plugins if isinstance(p, MutatingPlugin)
                               and op in p.operations] for op in OPERATIONS}
        self._validating = {op: [p for _, p in self.plugins if isinstance(p, ValidatingPlugin)
                                 and op in p.operations] for op in OPERATIONS}

    async def admit(self, attrs: Attributes) -> None:
        """The mutating phase: refuses (raises a StatusError) or replaces `attrs.obj`.
        Run a second time, once, when a plugin asks for it (upstream's reinvocation: an
        object changed after a policy or webhook that wants to see the final one)."""
        for plugin in self._mutating[attrs.operation]:
            await plugin.admit(attrs)
        if attrs.reinvocation.should_reinvoke:
            attrs.reinvocation.is_reinvoke = True
            for plugin in self._mutating[attrs.operation]:
                await plugin.admit(attrs)

    async def validate(self, attrs: Attributes) -> None:
        """The validating phase: refuses (raises a StatusError)."""
        for plugin in self._validating[attrs.operation]:
            await plugin.validate(attrs)

    async def close(self) -> None:
        for _name, plugin in self.plugins:
            close = getattr(plugin, "close", None)
            if close is not None:
                await close()
