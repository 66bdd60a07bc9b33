"""Plugins are registered once (name, factory, args, default profile) and checked against
the extension points they declare when the scheduler starts: a misspelled or missing
method is an error then, not a method that never runs."""

from __future__ import annotations

import pytest
from sched_helpers import node, pod

from draemu.scheduler.config import DEFAULT_PLUGINS, load
from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PluginError,
    PostFilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    Status,
    extension_points,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo
from draemu.scheduler.plugins.registry import IN_TREE, PluginEntry
from draemu.scheduler.scheduler import Scheduler

pytestmark = pytest.mark.unit

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class OddNodes(FilterPlugin):
    """Lets pods onto nodes whose name ends in an odd digit."""

    name = "OddNodes"

    def events(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", "Add")]

    def filter(self, state: CycleState, p: dict, n: NodeInfo) -> Status:
        return SUCCESS if int(n.name[-1]) % 2 else Status.unschedulable("even node")


class Misspelled(OddNodes):
    """Means to narrow the nodes in PreFilter, but the method's name is wrong."""

    name = "Misspelled"

    def pre_filer(self, state: CycleState, p: dict) -> tuple[Status, PreFilterResult | None]:
        return SUCCESS, PreFilterResult({"n1"})


def with_plugin(plugin_class: type) -> Scheduler:
    """A scheduler whose default profile also runs the plugin (registered out of tree)."""
    registry = IN_TREE.merged([PluginEntry(plugin_class.name, lambda _a, _h: plugin_class())])
    config = load(HEAD + "profiles:\n- plugins:\n    multiPoint:\n      enabled: "
                  f"[{{name: {plugin_class.name}}}]\n", registry)
    return Scheduler(None, config=config, registry=registry)  # type: ignore[arg-type]


def test_an_out_of_tree_plugin_is_registered_and_runs():
    s = with_plugin(OddNodes)
    for name in ("n1", "n2", "n4"):
        s.cache.set_node(node(name))
    assert s.scheduling_cycle(pod("p")).node_name == "n1"


def test_a_misspelled_extension_method_is_an_error_at_start_up():
    with pytest.raises(PluginError) as e:
        with_plugin(Misspelled)
    assert str(e.value) == (
        'scheduler plugin "Misspelled" (test_sched_plugin_registry.Misspelled): '
        "'pre_filer' is no method of its extension points (FilterPlugin); did you mean "
        "'pre_filter' (PreFilterPlugin)?")


def test_a_declared_extension_point_without_its_method_is_an_error():
    class NoPreFilter(OddNodes, PreFilterPlugin):
        name = "NoPreFilter"

    with pytest.raises(PluginError, match="declares PreFilterPlugin but has no method "
                                          "'pre_filter'"):
        extension_points(NoPreFilter())


def test_an_asynchronous_point_needs_a_coroutine_function():
    class Blocking(PostFilterPlugin):
        name = "Blocking"

        def events(self) -> list[ClusterEvent]:
            return []

        def post_filter(self, state, p, statuses):  # type: ignore[override]
            return SUCCESS

    with pytest.raises(PluginError, match="'post_filter' must be a coroutine function"):
        extension_points(Blocking())


def test_a_method_with_the_wrong_arguments_is_an_error():
    class Narrow(OddNodes):
        name = "Narrow"

        def filter(self, state, p):  # type: ignore[override]
            return SUCCESS

    with pytest.raises(PluginError, match="'filter' must take 3 argument"):
        extension_points(Narrow())


def test_a_plugin_that_declares_no_extension_point_is_an_error():
    class Duck:
        name = "Duck"

        def events(self) -> list[ClusterEvent]:
            return []

        def filter(self, state, p, n):
            return SUCCESS

    with pytest.raises(PluginError, match="declares no extension point"):
        extension_points(Duck())


def test_every_in_tree_plugin_declares_its_points_correctly():
    s = Scheduler(None)  # type: ignore[arg-type]
    built = {p.name for p in s.framework.plugins}
    assert built == {e.name for e in IN_TREE if e.new is not None}
    for plugin in s.framework.plugins:
        assert extension_points(plugin)


def test_the_default_profile_is_the_registry_order():
    assert DEFAULT_PLUGINS == [(e.name, e.weight) for e in IN_TREE]


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match='"NodeName" is registered already'):
        IN_TREE.merged([PluginEntry("NodeName", lambda _a, _h: OddNodes())])


def test_a_factory_gets_its_args_and_the_handle():
    seen: list[tuple[object, Handle]] = []

    def new(args: object, handle: Handle) -> OddNodes:
        seen.append((args, handle))
        return OddNodes()

    registry = IN_TREE.merged([PluginEntry("OddNodes", new)])
    config = load(HEAD + "profiles:\n- plugins:\n    multiPoint:\n      enabled: "
                  "[{name: OddNodes}]\n", registry)
    s = Scheduler(None, config=config, registry=registry)  # type: ignore[arg-type]
    [(args, handle)] = seen
    assert args is None
    assert handle.snapshot is s.cache and handle.dra is s.dra
    assert handle.framework is s.framework
