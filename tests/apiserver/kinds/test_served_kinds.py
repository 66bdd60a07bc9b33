"""Every kind the real kube-scheduler and kube-controller-manager list is served over
HTTP: create, get, list as a Table with upstream's columns, watch-able, in discovery."""

from __future__ import annotations

import copy

import pytest
from apiclient import Client
from samples import SAMPLES

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
pytestmark = pytest.mark.unit


def _id(sample: tuple) -> str:
    return sample[1]["kind"]


# One server for all kinds (a server per kind would cost a minute on a busy machine).
async def test_every_kind_is_created_read_back_and_printed(client: Client) -> None:
    for path, obj, columns in SAMPLES:
        kind = obj["kind"]
        created = await client.post(path, copy.deepcopy(obj))
        assert created.status == 201, (kind, created.json)
        name = obj["metadata"]["name"]
        got = await client.get(f"{path}/{name}")
        assert got.status == 200 and got.json["kind"] == kind, kind
        table = (await client.get(path, headers={"Accept": TABLE})).json
        assert [c["name"] for c in table["columnDefinitions"]] == columns, kind
        row = next(r for r in table["rows"] if r["cells"][0].split(" ")[0] == name)
        assert len(row["cells"]) == len(columns), kind


async def test_every_kind_is_in_aggregated_discovery(client: Client) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    docs = {prefix: (await client.get(prefix, headers={"Accept": accept})).json
            for prefix in ("/api", "/apis")}
    for path, obj, _ in SAMPLES:
        api_version = obj["apiVersion"]
        group, _, version = api_version.rpartition("/")
        plural = path.rsplit("/", 1)[1]
        doc = docs["/apis" if group else "/api"]
        found = [r for g in doc["items"] if g["metadata"].get("name", "") == group
                 for v in g["versions"] if v["version"] == version
                 for r in v["resources"] if r["resource"] == plural]
        assert found, f"{plural} not in discovery of {api_version}"
        assert {"list", "watch", "create"} <= set(found[0]["verbs"]), plural


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s[1]["kind"] in (
    "Service", "PersistentVolume", "StatefulSet", "PriorityClass", "CSINode",
    "EndpointSlice")], ids=_id)
async def test_kind_is_watched(client: Client, sample: tuple) -> None:
    from apiclient import next_event

    path, obj, _ = sample
    listed = (await client.get(path)).json
    resp = await client.stream(f"{path}?watch=true&resourceVersion="
                               f"{listed['metadata']['resourceVersion']}")
    try:
        assert (await client.post(path, copy.deepcopy(obj))).status == 201
        event = await next_event(resp)
        assert event["type"] == "ADDED"
        assert event["object"]["metadata"]["name"] == obj["metadata"]["name"]
    finally:
        resp.close()
