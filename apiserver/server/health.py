"""/healthz, /livez and /readyz, with `?verbose` and per-check paths, as kube-apiserver
answers them (text/plain `ok`, or one `[+]check ok` line per check)."""

from __future__ import annotations

from aiohttp import web

_CHECKS = ("ping", "log", "etcd", "poststarthook/start-apiserver-admission-initializer",
           "poststarthook/generic-apiserver-start-informers")
_READY_CHECKS = (*_CHECKS, "informer-sync", "shutdown")


def respond(request: web.Request, path: str, ready: bool) -> web.Response:
    endpoint, _, check = path.lstrip("/").partition("/")
    checks = _READY_CHECKS if endpoint == "readyz" else _CHECKS
    healthy = ready or endpoint != "readyz"
    failing = set() if healthy else {"informer-sync"}
    if check:
        if check not in checks:
            return web.Response(status=404, text="404 page not found\n")
        ok = check not in failing
        return web.Response(status=200 if ok else 500, text="ok" if ok else
                            f"[-]{check} failed: reason withheld\n")
    verbose = "verbose" in request.query
    if healthy and not verbose:
        return web.Response(text="ok")
    lines = [f"[-]{c} failed: reason withheld" if c in failing else f"[+]{c} ok"
             for c in checks]
    lines.append(f"{endpoint} check {'passed' if healthy else 'failed'}")
    return web.Response(status=200 if healthy else 500, text="\n".join(lines) + "\n")
