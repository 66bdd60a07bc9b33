"""Reinvocation of the mutating phase (upstream's admission reinvocation): when a mutating
plugin changes the object after a plugin whose configuration asks to be reinvoked
(`reinvocationPolicy: IfNeeded`) ran, the whole mutating phase runs once more, and in
that second pass the mutating admission policies and webhooks call again only those of
their configurations that asked, and only if the object changed since they last saw it.

Each request carries one `ReinvocationContext` (on its admission `Attributes`); each
mutating plugin that takes part keeps its `Reinvocations` in it, under its name.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from draemu.api.types import Obj
from draemu.apiserver.wire.jsoncopy import clone


@dataclass
class Reinvocations:
    """What one plugin remembers between the passes of one request."""

    # The object as the plugin left it at the end of its last run.
    last_output: Obj | None = None
    # Configurations with `IfNeeded` run since the object last changed, and those to run
    # again in the second pass.
    previously_invoked: set[Hashable] = field(default_factory=set)
    reinvoke: set[Hashable] = field(default_factory=set)

    def output_changed(self, obj: Obj | None) -> bool:
        return obj != self.last_output

    def record_output(self, obj: Obj | None) -> None:
        self.last_output = None if obj is None else clone(obj)

    def invoked(self, key: Hashable) -> None:
        """A configuration with `IfNeeded` ran."""
        self.previously_invoked.add(key)

    def require_reinvoking_previously_invoked(self) -> None:
        """The object changed: every `IfNeeded` configuration that ran before runs again."""
        self.reinvoke |= self.previously_invoked
        self.previously_invoked = set()

    def should_reinvoke(self, key: Hashable) -> bool:
        return key in self.reinvoke


@dataclass
class ReinvocationContext:
    """The reinvocation state of one request's mutating phase."""

    is_reinvoke: bool = False  # this is the second pass
    should_reinvoke: bool = False  # a second pass is needed
    plugins: dict[str, Reinvocations] = field(default_factory=dict)

    def of(self, plugin: str) -> Reinvocations:
        return self.plugins.setdefault(plugin, Reinvocations())
