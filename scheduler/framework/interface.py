"""The extension points, one typed Protocol each (upstream's framework/interface.go).

A plugin is a class that names the extension points it implements as its bases:

    class NodeName(PreFilterPlugin, FilterPlugin, FilterEquivalence):
        name = "NodeName"
        def events(self) -> Iterable[ClusterEvent]: ...
        def pre_filter(self, state, pod): ...
        def filter(self, state, pod, node): ...
        def filter_equivalence(self, state, pod): ...

A type checker holds the methods to the Protocols' signatures (as upstream's
`var _ framework.FilterPlugin = &NodeName{}`); at start-up `extension_points` holds
them again, for plugins a type checker never saw: each declared point's methods must be
there, with its number of arguments, `async` where the point is asynchronous, and every
other public method must belong to a declared point. A misspelled method (`pre_filer`)
or a point not declared is a `PluginError` when the profile is built, not a method that
silently never runs.

The scheduling cycle (PreEnqueue to Reserve) is synchronous and CPU-bound; PostFilter and
the binding cycle (PreBind to PostBind) talk to the apiserver and are asynchronous.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Awaitable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from draemu.scheduler.framework.cyclestate import CycleState
from draemu.scheduler.framework.status import Status

if TYPE_CHECKING:
    from draemu.scheduler.nodeinfo import NodeInfo


@dataclass(frozen=True)
class ClusterEvent:
    """A change in the cluster that may make an unschedulable pod schedulable."""

    resource: str  # "Node", "Pod", "ResourceClaim", "ResourceSlice", "DeviceClass", ...
    action: str  # "Add", "Update", "Delete"

    def __str__(self) -> str:
        return f"{self.resource}{self.action}"


@dataclass
class PreFilterResult:
    """Restricts the nodes Filter has to look at (None = all nodes)."""

    node_names: set[str] | None = None


class PluginError(ValueError):
    """A plugin that does not implement its extension points as they are declared."""


class Plugin(Protocol):
    """What every plugin has: its name and the cluster events that may make a pod it
    rejected schedulable (upstream's EventsToRegister)."""

    name: str

    def events(self) -> Iterable[ClusterEvent]: ...


class QueueingHintPlugin(Plugin, Protocol):
    """For one event and one waiting pod the plugin rejected: may the event make the pod
    schedulable (upstream's QueueingHintFn; False is QueueSkip)?"""

    def queueing_hint(self, event: ClusterEvent, pod: dict, old: dict | None,
                      new: dict | None) -> bool: ...


class PreEnqueuePlugin(Plugin, Protocol):
    """Whether the pod may be tried at all; a rejected pod waits for a cluster event."""

    def pre_enqueue(self, pod: dict) -> Status: ...


class PreFilterPlugin(Plugin, Protocol):
    """Once per attempt: reject the pod, Skip (nothing to check), or narrow the nodes."""

    def pre_filter(self, state: CycleState, pod: dict
                   ) -> tuple[Status, PreFilterResult | None]: ...


class FilterPlugin(Plugin, Protocol):
    """Per node: does the pod fit? (The hottest call of the scheduler.)"""

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status: ...


class FilterEquivalence(FilterPlugin, Protocol):
    """For Filter verdicts kept across cycles (Framework.find_feasible): the verdict
    depends only on the pod's spec (`scheduling_view`), the returned token, the node's
    NodeInfo (its generation) and the node's entry in the returned versions mapping
    (None: no such mapping). None for this cycle when it depends on more. A Filter plugin
    without it is never answered from kept verdicts."""

    def filter_equivalence(self, state: CycleState, pod: dict
                           ) -> tuple[Hashable, Mapping[str, int] | None] | None: ...


class PostFilterPlugin(Plugin, Protocol):
    """No node fits: the plugin may change the cluster so that a later attempt fits."""

    async def post_filter(self, state: CycleState, pod: dict,
                          statuses: dict[str, Status]) -> Status: ...


class ScorePlugin(Plugin, Protocol):
    """Per feasible node, a score; summed over plugins with their weights."""

    weight: int = 1  # the default profile's weight (the configuration may set another)
    # Score depends only on the pod's spec and the node's NodeInfo (PreScore state derived
    # from the spec is fine): scores are kept per spec and node generation.
    node_local_score: bool = False

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int: ...


class PreScorePlugin(ScorePlugin, Protocol):
    """Before Score, with the feasible nodes; True skips the plugin's Score for the pod
    (upstream's PreScore answering Skip)."""

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool: ...


class ScoreExtensions(ScorePlugin, Protocol):
    """Scales the scores of all nodes to 0..100 (upstream's NormalizeScore)."""

    def normalize_scores(self, scores: dict[str, int]) -> None: ...


class ScoreEquivalence(ScorePlugin, Protocol):
    """Score depends only on the pod's spec, the returned token and the node's NodeInfo
    this cycle (scores kept as for `node_local_score`); None when on more."""

    def score_equivalence(self, state: CycleState, pod: dict) -> Hashable | None: ...


class ReservePlugin(Plugin, Protocol):
    """Reserve on the chosen node, in memory; Unreserve undoes it (idempotent) and may
    return the API writes that undo PreBind's, for the caller to await."""

    def reserve(self, state: CycleState, pod: dict, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: dict, node_name: str
                  ) -> Awaitable[None] | None: ...


class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: dict, node_name: str) -> Status: ...


class BindPlugin(Plugin, Protocol):
    """Binds the pod, or answers Skip for the next Bind plugin to do it."""

    async def bind(self, state: CycleState, pod: dict, node_name: str) -> Status: ...


class PostBindPlugin(Plugin, Protocol):
    async def post_bind(self, state: CycleState, pod: dict, node_name: str) -> None: ...


# Each extension Protocol, with its methods: (name, arguments after self, asynchronous).
EXTENSIONS: dict[type, tuple[tuple[str, int, bool], ...]] = {
    QueueingHintPlugin: (("queueing_hint", 4, False),),
    PreEnqueuePlugin: (("pre_enqueue", 1, False),),
    PreFilterPlugin: (("pre_filter", 2, False),),
    FilterPlugin: (("filter", 3, False),),
    FilterEquivalence: (("filter_equivalence", 2, False),),
    PostFilterPlugin: (("post_filter", 3, True),),
    ScorePlugin: (("score", 3, False),),
    PreScorePlugin: (("pre_score", 3, False),),
    ScoreExtensions: (("normalize_scores", 1, False),),
    ScoreEquivalence: (("score_equivalence", 2, False),),
    ReservePlugin: (("reserve", 3, False), ("unreserve", 3, False)),
    PreBindPlugin: (("pre_bind", 3, True),),
    BindPlugin: (("bind", 3, True),),
    PostBindPlugin: (("post_bind", 3, True),),
}
_BASE_METHODS = (("events", 0, False),)


def extension_points(plugin: object) -> frozenset[type]:
    """The extension Protocols the plugin declares (its bases), once its methods are
    checked against them; PluginError says what is wrong."""
    cls = type(plugin)
    name = getattr(plugin, "name", None)
    if not isinstance(name, str) or not name:
        raise PluginError(f"scheduler plugin {cls.__qualname__}: no name (a `name` string)")
    what = f'scheduler plugin "{name}" ({cls.__module__}.{cls.__qualname__})'
    declared = frozenset(base for base in cls.__mro__ if base in EXTENSIONS)
    if not declared:
        raise PluginError(f"{what}: declares no extension point; subclass those it "
                          f"implements ({', '.join(p.__name__ for p in EXTENSIONS)})")
    methods = {spec[0]: spec for point in declared for spec in EXTENSIONS[point]}
    methods.update({spec[0]: spec for spec in _BASE_METHODS})
    for method, count, asynchronous in methods.values():
        _check_method(what, cls, method, count, asynchronous)
    for attr in dir(cls):
        if not attr.startswith("_") and attr not in methods and _is_method(cls, attr):
            raise PluginError(f"{what}: {attr!r} is no method of its extension points "
                              f"({', '.join(sorted(p.__name__ for p in declared))})"
                              + _suggestion(attr))
    if PreScorePlugin in declared and ScorePlugin not in declared:
        raise PluginError(f"{what}: PreScorePlugin without ScorePlugin")
    return declared


def _check_method(what: str, cls: type, method: str, count: int, asynchronous: bool) -> None:
    owner = next((c for c in cls.__mro__ if method in vars(c)), None)
    if owner is None or owner in EXTENSIONS or owner is Plugin:
        point = next((p.__name__ for p, specs in EXTENSIONS.items()
                      if any(s[0] == method for s in specs)), "Plugin")
        raise PluginError(f"{what}: declares {point} but has no method {method!r}")
    function = inspect.getattr_static(cls, method)
    receivers = 1  # self (or cls)
    if isinstance(function, staticmethod):
        function, receivers = function.__func__, 0
    elif isinstance(function, classmethod):
        function = function.__func__
    if not inspect.isfunction(function):
        raise PluginError(f"{what}: {method!r} is not a method")
    if inspect.iscoroutinefunction(function) != asynchronous:
        kind = "a coroutine function (async def)" if asynchronous else "a plain function"
        raise PluginError(f"{what}: {method!r} must be {kind}")
    try:
        inspect.signature(function).bind(*range(count + receivers))
    except TypeError:
        raise PluginError(f"{what}: {method!r} must take {count} argument(s) after self") \
            from None


def _is_method(cls: type, attr: str) -> bool:
    value = inspect.getattr_static(cls, attr)
    return inspect.isfunction(value) or isinstance(value, staticmethod | classmethod)


def _suggestion(attr: str) -> str:
    known = [spec[0] for specs in EXTENSIONS.values() for spec in specs]
    close = difflib.get_close_matches(attr, known, n=1)
    if not close:
        return ""
    point = next(p.__name__ for p, specs in EXTENSIONS.items()
                 if any(s[0] == close[0] for s in specs))
    return f"; did you mean {close[0]!r} ({point})?"
