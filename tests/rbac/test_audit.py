"""--audit-log: one audit.k8s.io/v1 Event per request at the Metadata level."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from rbac_client import TOKENS, As

from draemu.cmd.testing.apiserver import start_apiserver

pytestmark = pytest.mark.unit


async def test_requests_are_audited_with_user_object_and_decision(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("".join(f'{t},{u},{u}-uid,"{",".join(g)}"\n'
                              for t, (u, g) in TOKENS.items()))
    log = tmp_path / "audit.log"
    server = await start_apiserver(tmp_path / "s", token_file=tokens, audit_log=log)
    try:
        async with aiohttp.ClientSession() as session:
            admin = As(server, session, None)
            bob = As(server, session, "bob-token")
            assert (await admin.get("/api/v1/namespaces/default/configmaps")).status == 200
            assert (await bob.get("/api/v1/namespaces/default/secrets/s")).status == 403
            impersonating = As(server, session, None, {"Impersonate-User": "alice"})
            assert (await impersonating.get("/api")).status == 200
    finally:
        await server.stop()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    listed = next(e for e in events if e["requestURI"] == "/api/v1/namespaces/default/configmaps")
    assert listed["kind"] == "Event" and listed["apiVersion"] == "audit.k8s.io/v1"
    assert listed["level"] == "Metadata" and listed["stage"] == "ResponseComplete"
    assert listed["verb"] == "list"
    assert listed["user"]["username"] == "kubernetes-admin"
    assert listed["objectRef"] == {"resource": "configmaps", "namespace": "default",
                                   "apiVersion": "v1"}
    assert listed["responseStatus"] == {"metadata": {}, "code": 200}
    assert listed["annotations"]["authorization.k8s.io/decision"] == "allow"
    denied = next(e for e in events if e["requestURI"].endswith("/secrets/s"))
    assert denied["user"]["username"] == "bob"
    assert denied["responseStatus"]["code"] == 403
    assert denied["responseStatus"]["reason"] == "Forbidden"
    assert denied["annotations"] == {"authorization.k8s.io/decision": "forbid",
                                     "authorization.k8s.io/reason": ""}
    impersonated = next(e for e in events if e["requestURI"] == "/api")
    assert impersonated["user"]["username"] == "kubernetes-admin"
    assert impersonated["impersonatedUser"]["username"] == "alice"
    assert impersonated["verb"] == "get" and "objectRef" not in impersonated
