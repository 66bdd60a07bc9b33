"""The admission plugins, in the order kube-apiserver runs them (its
`AllOrderedPlugins`, less the plugins draemu does not have): the one place where a
plugin is named and built. Each entry's factory gets the `AdmissionServices`; the chain
runs every plugin's `admit` (mutating phase) in this order, then every plugin's
`validate` (validating phase) in this order.

Upstream's ServiceAccount, Priority, DefaultTolerationSeconds and LimitRanger additions
are the pod and limit-range strategies' (`prepare_for_create`), after the mutating
phase.
"""

from __future__ import annotations

import copy

from draemu.apiserver.admission.chain import AdmissionServices, Attributes, PluginEntry
from draemu.apiserver.admission.mutating import BINDINGS as MUTATING_BINDINGS
from draemu.apiserver.admission.mutating import MutatingAdmission
from draemu.apiserver.admission.namespacelifecycle import NamespaceLifecycle
from draemu.apiserver.admission.noderestriction import NodeRestriction
from draemu.apiserver.admission.podsecurity.plugin import PodSecurity
from draemu.apiserver.admission.policies import BINDINGS, GROUP, ValidatingAdmission
from draemu.apiserver.admission.quotaadmission import ResourceQuota
from draemu.apiserver.admission.webhooks import Webhooks
from draemu.cel.offload import run_off_loop, through_loop


class ValidatingAdmissionPolicy:
    """ValidatingAdmissionPolicies and their bindings (`policies.py`)."""

    operations = frozenset({"CREATE", "UPDATE", "DELETE"})

    def __init__(self, services: AdmissionServices) -> None:
        self.policies = ValidatingAdmission(services.table, services.storage.cache,
                                            services.authorizer)
        self.cache = services.storage.cache
        self.bindings = services.table.by_group_resource(GROUP, BINDINGS)

    async def validate(self, attrs: Attributes) -> None:
        if self.bindings is None or not self.cache.list(self.bindings.prefix):
            return  # no policy is bound: nothing to evaluate (most writes)
        r, request = attrs.resource, attrs.request
        plan = self.policies.plan(
            operation=attrs.operation, group=r.group, version=request.version, resource=r.name,
            subresource=attrs.subresource, kind=r.kind, namespaced=r.namespaced,
            namespace=attrs.namespace, name=attrs.name, obj=attrs.served(attrs.obj),
            old=attrs.served(attrs.old), user=attrs.user, dry_run=attrs.dry_run,
            warnings=request.warnings, audit=request.audit)
        if plan is None:
            return
        # The CEL off the event loop: a policy may cost seconds within its budget.
        authorize = through_loop(self.policies.authorize)
        await run_off_loop(lambda deadline: self.policies.decide(plan, deadline, authorize))


class MutatingAdmissionPolicy:
    """MutatingAdmissionPolicies and their bindings (`mutating.py`), on creates and
    updates, when the MutatingAdmissionPolicy gate is on."""

    operations = frozenset({"CREATE", "UPDATE"})

    def __init__(self, services: AdmissionServices) -> None:
        self.policies = MutatingAdmission(services.table, services.storage.cache,
                                          services.authorizer)
        self.cache = services.storage.cache
        self.bindings = services.table.by_group_resource(GROUP, MUTATING_BINDINGS) \
            if services.gates.enabled("MutatingAdmissionPolicy") else None

    async def admit(self, attrs: Attributes) -> None:
        if attrs.obj is None or self.bindings is None or \
                not self.cache.list(self.bindings.prefix):
            return  # no policy is bound: nothing to apply (most writes)
        served = attrs.served(attrs.obj)
        assert served is not None
        plan = self.policies.plan(
            req=attrs.matching(), obj=served, old=attrs.served(attrs.old), user=attrs.user,
            dry_run=attrs.dry_run, resource=attrs.resource, version=attrs.request.version)
        if plan is None:
            return
        authorize = through_loop(self.policies.checks.authorize)
        reinvocation = attrs.reinvocation
        mutated = await run_off_loop(lambda deadline: self.policies.mutate(
            plan, served, reinvocation, deadline, authorize))
        if mutated is not served:
            attrs.obj = attrs.resource.strategy.to_storage(mutated, attrs.request.version)


class MutatingAdmissionWebhook:
    """MutatingWebhookConfigurations' webhooks (`webhooks.py`), on creates and updates."""

    operations = frozenset({"CREATE", "UPDATE"})

    def __init__(self, services: AdmissionServices) -> None:
        self.webhooks = Webhooks(services.table, services.storage.cache, services.dialer)

    async def admit(self, attrs: Attributes) -> None:
        r, obj = attrs.resource, attrs.obj
        if obj is None or not self.webhooks.has_any(r.group, r.name):
            return
        served = attrs.served(obj)
        assert served is not None
        mutated = await self.webhooks.mutate(attrs.matching(), served, attrs.served(attrs.old),
                                             attrs.user, attrs.dry_run, attrs.request.warnings,
                                             attrs.reinvocation)
        if mutated is not served:
            # The patched object is decoded and defaulted again, as upstream's mutating
            # dispatcher does with each webhook's result (a custom resource's decoding
            # prunes the fields its schema does not declare).
            pruned = r.strategy.prune_unknown(copy.deepcopy(mutated), attrs.request.version)
            if pruned is not None:
                mutated = pruned[0]
            r.strategy.default(mutated, attrs.request.version)
            attrs.obj = r.strategy.to_storage(mutated, attrs.request.version)

    async def close(self) -> None:
        await self.webhooks.close()


class ValidatingAdmissionWebhook:
    """ValidatingWebhookConfigurations' webhooks (`webhooks.py`), called together; also on
    CONNECTs (pods/attach), as upstream's webhooks handle every operation."""

    operations = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

    def __init__(self, services: AdmissionServices) -> None:
        self.webhooks = Webhooks(services.table, services.storage.cache, services.dialer)

    async def validate(self, attrs: Attributes) -> None:
        r = attrs.resource
        if not self.webhooks.has_any(r.group, r.name):
            return
        await self.webhooks.validate(attrs.matching(), attrs.served(attrs.obj),
                                     attrs.served(attrs.old), attrs.user, attrs.dry_run,
                                     attrs.request.warnings)

    async def close(self) -> None:
        await self.webhooks.close()


PLUGINS: list[PluginEntry] = [
    PluginEntry("NamespaceLifecycle", NamespaceLifecycle),
    PluginEntry("NodeRestriction", NodeRestriction),
    PluginEntry("PodSecurity", PodSecurity),
    PluginEntry("MutatingAdmissionPolicy", MutatingAdmissionPolicy),
    PluginEntry("MutatingAdmissionWebhook", MutatingAdmissionWebhook),
    PluginEntry("ValidatingAdmissionPolicy", ValidatingAdmissionPolicy),
    PluginEntry("ValidatingAdmissionWebhook", ValidatingAdmissionWebhook),
    PluginEntry("ResourceQuota", ResourceQuota),
]
