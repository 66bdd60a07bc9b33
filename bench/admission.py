"""What admission and custom resources cost on writes: creates per second through HTTP
against an in-process apiserver (plain HTTP, in-memory store), 32 concurrent clients.

    .venv/bin/python bench/admission.py [--count N]

- ConfigMaps with no ValidatingAdmissionPolicy (the floor every write pays: looking
  for bindings and webhook configurations in the watch cache);
- ConfigMaps with one policy and binding matching them (matchConditions, a variable
  and two validations evaluated per write);
- custom resources of a CRD with a structural schema, defaults and one CEL rule.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from draemu.cmd.testing.apiserver import start_apiserver

CONCURRENCY = 32
POLICY = {"apiVersion": "admissionregistration.k8s.io/v1",
          "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "cm.example.com"},
          "spec": {"matchConstraints": {"resourceRules": [{
              "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
              "resources": ["configmaps"]}]},
              "matchConditions": [{"name": "labelled",
                                   "expression": "!has(object.metadata.labels)"}],
              "variables": [{"name": "keys", "expression": "size(object.data)"}],
              "validations": [{"expression": "variables.keys <= 10"},
                              {"expression": "!object.metadata.name.startsWith('x')"}]}}
BINDING = {"apiVersion": "admissionregistration.k8s.io/v1",
           "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "cm"},
           "spec": {"policyName": "cm.example.com", "validationActions": ["Deny"]}}
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.example.com"},
       "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                  "spec": {"type": "object",
                                           "x-kubernetes-validations": [
                                               {"rule": "self.replicas <= self.max"}],
                                           "properties": {
                                               "replicas": {"type": "integer", "minimum": 0},
                                               "max": {"type": "integer", "default": 10},
                                               "image": {"type": "string",
                                                         "maxLength": 64}}}}}}}]}}


async def _creates(session: aiohttp.ClientSession, url: str, path: str, count: int,
                   body: Any) -> float:
    todo = iter(range(count))

    async def worker() -> None:
        for i in todo:
            obj = body(i)
            async with session.post(url + path, data=json.dumps(obj),
                                    headers={"Content-Type": "application/json"}) as resp:
                assert resp.status == 201, await resp.text()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return count / (time.perf_counter() - started)


def _configmap(prefix: str) -> Any:
    return lambda i: {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": f"{prefix}-{i}"}, "data": {"a": "1"}}


async def main(count: int) -> None:
    server = await start_apiserver(Path(tempfile.mkdtemp()), insecure_http=True)
    try:
        async with aiohttp.ClientSession() as session:
            url = server.url
            cms = "/api/v1/namespaces/default/configmaps"
            await _creates(session, url, cms, 200, _configmap("warm"))
            plain = await _creates(session, url, cms, count, _configmap("plain"))
            for path, obj in (("/apis/admissionregistration.k8s.io/v1/"
                               "validatingadmissionpolicies", POLICY),
                              ("/apis/admissionregistration.k8s.io/v1/"
                               "validatingadmissionpolicybindings", BINDING),
                              ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                               CRD)):
                async with session.post(url + path, data=json.dumps(obj),
                                        headers={"Content-Type": "application/json"}) as r:
                    assert r.status == 201, await r.text()
            policed = await _creates(session, url, cms, count, _configmap("policed"))
            widgets = await _creates(
                session, url, "/apis/example.com/v1/namespaces/default/widgets", count,
                lambda i: {"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": f"w-{i}"},
                           "spec": {"replicas": 3, "image": "nginx"}})
    finally:
        await server.stop()
    print(f"ConfigMap creates, no policy:          {plain:7.0f}/s")
    print(f"ConfigMap creates, one policy+binding: {policed:7.0f}/s "
          f"({policed / plain:.2f}x)")
    print(f"custom resource creates (schema+CEL):  {widgets:7.0f}/s "
          f"({widgets / plain:.2f}x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    asyncio.run(main(parser.parse_args().count))
