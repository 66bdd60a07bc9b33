"""What an extension point answers: a code, the reasons and the plugin that gave them."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    # The pod does not fit now; preemption or a cluster change may help.
    UNSCHEDULABLE = 2
    # The pod does not fit and preemption cannot help (only a cluster change can).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    # The plugin has nothing to do for this pod (PreFilter): skip its later points.
    SKIP = 4


@dataclass
class Status:
    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""
    # A reason too costly to compute for every rejected node (the allocator's explanation):
    # it replaces `reasons` when first asked for, i.e. only if the pod fits no node.
    detail: Callable[[], str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def unschedulable(cls, *reasons: str, resolvable: bool = True) -> Status:
        code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return cls(code, list(reasons))

    @classmethod
    def error(cls, message: str) -> Status:
        return cls(Code.ERROR, [message])

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def resolved(self) -> list[str]:
        """The reasons, with the deferred one computed (once)."""
        if self.detail is not None:
            self.reasons = [self.detail()]
            self.detail = None
        return self.reasons

    @property
    def message(self) -> str:
        return ", ".join(self.resolved())


SUCCESS = Status()
