"""A profile of the configuration made into a Framework: its plugins built from the
registry by their factories, `new(args, handle)`, with its pluginConfig args (upstream's
profile.NewMap)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from draemu.scheduler.config import Profile
from draemu.scheduler.framework import Framework, PluginError
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.plugins.registry import Registry


def build_framework(profile: Profile, registry: Registry, handle: Handle, *,
                    default_args: Mapping[str, Any], percentage_of_nodes_to_score: int
                    ) -> Framework:
    """The profile's plugins in its order. A plugin's args are the profile's pluginConfig
    ones, else `default_args`' (the scheduler's own defaults), else its args type's
    defaults. PluginError for a plugin that is not what its entry says."""
    plugins = []
    for name, _weight in profile.plugins:
        entry = registry.get(name)
        if entry is None or entry.new is None:
            continue  # an upstream plugin draemu does not implement
        args = profile.args.get(name)
        if args is None:
            args = default_args.get(name)
        if args is None and entry.args is not None:
            args = entry.args()
        plugin = entry.new(args, handle)
        if getattr(plugin, "name", None) != name:
            raise PluginError(f'scheduler plugin "{name}": its factory made a plugin named '
                              f'{getattr(plugin, "name", None)!r}')
        plugins.append(plugin)
    return Framework(
        plugins, disabled=profile.disabled, enabled=profile.enabled,
        weights={name: w for name, w in profile.plugins if w},
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score
        if profile.percentage_of_nodes_to_score is not None else percentage_of_nodes_to_score)
