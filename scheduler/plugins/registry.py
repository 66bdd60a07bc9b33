"""Every scheduler plugin, one entry each (upstream's in-tree registry with the default
profile of v1.37): its name, its factory `new(args, handle)`, the type of its
`pluginConfig` args (parsed and validated by the configuration) and its place and weight
in the default profile. Adding a plugin is adding its module and its entry here;
`Scheduler(registry=...)` takes a registry with plugins of one's own (out-of-tree).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from draemu.scheduler.framework.handle import Factory
from draemu.scheduler.pluginargs import (
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PluginArgs,
    PodTopologySpreadArgs,
)
from draemu.scheduler.plugins import (
    defaultbinder,
    defaultpreemption,
    dynamicresources,
    interpodaffinity,
    nodeaffinity,
    nodename,
    nodeports,
    noderesources,
    nodeunschedulable,
    podtopologyspread,
    schedulinggates,
    tainttoleration,
)


@dataclass(frozen=True)
class PluginEntry:
    name: str
    # None: an upstream plugin draemu does not implement; configurations may name it, to
    # no effect.
    new: Factory | None
    args: type[PluginArgs] | None = None  # its pluginConfig args; None: it takes none
    weight: int = 0  # its Score weight in the default profile (0: none, or its own)
    default: bool = True  # in the default profile (in registry order)


class Registry:
    def __init__(self, entries: Iterable[PluginEntry] = ()) -> None:
        self._entries: dict[str, PluginEntry] = {}
        for entry in entries:
            self.register(entry)

    def register(self, entry: PluginEntry) -> None:
        if entry.name in self._entries:
            raise ValueError(f'scheduler plugin "{entry.name}" is registered already')
        self._entries[entry.name] = entry

    def merged(self, other: Iterable[PluginEntry]) -> Registry:
        """This registry with more plugins (upstream's WithPlugin for out-of-tree ones)."""
        return Registry([*self, *other])

    def get(self, name: str) -> PluginEntry | None:
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[PluginEntry]:
        return iter(self._entries.values())

    def default_plugins(self) -> list[tuple[str, int]]:
        """The default profile: names in order, with their weights."""
        return [(e.name, e.weight) for e in self if e.default]


IN_TREE = Registry([
    PluginEntry("SchedulingGates", schedulinggates.new),
    PluginEntry("PrioritySort", None),
    PluginEntry("NodeUnschedulable", nodeunschedulable.new),
    PluginEntry("NodeName", nodename.new),
    PluginEntry("TaintToleration", tainttoleration.new, weight=3),
    PluginEntry("NodeAffinity", nodeaffinity.new, weight=2),
    PluginEntry("NodePorts", nodeports.new),
    PluginEntry("NodeResourcesFit", noderesources.new_fit, NodeResourcesFitArgs, weight=1),
    PluginEntry("VolumeRestrictions", None),
    PluginEntry("NodeVolumeLimits", None),
    PluginEntry("VolumeBinding", None),
    PluginEntry("VolumeZone", None),
    PluginEntry("PodTopologySpread", podtopologyspread.new, PodTopologySpreadArgs, weight=2),
    PluginEntry("InterPodAffinity", interpodaffinity.new, InterPodAffinityArgs, weight=2),
    PluginEntry("DynamicResources", dynamicresources.new, DynamicResourcesArgs),
    PluginEntry("DefaultPreemption", defaultpreemption.new),
    PluginEntry("NodeResourcesBalancedAllocation", noderesources.new_balanced_allocation,
                NodeResourcesBalancedAllocationArgs, weight=1),
    PluginEntry("ImageLocality", None, weight=1),
    PluginEntry("DefaultBinder", defaultbinder.new),
])
