"""The web view's HTTP server: one page, its script and style, and a small JSON API.

- `GET /?token=T` checks the one-time token printed by `draemu up` / `draemu ui`, sets
  it as an HTTP-only cookie and redirects to `/`; every other path needs that cookie
  (or `Authorization: Bearer T`). It listens on loopback unless told otherwise.
- Another site's page cannot act with the cookie: every request's `Host` must name this
  server (no DNS rebinding), and a write (POST) must come from this origin (`Origin`,
  `Sec-Fetch-Site`) and carry the page's CSRF token in `X-CSRF-Token` (a header a
  cross-site form or `text/plain` fetch cannot set). Bearer-token clients need no CSRF
  token: a browser never adds that header by itself.
- `GET /`: the page, rendered here (page.py) with the cluster as it is: complete without
  JavaScript; with it, `GET /api/stream` (Server-Sent Events, one per change, coalesced
  over 100 ms) replaces its sections as the cluster changes.
- `GET /explain?namespace=NS&name=POD` (`&fragment=1`: the panel's part only): a pod's
  decision, node by node and device by device, with the scores (`draemu why`);
  `GET /api/why` the same as JSON. Computed in the worker process (worker.py), never in
  this one: this server runs in `draemu up`'s apiserver process.
- `GET /claim?namespace=NS&name=CLAIM` (`&fragment=1`): a claim's timeline.
- `GET /api/state`: the snapshot (model.py) as JSON.
- `POST /api/whatif` `{"manifest": "<YAML>"}`: where a claim would land, and why not
  elsewhere. Reads only: nothing is written to the cluster. It runs in the worker process
  with a deadline and a memory limit, never in this one.
- `GET /api/demo`, `POST /api/demo/step`: the seed demo's scenarios one at a time
  (only when started with the demo enabled: it applies and deletes the examples).

Nothing is fetched from elsewhere at run time: the page works offline and needs no build
step.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import time
from html import escape
from importlib import resources
from typing import Any

from aiohttp import web

from draemu.api import jsonfast, yamlload
from draemu.client import ApiError, Client
from draemu.cmd.ui import page as html
from draemu.cmd.ui.model import LiveModel, wait_for_change
from draemu.cmd.ui.worker import Worker

COOKIE = "draemu-ui"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
STATIC = {"app.js": "text/javascript", "app.css": "text/css"}
COALESCE = 0.1  # seconds: changes closer than this reach the page as one update
RENDER_SHARE = 10  # an update waits at least this many times what rendering it took


def _static(name: str) -> str:
    return resources.files("draemu.cmd.ui").joinpath("static", name).read_text()


class UIServer:
    def __init__(self, client: Client, model: LiveModel, *, kubeconfig: str | None = None,
                 context: str | None = None, demo: bool = False, token: str | None = None,
                 scheduler_config: str | None = None) -> None:
        """`kubeconfig`, `context`: how the worker reaches the cluster to explain a pod's
        decision (as `draemu why` would; None: explanations are not offered);
        `scheduler_config`: the text of the scheduler's KubeSchedulerConfiguration, which
        the explanations replay (None: upstream's default profile)."""
        self.client = client
        self.model = model
        self.kubeconfig = kubeconfig
        self.context = context
        self.scheduler_config = scheduler_config
        self.token = token or secrets.token_urlsafe(18)
        # Derived from the token: the page carries it, a foreign page cannot read it.
        self.csrf = hmac.new(self.token.encode(), b"draemu-ui csrf", "sha256").hexdigest()
        self.demo = SeedSteps(client) if demo else None
        self.worker = Worker()
        self._last_update: tuple[Any, bytes] | None = None  # (version, the update)
        self.update_cost = 0.0  # seconds the last update took to make
        self.hosts: set[str] = set()  # Host headers naming this server, once it listens
        self.app = web.Application(middlewares=[self._same_site, self._auth])
        self.app.add_routes([
            web.get("/", self.page), web.get("/static/{name}", self.static),
            web.get("/explain", self.explain_page), web.get("/claim", self.claim_page),
            web.get("/api/state", self.state), web.get("/api/stream", self.stream),
            web.get("/api/why", self.why), web.post("/api/whatif", self.what_if),
            web.get("/api/demo", self.demo_state), web.post("/api/demo/step", self.demo_step),
        ])
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self, address: str = "127.0.0.1", port: int = 0) -> str:
        """Serve; returns the URL to open (with the token)."""
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, address, port)
        await site.start()
        bound = self._runner.addresses[0][1] if self._runner.addresses else port
        host = f"[{address}]" if ":" in address else address
        self.hosts = _host_names(address, bound)
        self.url = f"http://{host}:{bound}/?token={self.token}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        await self.worker.stop()

    # Same site -------------------------------------------------------------------------
    @web.middleware
    async def _same_site(self, request: web.Request, handler: Any) -> web.StreamResponse:
        refused = self._foreign(request)
        if refused is not None:
            return web.json_response({"error": f"forbidden: {refused}"}, status=403)
        return await handler(request)

    def _foreign(self, request: web.Request) -> str | None:
        """Why a request may come from another site's page (None when it cannot)."""
        if self.hosts and request.host.lower() not in self.hosts:
            return f"Host {request.host!r} does not name this server"
        if request.method in SAFE_METHODS:
            return None
        origin = request.headers.get("Origin")
        if origin is not None and origin.lower() != f"{request.scheme}://{request.host}".lower():
            return f"a write from origin {origin!r}"
        if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            return "a cross-site write"
        if request.headers.get("Authorization", "").startswith("Bearer "):
            return None
        if not hmac.compare_digest(request.headers.get(CSRF_HEADER, "").encode(),
                                   self.csrf.encode()):
            return f"a write without the page's {CSRF_HEADER} header"
        return None

    # Authentication --------------------------------------------------------------------
    def _valid(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(value.encode(), self.token.encode())

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path == "/" and self._valid(request.query.get("token")):
            response = web.HTTPFound("/")
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict")
            raise response
        bearer = request.headers.get("Authorization", "")
        if self._valid(request.cookies.get(COOKIE)) or (
                bearer.startswith("Bearer ") and self._valid(bearer[7:])):
            return await handler(request)
        if request.path.startswith("/api/"):
            return web.json_response({"error": "unauthorized: open the URL draemu printed "
                                      "(it carries the token)"}, status=401)
        return web.Response(status=401, content_type="text/html", text=(
            "<!doctype html><title>draemu</title><p>Open the address <code>draemu up</code> "
            "or <code>draemu ui</code> printed: it carries a one-time token.</p>"))

    # Pages -----------------------------------------------------------------------------
    async def page(self, request: web.Request) -> web.Response:
        snap = self._snapshot()
        text = _static("index.html").replace("{{csrf}}", self.csrf)
        for name, fragment in html.sections(snap).items():
            text = text.replace("{{" + name + "}}", fragment)
        text = text.replace("{{demo}}", _demo_title(snap["demo"]))
        return _html(text)

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound()
        return web.Response(text=_static(name), content_type=STATIC[name])

    async def explain_page(self, request: web.Request) -> web.Response:
        namespace, name = request.query.get("namespace", "default"), request.query.get("name", "")
        result = await self._explain(namespace, name)
        body = html.decision(result["decision"]) if "decision" in result else \
            f'<p class="error">{escape(result["error"])}</p>'
        if request.query.get("fragment"):
            return _html(body, result.get("code", 200) if "error" in result else 200)
        return _html(_standalone(f"Why pod {namespace}/{name}", body),
                     result.get("code", 200) if "error" in result else 200)

    async def claim_page(self, request: web.Request) -> web.Response:
        namespace, name = request.query.get("namespace", "default"), request.query.get("name", "")
        body = html.timeline(f"{namespace}/{name}", self.model.timeline(namespace, name))
        if request.query.get("fragment"):
            return _html(body)
        return _html(_standalone(f"Claim {namespace}/{name}", body))

    # API -------------------------------------------------------------------------------
    def _snapshot(self) -> dict[str, Any]:
        snap = self.model.snapshot()
        snap["demo"] = self.demo.describe() if self.demo else None
        return snap

    async def state(self, request: web.Request) -> web.Response:
        return _json(self._snapshot())

    def update(self) -> bytes:
        """One change as the page applies it: each section's HTML and the links. Made
        once per version of the cluster, whatever the number of pages open."""
        key = (self.model.version, self.demo.current if self.demo else None)
        if self._last_update is not None and self._last_update[0] == key:
            return self._last_update[1]
        started = time.monotonic()
        snap = self._snapshot()
        body = jsonfast.dumps({"version": snap["version"], "html": html.sections(snap),
                               "links": html.links(snap), "demo": snap["demo"]})
        self.update_cost = time.monotonic() - started
        self._last_update = (key, body)
        return body

    async def stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store"})
        await response.prepare(request)
        seen = -1
        try:
            while True:
                if self.model.version != seen:
                    seen = self.model.version
                    await response.write(b"data: " + self.update() + b"\n\n")
                if await wait_for_change(self.model, seen, 15.0):
                    # Changes closer than this reach the page as one update; on a big
                    # cluster, rendering takes at most 1/RENDER_SHARE of this loop.
                    await asyncio.sleep(max(COALESCE, self.update_cost * RENDER_SHARE))
                else:
                    await response.write(b": keep-alive\n\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    async def _explain(self, namespace: str, name: str) -> dict[str, Any]:
        if self.kubeconfig is None:
            return {"error": "explanations need the view's kubeconfig", "code": 501}
        if self.model.pod(namespace, name) is None:
            return {"error": f'pods "{name}" not found in namespace "{namespace}"',
                    "code": 404}
        return await self.worker.explain(self.kubeconfig, self.context, namespace, name,
                                         self.model.gates_spec(), self.scheduler_config)

    async def why(self, request: web.Request) -> web.Response:
        result = await self._explain(request.query.get("namespace", "default"),
                                     request.query.get("name", ""))
        if "error" in result:
            return _json({"error": result["error"]}, result.get("code", 500))
        return _json(result)

    async def what_if(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
            manifest = body["manifest"]
            if not isinstance(manifest, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return _json({"error": 'send {"manifest": "<YAML of a ResourceClaim>"}'}, 400)
        if len(manifest) > 256 * 1024:
            return _json({"error": "the manifest is larger than 256 KiB"}, 413)
        result = await self.worker.what_if(manifest, self.model.cluster(),
                                           self.model.gates_spec())
        if "error" not in result:
            result["html"] = html.what_if(result)
        return _json(result, 400 if "error" in result else 200)

    async def demo_state(self, request: web.Request) -> web.Response:
        return _json(self.demo.describe() if self.demo else {"enabled": False})

    async def demo_step(self, request: web.Request) -> web.Response:
        if self.demo is None:
            return _json({"error": "the demo is not enabled here (draemu up --preset seed "
                          "or draemu ui --demo)"}, 403)
        try:
            await self.demo.step()
        except ApiError as e:
            return _json({"error": str(e)}, 409)
        return _json(self.demo.describe())


def _host_names(address: str, port: int) -> set[str]:
    """The Host headers a browser sends to this server: its address and port, and the
    loopback names when it listens on loopback (or everywhere)."""
    host = f"[{address}]" if ":" in address else address
    names = {f"{host}:{port}".lower()}
    if address in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "::"):
        names |= {f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"}
    return names


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html",
                        headers={"Cache-Control": "no-store"})


def _standalone(title: str, body: str) -> str:
    """A page of its own for one explanation (followed from the page without JavaScript)."""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>draemu — '
            f'{escape(title)}</title><meta name="viewport" content="width=device-width, '
            f'initial-scale=1"><link rel="stylesheet" href="/static/app.css"></head><body>'
            f'<header><h1>draemu</h1><a class="sub" href="/">back to the cluster</a></header>'
            f'<main class="single"><section>{body}</section></main></body></html>')


def _demo_title(demo: dict[str, Any] | None) -> str:
    if not demo:
        return ""
    current = demo["current"]
    return escape(demo["steps"][current] if current >= 0 else "(the seed demo: press to start)")


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=jsonfast.dumps(obj), status=status,
                        content_type="application/json")


# The seed demo, step by step ----------------------------------------------------------
SCENARIOS = [
    ("Scenario 1: large model training gets an 80 GB GPU", ["1-large-model-training.yaml"]),
    ("Scenario 2a: two pods share one GPU through one claim", ["2a-shared-gpu-claim.yaml"]),
    ("Scenario 2b: consumable capacity, 10Gi each of one GPU", ["2b-consumable-capacity.yaml"]),
    ("Scenario 3: a GPU and an RDMA NIC on the same NUMA node", ["3-gpu-plus-nic.yaml"]),
]
RESOURCE = {"Pod": ("v1", "pods"), "Job": ("batch/v1", "jobs"),
            "ResourceClaim": ("resource.k8s.io/v1", "resourceclaims"),
            "ResourceClaimTemplate": ("resource.k8s.io/v1", "resourceclaimtemplates")}


class SeedSteps:
    """Applies each scenario's manifests in turn, deleting the previous scenario's."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.current = -1
        self._lock = asyncio.Lock()

    def describe(self) -> dict[str, Any]:
        return {"enabled": True, "current": self.current,
                "steps": [title for title, _ in SCENARIOS]}

    def _objects(self, index: int) -> list[dict[str, Any]]:
        folder = resources.files("draemu.examples.seed")
        out = []
        for name in SCENARIOS[index][1]:
            out += [d for d in yamlload.load_file_documents(folder.joinpath(name).read_text()) if d]
        return out

    async def step(self) -> None:
        async with self._lock:
            if self.current >= 0:
                for obj in reversed(self._objects(self.current)):
                    api_version, resource = RESOURCE[obj["kind"]]
                    with contextlib.suppress(ApiError):
                        await self.client.delete(api_version, resource,
                                                 obj["metadata"]["name"], "default",
                                                 propagation_policy="Background")
            self.current = (self.current + 1) % (len(SCENARIOS) + 1)
            if self.current == len(SCENARIOS):  # past the last: back to the start
                self.current = -1
                return
            for obj in self._objects(self.current):
                api_version, resource = RESOURCE[obj["kind"]]
                await self.client.patch(api_version, resource, obj["metadata"]["name"],
                                        jsonfast.dumps(obj).decode(), patch_type="apply",
                                        namespace="default", field_manager="draemu-ui",
                                        force=True)
