"""The admission chain: plugins are checked when the chain is built (a misspelled method
stops the apiserver from starting instead of never running), run mutating phase then
validating phase in the registration order, and see the apiserver's own start-up writes
as they see an HTTP client's."""

from __future__ import annotations

import pytest
from apiclient import Client

from draemu.api.errors import StatusError
from draemu.apiserver.admission.chain import (
    AdmissionChain,
    AdmissionServices,
    Attributes,
    PluginEntry,
    check_plugin,
)
from draemu.apiserver.admission.plugins import PLUGINS
from draemu.apiserver.controlplane.systemobjects import Bootstrap
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.unit


class Misspelled:
    operations = frozenset({"CREATE"})

    async def validat(self, attrs: Attributes) -> None: ...


class NoPhase:
    operations = frozenset({"CREATE"})


class NotACoroutine:
    operations = frozenset({"CREATE"})

    def validate(self, attrs: Attributes) -> None: ...


class UnknownOperation:
    operations = frozenset({"CREATE", "PATCH"})

    async def admit(self, attrs: Attributes) -> None: ...


def test_a_misspelled_method_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Misspelled: unknown method\(s\) validat"):
        check_plugin("Misspelled", Misspelled())


def test_a_plugin_without_a_phase_is_refused() -> None:
    with pytest.raises(TypeError, match="implements neither admit"):
        check_plugin("NoPhase", NoPhase())


def test_a_phase_that_is_not_a_coroutine_is_refused() -> None:
    with pytest.raises(TypeError, match="validate must be a coroutine"):
        check_plugin("NotACoroutine", NotACoroutine())


def test_an_unknown_operation_is_refused() -> None:
    with pytest.raises(TypeError, match="operations must be a frozenset"):
        check_plugin("UnknownOperation", UnknownOperation())


def test_the_built_in_plugins_run_in_upstreams_order() -> None:
    assert [entry.name for entry in PLUGINS] == [
        "NamespaceLifecycle", "NodeRestriction", "PodSecurity", "MutatingAdmissionPolicy",
        "MutatingAdmissionWebhook",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota"]


def _services(server: APIServer) -> AdmissionServices:
    assert server.api is not None
    store = server.api.store
    return AdmissionServices(store.table, store.storage, store.objects, store.authorizer)


async def test_an_apiserver_with_a_misspelled_plugin_does_not_build_its_chain(
        apiserver: APIServer) -> None:
    with pytest.raises(TypeError, match="validat"):
        AdmissionChain([*PLUGINS, PluginEntry("Misspelled", lambda _: Misspelled())],
                       _services(apiserver))


class Recorder:
    """Records each phase it sees, and labels what it admits."""

    operations = frozenset({"CREATE", "UPDATE", "DELETE"})

    def __init__(self, name: str, seen: list[tuple[str, str, str, str]]) -> None:
        self.name, self.seen = name, seen

    async def admit(self, attrs: Attributes) -> None:
        self.seen.append((self.name, "admit", attrs.operation, attrs.name))
        if attrs.obj is not None:
            attrs.obj["metadata"].setdefault("labels", {})[self.name] = "admitted"

    async def validate(self, attrs: Attributes) -> None:
        self.seen.append((self.name, "validate", attrs.operation, attrs.name))


async def test_start_up_writes_go_through_the_chain(apiserver: APIServer,
                                                    client: Client) -> None:
    seen: list[tuple[str, str, str, str]] = []
    chain = AdmissionChain([PluginEntry("first", lambda _: Recorder("first", seen)),
                            PluginEntry("second", lambda _: Recorder("second", seen))],
                           _services(apiserver))
    assert apiserver.api is not None
    base = apiserver.api.store
    store = Store(base.table, base.storage, base.gates, chain, base.authorizer)
    created = await Bootstrap(store).ensure("", "configmaps", {
        "metadata": {"name": "boot", "namespace": "default"}, "data": {"a": "b"}})
    assert seen == [("first", "admit", "CREATE", "boot"), ("second", "admit", "CREATE", "boot"),
                    ("first", "validate", "CREATE", "boot"),
                    ("second", "validate", "CREATE", "boot")]
    assert created is not None
    assert created["metadata"]["labels"] == {"first": "admitted", "second": "admitted"}
    got = (await client.get("/api/v1/namespaces/default/configmaps/boot")).json
    assert got["metadata"]["labels"] == {"first": "admitted", "second": "admitted"}


ADMISSION = "/apis/admissionregistration.k8s.io/v1"


async def test_a_policy_refuses_a_start_up_write_as_a_clients(apiserver: APIServer,
                                                              client: Client) -> None:
    policy = {"apiVersion": "admissionregistration.k8s.io/v1",
              "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-boot"},
              "spec": {"matchConstraints": {"resourceRules": [{
                  "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                  "resources": ["configmaps"]}]},
                  "validations": [{"expression": "object.metadata.name != 'boot'"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-boot"},
               "spec": {"policyName": "no-boot", "validationActions": ["Deny"]}}
    assert (await client.post(f"{ADMISSION}/validatingadmissionpolicies", policy)).status == 201
    assert (await client.post(f"{ADMISSION}/validatingadmissionpolicybindings",
                              binding)).status == 201
    assert apiserver.api is not None
    await apiserver.api.store.storage.caught_up()
    reply = await client.post("/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "boot"}})
    assert reply.status == 422, reply.json
    with pytest.raises(StatusError) as refused:
        await Bootstrap(apiserver.api.store).ensure("", "configmaps", {
            "metadata": {"name": "boot", "namespace": "default"}})
    assert refused.value.code == 422
    assert refused.value.message == reply.json["message"]
