"""An asyncio REST client for the Kubernetes API (JSON over aiohttp).

Components address resources the way Kubernetes does, by apiVersion and plural
resource name; every error comes back as `ApiError` carrying the server's `Status`.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from draemu.api import jsonfast
from draemu.client import config
from draemu.client.lighthttp import LightHTTP, over_tcp, over_unix

PATCH_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


class ApiError(Exception):
    def __init__(self, code: int, status: dict[str, Any]) -> None:
        self.code = code
        self.status = status
        self.reason = str(status.get("reason") or "")
        self.message = str(status.get("message") or f"HTTP {code}")
        super().__init__(f"{code} {self.reason}: {self.message}")


def resource_path(api_version: str, resource: str, namespace: str | None = None,
                  name: str | None = None, subresource: str | None = None) -> str:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    parts = [base]
    if namespace:
        parts.append(f"namespaces/{quote(namespace, safe='')}")
    parts.append(resource)
    if name:
        parts.append(quote(name, safe=""))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


def _bool(value: bool) -> str:
    return "true" if value else "false"


class Client:
    def __init__(self, server: str, *, ssl_context: ssl.SSLContext | None = None,
                 token: str | None = None, user_agent: str = "draemu",
                 ca_pem: bytes | None = None, unix_socket: str | None = None) -> None:
        self.server = server.rstrip("/")
        # Set for a component in the apiserver's own process (APIServer.loopback_client).
        self._unix_socket = unix_socket
        self.ca_pem = ca_pem  # the cluster CA, for components that publish it
        self._ssl = ssl_context
        self._headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._session: aiohttp.ClientSession | None = None
        # Every request but watches (aiohttp's, above) goes through it.
        self._http: LightHTTP | None = None

    @classmethod
    def from_kubeconfig(cls, path: str | Path | None = None, context: str | None = None,
                        user_agent: str = "draemu") -> Client:
        conn = config.load(path, context)
        return cls(conn.server, ssl_context=conn.ssl_context(), token=conn.token,
                   user_agent=user_agent, ca_pem=conn.ca_data)

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector: aiohttp.BaseConnector = (
                aiohttp.UnixConnector(path=self._unix_socket, limit=64) if self._unix_socket
                else aiohttp.TCPConnector(ssl=self._ssl if self._ssl else False, limit=64))
            self._session = aiohttp.ClientSession(
                connector=connector, headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        return self._session

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(self, method: str, path: str, *, params: dict[str, str] | None = None,
                      json: Any = None, data: bytes | str | None = None,
                      headers: dict[str, str] | None = None,
                      timeout: float | None = 60) -> tuple[int, dict[str, str], bytes]:
        hdrs = dict(headers or {})
        if json is not None:
            data = jsonfast.dumps(json)  # orjson: the claim updates are large
            hdrs.setdefault("Content-Type", "application/json")
        if self._http is None:
            self._http = over_unix(self._unix_socket, self._headers) if self._unix_socket \
                else over_tcp(self.server, self._ssl, self._headers)
        return await self._http.request(
            method, path, params, data.encode() if isinstance(data, str) else data,
            hdrs, timeout)

    async def _call(self, method: str, path: str, *, params: dict[str, str] | None = None,
                    json_body: Any = None, data: bytes | str | None = None,
                    headers: dict[str, str] | None = None,
                    decode: bool = True) -> dict[str, Any]:
        """The decoded answer; with `decode=False` a success answers {} (for callers that
        do not read it: decoding a written pod back costs as much as encoding it)."""
        status, _, body = await self.request(method, path, params=params, json=json_body,
                                             data=data, headers=headers)
        if not decode and status < 400:
            return {}
        try:
            decoded = jsonfast.loads(body) if body else {}
        except ValueError:
            decoded = {"message": body.decode(errors="replace")}
        if status >= 400:
            raise ApiError(status, decoded if isinstance(decoded, dict) else {})
        return decoded

    async def get_json(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        """GET any path (discovery documents, /version, ...) as JSON."""
        return await self._call("GET", path, params=params)

    # Verbs ---------------------------------------------------------------------------

    async def get(self, api_version: str, resource: str, name: str,
                  namespace: str | None = None, subresource: str | None = None) -> dict[str, Any]:
        return await self._call(
            "GET", resource_path(api_version, resource, namespace, name, subresource))

    async def list(self, api_version: str, resource: str, namespace: str | None = None, *,
                   label_selector: str | None = None, field_selector: str | None = None,
                   limit: int | None = None, continue_: str | None = None,
                   resource_version: str | None = None) -> dict[str, Any]:
        params = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if limit:
            params["limit"] = str(limit)
        if continue_:
            params["continue"] = continue_
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        return await self._call("GET", resource_path(api_version, resource, namespace),
                                params=params)

    async def list_all(self, api_version: str, resource: str, namespace: str | None = None,
                       **kwargs: Any) -> dict[str, Any]:
        """A list, following `continue` tokens until the end."""
        result = await self.list(api_version, resource, namespace, **kwargs)
        while result.get("metadata", {}).get("continue"):
            more = await self.list(api_version, resource, namespace,
                                   continue_=result["metadata"]["continue"],
                                   **{k: v for k, v in kwargs.items() if k != "continue_"})
            result["items"].extend(more.get("items") or [])
            result["metadata"] = more.get("metadata", {})
        return result

    async def watch(self, api_version: str, resource: str, namespace: str | None = None, *,
                    resource_version: str | None = None, label_selector: str | None = None,
                    field_selector: str | None = None, timeout_seconds: int | None = None,
                    allow_bookmarks: bool = True, name: str | None = None,
                    ) -> AsyncIterator[dict[str, Any]]:
        params = {"watch": "true", "allowWatchBookmarks": _bool(allow_bookmarks)}
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if name:
            sel = f"metadata.name={name}"
            params["fieldSelector"] = f"{field_selector},{sel}" if field_selector else sel
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(timeout_seconds)
        path = resource_path(api_version, resource, namespace)
        async with self._get_session().get(
                self.server + path, params=params,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)) as resp:
            if resp.status >= 400:
                body = await resp.read()
                try:
                    decoded = jsonfast.loads(body)
                except ValueError:
                    decoded = {"message": body.decode(errors="replace")}
                raise ApiError(resp.status, decoded)
            # A chunk holds many events when they come in bursts: its complete lines are
            # split once (splitting one line off at a time copied the rest each time).
            buffer = b""
            async for chunk in resp.content.iter_any():
                if buffer:
                    chunk = buffer + chunk
                end = chunk.rfind(b"\n")
                if end < 0:
                    buffer = chunk
                    continue
                buffer = chunk[end + 1:]
                for line in chunk[:end].split(b"\n"):
                    if line.strip():
                        yield jsonfast.loads(line)
            if buffer.strip():
                yield jsonfast.loads(buffer)

    async def create(self, api_version: str, resource: str, obj: dict[str, Any],
                     namespace: str | None = None, subresource: str | None = None,
                     name: str | None = None, *, dry_run: bool = False,
                     field_manager: str | None = None, decode: bool = True) -> dict[str, Any]:
        if namespace is None and resource != "namespaces":
            namespace = (obj.get("metadata") or {}).get("namespace")
        if subresource and name is None:
            name = (obj.get("metadata") or {}).get("name")
        return await self._call(
            "POST", resource_path(api_version, resource, namespace, name, subresource),
            params=self._write_params(dry_run, field_manager), json_body=obj, decode=decode)

    async def update(self, api_version: str, resource: str, obj: dict[str, Any],
                     namespace: str | None = None, subresource: str | None = None, *,
                     dry_run: bool = False, field_manager: str | None = None) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        if namespace is None and resource != "namespaces":
            namespace = meta.get("namespace")
        return await self._call(
            "PUT", resource_path(api_version, resource, namespace, meta.get("name"), subresource),
            params=self._write_params(dry_run, field_manager), json_body=obj)

    async def patch(self, api_version: str, resource: str, name: str, patch: Any, *,
                    patch_type: str = "merge", namespace: str | None = None,
                    subresource: str | None = None, field_manager: str | None = None,
                    force: bool | None = None, dry_run: bool = False,
                    decode: bool = True) -> dict[str, Any]:
        params = self._write_params(dry_run, field_manager)
        if force is not None:
            params["force"] = _bool(force)
        body = patch if isinstance(patch, (str, bytes)) else jsonfast.dumps(patch)
        return await self._call(
            "PATCH", resource_path(api_version, resource, namespace, name, subresource),
            params=params, data=body, headers={"Content-Type": PATCH_TYPES[patch_type]},
            decode=decode)

    async def delete(self, api_version: str, resource: str, name: str,
                     namespace: str | None = None, *, propagation_policy: str | None = None,
                     grace_period_seconds: int | None = None,
                     preconditions: dict[str, str] | None = None,
                     dry_run: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            body["preconditions"] = preconditions
        if dry_run:
            body["dryRun"] = ["All"]
        return await self._call(
            "DELETE", resource_path(api_version, resource, namespace, name), json_body=body)

    @staticmethod
    def _write_params(dry_run: bool, field_manager: str | None) -> dict[str, str]:
        params = {}
        if dry_run:
            params["dryRun"] = "All"
        if field_manager:
            params["fieldManager"] = field_manager
        return params


async def wait_ready(client: Client, timeout: float = 30.0) -> None:
    """Wait until the apiserver answers /readyz with 200."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: Exception | None = None
    while asyncio.get_running_loop().time() < deadline:
        try:
            status, _, _ = await client.request("GET", "/readyz", timeout=5)
            if status == 200:
                return
        except (TimeoutError, aiohttp.ClientError, OSError) as e:
            last = e
        await asyncio.sleep(0.05)
    raise TimeoutError(f"apiserver at {client.server} not ready after {timeout}s: {last}")
