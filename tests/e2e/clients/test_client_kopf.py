"""A kopf operator (examples/operator/claim_annotator.py) run with `kopf run` as a child
process against draemu: its ResourceClaim handlers act on creation and on allocation, and
the events it posts reach the API."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("kopf", reason="kopf is not installed (test extra)")

from client_claims import allocation, claim
from kubernetes import client, config, watch

from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.e2e

NS = "default"
OPERATOR = Path(__file__).parents[3] / "examples" / "operator" / "claim_annotator.py"
CLASSES = "dra.example.com/device-classes"
DEVICES = "dra.example.com/allocated-devices"
Claim = client.ResourceV1ResourceClaim


@pytest.fixture(scope="module")
def resource(module_apiserver: APIServer) -> Iterator[client.ResourceV1Api]:
    api = config.new_client_from_config(str(module_apiserver.kubeconfig_path))
    yield client.ResourceV1Api(api)
    api.close()


@pytest.fixture(scope="module")
def operator(module_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Path]:
    """`kopf run` in a child process; yields the file it logs to."""
    log = tmp_path_factory.mktemp("kopf") / "kopf.log"
    env = {**os.environ, "KUBECONFIG": str(module_apiserver.kubeconfig_path)}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces",
             "--verbose", str(OPERATOR)],
            env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for_claim(resource: client.ResourceV1Api, name: str, done: Callable[[Claim], bool],
                   log: Path, timeout: int = 30) -> Claim:
    """The claim once `done(claim)` holds: read it, then watch it from that revision."""
    current = resource.read_namespaced_resource_claim(name, NS)
    if done(current):
        return current
    # The typed watch needs the return_type workaround (see test_client_kubernetes.py).
    w = watch.Watch(return_type="ResourceV1ResourceClaim")
    for event in w.stream(resource.list_namespaced_resource_claim, NS,
                          field_selector=f"metadata.name={name}",
                          resource_version=current.metadata.resource_version,
                          timeout_seconds=timeout):
        if done(event["object"]):
            w.stop()
            return event["object"]
    raise AssertionError(f"claim {name} never got there; kopf said:\n{log.read_text()[-3000:]}")


def _annotation(key: str) -> Callable[[Claim], bool]:
    return lambda c: bool((c.metadata.annotations or {}).get(key))


def test_create_handler_annotates_the_requested_classes(
        resource: client.ResourceV1Api, operator: Path) -> None:
    resource.create_namespaced_resource_claim(NS, claim("kopf-create"))
    annotated = wait_for_claim(resource, "kopf-create", _annotation(CLASSES), operator)
    assert annotated.metadata.annotations[CLASSES] == "gpu.example.com"


def test_field_handler_annotates_the_allocated_devices(
        resource: client.ResourceV1Api, operator: Path) -> None:
    resource.create_namespaced_resource_claim(NS, claim("kopf-alloc"))
    wait_for_claim(resource, "kopf-alloc", _annotation(CLASSES), operator)
    resource.patch_namespaced_resource_claim_status(
        "kopf-alloc", NS, {"status": {"allocation": allocation("node-2")}},
        _content_type="application/merge-patch+json")
    annotated = wait_for_claim(resource, "kopf-alloc", _annotation(DEVICES), operator)
    assert annotated.metadata.annotations[DEVICES] == "gpu.example.com/node-2/gpu-0"


def test_kopf_events_are_stored(module_apiserver: APIServer, resource: client.ResourceV1Api,
                                operator: Path) -> None:
    resource.create_namespaced_resource_claim(NS, claim("kopf-events"))
    created = wait_for_claim(resource, "kopf-events", _annotation(CLASSES), operator)
    api = config.new_client_from_config(str(module_apiserver.kubeconfig_path))
    core = client.CoreV1Api(api)
    # kopf posts events from a queue of its own, after the handler's patch: watch for it.
    selector = f"involvedObject.name=kopf-events,involvedObject.uid={created.metadata.uid}"
    w = watch.Watch()
    posted = None
    for event in w.stream(core.list_namespaced_event, NS, field_selector=selector,
                          resource_version="0", timeout_seconds=30):
        if event["object"].reason == "DeviceClasses":
            posted = event["object"]
            w.stop()
    api.close()
    assert posted is not None, operator.read_text()[-3000:]
    assert posted.message == "requests devices of gpu.example.com"
    assert (posted.type, posted.involved_object.kind) == ("Normal", "ResourceClaim")
    assert posted.source.component == "kopf"
