"""apps/v1 DaemonSet (+status): one pod per eligible node, run by the daemonset
controller. The template generation lives in the `deprecated.daemonset.template.generation`
annotation, bumped on every template change, as upstream's strategy does."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, forbidden, invalid, not_supported, required
from draemu.apiserver.registry.apps.common import int_or_percent_value, validate_int_or_percent
from draemu.apiserver.registry.apps.replicaset import template_cells
from draemu.apiserver.registry.core.common import immutable, nonnegative
from draemu.apiserver.registry.core.labelselector import (
    convertible,
    is_empty,
    matches,
    validate_label_selector,
)
from draemu.apiserver.registry.core.podspec_defaults import default_pod_template
from draemu.apiserver.registry.core.podtemplate import (
    obsolete_template_field_errors,
    validate_pod_template,
)
from draemu.apiserver.registry.core.service import format_labels
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.strategy import Column, Context, Obj

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
STRATEGY_TYPES = ["OnDelete", "RollingUpdate"]


def _status(name: str):  # a cell
    return lambda o: get_path(o, f"status.{name}") or 0


def _not_over_100(value: object, path: Path) -> list[FieldError]:
    if isinstance(value, str) and int_or_percent_value(value) > 100:
        return [invalid(path, value, "must not be greater than 100%")]
    return []


def _rolling_update_errors(rolling: Obj, path: Path) -> list[FieldError]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs: list[FieldError] = []
    for name, value in (("maxUnavailable", unavailable), ("maxSurge", surge)):
        if value is not None:
            errs += validate_int_or_percent(value, path.child(name))
            errs += _not_over_100(value, path.child(name))
    has_unavailable = int_or_percent_value(unavailable) != 0
    has_surge = int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        errs.append(invalid(path.child("maxSurge"), surge,
                            "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        errs.append(required(path.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
    return errs


class DaemonSetStrategy(GenericStrategy):
    group = "apps"
    kind = "DaemonSet"
    resource = "daemonsets"
    singular = "daemonset"
    short_names = ("ds",)
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    status_meta_reset = ()
    printer = (
        NAME,
        Printed(Column("Desired", type="integer", description="The total number of nodes "
                       "that should be running the daemon pod."),
                _status("desiredNumberScheduled")),
        Printed(Column("Current", type="integer", description="The number of nodes that are "
                       "running at least 1 daemon pod and are supposed to run the daemon "
                       "pod."), _status("currentNumberScheduled")),
        Printed(Column("Ready", type="integer", description="numberReady is the number of "
                       "nodes that should be running the daemon pod and have one or more of "
                       "the daemon pod running with a Ready Condition."),
                _status("numberReady")),
        Printed(Column("Up-to-date", type="integer", description="The total number of nodes "
                       "that are running updated daemon pod"),
                _status("updatedNumberScheduled")),
        Printed(Column("Available", type="integer", description="The number of nodes that "
                       "should be running the daemon pod and have one or more of the daemon "
                       "pod running and available (ready for at least spec.minReadySeconds)"),
                _status("numberAvailable")),
        Printed(Column("Node Selector", description="NodeSelector is a selector which must be "
                       "true for the pod to fit on a node."),
                lambda o: format_labels(get_path(o, "spec.template.spec.nodeSelector"))),
        AGE_COLUMN,
        Printed(Column("Containers", priority=1, description="Names of each container in the "
                       "template."), lambda o: template_cells(o)[0]),
        Printed(Column("Images", priority=1, description="Images referenced by each container "
                       "in the template."), lambda o: template_cells(o)[1]),
        Printed(Column("Selector", priority=1, description="A label query over pods that are "
                       "managed by the daemon set."), lambda o: template_cells(o)[2]),
    )

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        strategy = spec.setdefault("updateStrategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.get("rollingUpdate")
                if rolling is None:
                    rolling = strategy["rollingUpdate"] = {}
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("maxSurge", 0)
        spec.setdefault("revisionHistoryLimit", 10)
        default_pod_template(spec.get("template"), self.kind, version)

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        return obsolete_template_field_errors(obj)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                         "desiredNumberScheduled": 0, "numberReady": 0}
        obj["metadata"].setdefault("annotations", {})[TEMPLATE_GENERATION] = "1"

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        before = ((old.get("metadata") or {}).get("annotations") or {}).get(
            TEMPLATE_GENERATION, "0")
        generation = int(before) if before.isdigit() else 0
        if get_path(new, "spec.template") != get_path(old, "spec.template"):
            generation += 1
        new["metadata"].setdefault("annotations", {})[TEMPLATE_GENERATION] = str(generation)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        selector = spec.get("selector")
        errs = validate_label_selector(selector, path.child("selector"))
        labels = get_path(spec, "template.metadata.labels") or {}
        if convertible(selector) and (selector is None or not matches(selector, labels)):
            errs.append(invalid(path.child("template", "metadata", "labels"), labels,
                                "`selector` does not match template `labels`"))
        if selector is not None and is_empty(selector):
            errs.append(invalid(path.child("selector"), selector,
                                "empty selector is invalid for daemonset"))
        template = spec.get("template")
        if template is None:
            errs.append(required(path.child("template")))
        else:
            errs += validate_pod_template(template, path.child("template"))
        restart = get_path(spec, "template.spec.restartPolicy") or ""
        if restart != "Always":
            errs.append(not_supported(path.child("template", "spec", "restartPolicy"), restart,
                                      ["Always"]))
        if get_path(spec, "template.spec.activeDeadlineSeconds") is not None:
            errs.append(forbidden(path.child("template", "spec", "activeDeadlineSeconds"),
                                  "activeDeadlineSeconds in DaemonSet is not Supported"))
        errs += nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
        errs += nonnegative(spec.get("revisionHistoryLimit"),
                            path.child("revisionHistoryLimit"))
        strategy = spec.get("updateStrategy") or {}
        kind = strategy.get("type")
        strategy_path = path.child("updateStrategy")
        if kind == "RollingUpdate":
            if strategy.get("rollingUpdate") is None:
                errs.append(required(strategy_path.child("rollingUpdate")))
            else:
                errs += _rolling_update_errors(strategy["rollingUpdate"],
                                               strategy_path.child("rollingUpdate"))
        elif kind != "OnDelete":
            errs.append(not_supported(strategy_path, strategy, STRATEGY_TYPES))
        return errs

    def validate_object_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return immutable(get_path(new, "spec.selector"), get_path(old, "spec.selector"),
                         Path("spec").child("selector"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status = new.get("status") or {}
        path = Path("status")
        errs: list[FieldError] = []
        for name in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
                     "numberReady", "observedGeneration", "updatedNumberScheduled",
                     "numberAvailable", "numberUnavailable", "collisionCount"):
            errs += nonnegative(status.get(name), path.child(name))
        before = get_path(old, "status.collisionCount")
        if before is not None and (status.get("collisionCount") or 0) < before:
            errs.append(invalid(path.child("collisionCount"), status.get("collisionCount") or 0,
                                "cannot be decremented"))
        return errs



STRATEGIES = [DaemonSetStrategy()]
