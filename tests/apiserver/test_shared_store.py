"""Several apiservers on one store (the scale-out setup): reads are consistent across
them and watches see every server's writes."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from apiclient import CM, Client, configmap, next_event, ssl_context_for

from draemu.cmd.testing.apiserver import start_apiserver
from draemu.store import open_store

pytestmark = pytest.mark.unit


async def test_two_apiservers_on_one_store_read_each_others_writes(tmp_path: Path) -> None:
    store = await open_store("sqlite://:memory:")
    a = await start_apiserver(tmp_path / "a", store=store)
    b = await start_apiserver(tmp_path / "b", store=store)
    try:
        async with aiohttp.ClientSession() as session:
            ca = Client(a.url, session, ssl_context_for(a.kubeconfig_path))
            cb = Client(b.url, session, ssl_context_for(b.kubeconfig_path))
            rv = (await cb.get(CM)).json["metadata"]["resourceVersion"]
            watch = await cb.stream(f"{CM}?watch=true&resourceVersion={rv}")
            try:
                assert (await ca.post(CM, configmap("shared", a="1"))).status == 201
                read = await cb.get(f"{CM}/shared")
                assert read.status == 200 and read.json["data"] == {"a": "1"}
                event = await next_event(watch)
                assert (event["type"], event["object"]["metadata"]["name"]) == (
                    "ADDED", "shared")
            finally:
                watch.close()
    finally:
        await b.stop()
        await a.stop()
        await store.close()
