"""Records the protobuf request bodies real kubectl sends, as test fixtures.

A plain-HTTP recording proxy stands in front of a draemu apiserver (served without
authentication on loopback); each kubectl command runs against the proxy and every
request body with a protobuf Content-Type is written to `fixtures/<version>/<name>.pb`
with its method, path, Content-Type and Accept in `index.json`.

    .venv/bin/python tests/protobuf/record_kubectl.py /usr/bin/kubectl [kubectl.1.33 ...]
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp
from aiohttp import web

from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions
from draemu.features import FeatureGates

FIXTURES = Path(__file__).with_name("fixtures")
PROTOBUF = "application/vnd.kubernetes.protobuf"
# (fixture name, kubectl arguments): each command sends one protobuf body.
COMMANDS = [
    ("namespace", ["create", "namespace", "pb-ns"]),
    ("configmap", ["create", "configmap", "pb-cm", "--from-literal=k=v",
                   "--from-literal=empty="]),
    ("secret", ["create", "secret", "generic", "pb-secret", "--from-literal=password=s3cr3t"]),
    ("job", ["create", "job", "pb-job", "--image=busybox", "--", "echo", "hi"]),
    ("deployment", ["create", "deployment", "pb-deploy", "--image=nginx", "--replicas=0",
                    "--port=80"]),
    ("serviceaccount", ["create", "serviceaccount", "pb-sa"]),
    ("can-i", ["auth", "can-i", "create", "pods"]),
    ("can-i-list", ["auth", "can-i", "--list"]),
    ("whoami", ["auth", "whoami"]),
]


async def _record(upstream: str, log: list[tuple[web.Request, bytes]],
                  request: web.Request) -> web.StreamResponse:
    body = await request.read()
    log.append((request, body))
    headers = {k: v for k, v in request.headers.items()
               if k.lower() not in ("host", "content-length", "accept-encoding")}
    async with aiohttp.ClientSession() as session, session.request(
            request.method, upstream + request.path_qs, data=body or None,
            headers=headers) as reply:
        payload = await reply.read()
        return web.Response(body=payload, status=reply.status,
                            headers={"Content-Type": reply.headers.get("Content-Type", "")})


async def record(binary: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = APIServer(APIServerOptions(data_dir=Path(tmp) / "api", insecure_http=True,
                                            store_url="sqlite://:memory:",
                                            feature_gates=FeatureGates()))
        await server.start()
        log: list[tuple[web.Request, bytes]] = []
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", lambda r: _record(server.url, log, r))
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        index = {}
        try:
            out.mkdir(parents=True, exist_ok=True)
            for name, args in COMMANDS:
                log.clear()
                cmd = [binary, f"--server=http://127.0.0.1:{port}", f"--cache-dir={tmp}/c",
                       *args]
                result = await asyncio.to_thread(
                    subprocess.run, cmd, capture_output=True, text=True, timeout=60,
                    env={**os.environ, "KUBECONFIG": "/dev/null", "HOME": tmp})
                for request, body in log:
                    if request.headers.get("Content-Type", "").startswith(PROTOBUF):
                        (out / f"{name}.pb").write_bytes(body)
                        index[name] = {"method": request.method, "path": request.path_qs,
                                       "contentType": request.headers["Content-Type"],
                                       "accept": request.headers.get("Accept", ""),
                                       "kubectl": args, "exit": result.returncode}
                print(name, result.returncode, result.stderr.strip()[:200], file=sys.stderr)
        finally:
            await runner.cleanup()
            await server.stop()
        (out / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")


def version_of(binary: str) -> str:
    info = json.loads(subprocess.run([binary, "version", "--client", "-o", "json"],
                                     capture_output=True, text=True, check=True).stdout)
    return f"{info['clientVersion']['major']}.{info['clientVersion']['minor'].rstrip('+')}"


def main() -> None:
    for binary in sys.argv[1:]:
        asyncio.run(record(binary, FIXTURES / f"kubectl-{version_of(binary)}"))


if __name__ == "__main__":
    main()
