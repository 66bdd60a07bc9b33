"""The scheduling framework, shaped as kube-scheduler's: statuses (`status`), the cycle
state (`cyclestate`), one typed Protocol per extension point (`interface`), the handle
through which plugins reach the scheduler's caches, informers, client and DRA manager
(`handle`), and the runner of one profile's plugins (`runtime`).
"""

from draemu.scheduler.framework.cyclestate import CycleState, scheduling_view
from draemu.scheduler.framework.interface import (
    BindPlugin,
    ClusterEvent,
    FilterEquivalence,
    FilterPlugin,
    Plugin,
    PluginError,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHintPlugin,
    ReservePlugin,
    ScoreEquivalence,
    ScoreExtensions,
    ScorePlugin,
    extension_points,
)
from draemu.scheduler.framework.runtime import MAX_KEPT_SPECS, Framework
from draemu.scheduler.framework.status import SUCCESS, Code, Status

__all__ = [
    "MAX_KEPT_SPECS", "SUCCESS", "BindPlugin", "ClusterEvent", "Code", "CycleState",
    "FilterEquivalence", "FilterPlugin", "Framework", "Plugin", "PluginError",
    "PostBindPlugin", "PostFilterPlugin", "PreBindPlugin", "PreEnqueuePlugin",
    "PreFilterPlugin", "PreFilterResult", "PreScorePlugin", "QueueingHintPlugin",
    "ReservePlugin", "ScoreEquivalence", "ScoreExtensions", "ScorePlugin", "Status",
    "extension_points", "scheduling_view",
]
