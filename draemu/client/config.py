"""Kubeconfig files: finding them, merging them like kubectl, and turning the chosen
context into connection settings."""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from draemu.api import yamlload
from draemu.api.yamlerror import one_line


class ConfigError(Exception):
    pass


@dataclass
class Connection:
    server: str
    ca_data: bytes | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    token: str | None = None
    insecure_skip_tls_verify: bool = False

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.server.startswith("https://"):
            return None
        try:
            return self._ssl_context()
        except (ssl.SSLError, ValueError) as e:  # UnicodeDecodeError is a ValueError
            raise ConfigError(f"kubeconfig certificates or key are not usable: {e}") from None

    def _ssl_context(self) -> ssl.SSLContext:
        # With a cluster CA, the system's CA bundle is never loaded (that takes ~0.1 s).
        if self.ca_data and not self.insecure_skip_tls_verify:
            ctx = ssl.create_default_context(cadata=self.ca_data.decode())
        else:
            ctx = ssl.create_default_context()
        if self.insecure_skip_tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_data and self.key_data:
            # The ssl module loads client certificates from files only.
            with tempfile.TemporaryDirectory(prefix="draemu-cred-") as tmp:
                cert = Path(tmp, "tls.crt")
                key = Path(tmp, "tls.key")
                cert.write_bytes(self.cert_data)
                key.touch(mode=0o600)
                key.write_bytes(self.key_data)
                ctx.load_cert_chain(cert, key)
        return ctx


def default_paths() -> list[Path]:
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yamlload.load_file_text(path.read_text(encoding="utf-8")) or {}
    except OSError as e:
        raise ConfigError(f"cannot read kubeconfig {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"kubeconfig {path} is not UTF-8 text") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"kubeconfig {path} is not valid YAML: {one_line(e)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"kubeconfig {path} is not a mapping")
    return data


def _entries(doc: dict[str, Any], section: str, path: Path) -> list[dict[str, Any]]:
    items = doc.get(section) or []
    if not isinstance(items, list) or not all(
            isinstance(i, dict) and isinstance(i.get(section[:-1]) or {}, dict) for i in items):
        raise ConfigError(f"kubeconfig {path}: {section} must be a list of "
                          f"{{name: ..., {section[:-1]}: {{...}}}} entries")
    return items


def _file_or_data(entry: dict[str, Any], name: str, base: Path) -> bytes | None:
    data = entry.get(f"{name}-data")
    if data:
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise ConfigError(f"{name}-data is not valid base64") from None
    path = entry.get(name)
    if path:
        if not isinstance(path, str):
            raise ConfigError(f"{name} must be a file name, not {path!r}")
        full = Path(path) if os.path.isabs(path) else base / path
        try:
            return full.read_bytes()
        except OSError as e:
            raise ConfigError(f"cannot read {name} {full}: {e.strerror}") from None
    return None


def load(path: str | Path | None = None, context: str | None = None) -> Connection:
    """The connection of `context` (default: current-context) from `path` or, when not
    given, from $KUBECONFIG / ~/.kube/config merged the way kubectl merges them (the
    first file to define a name wins)."""
    paths = [Path(path)] if path else [p for p in default_paths() if p.exists()]
    if not paths:
        raise ConfigError("no kubeconfig found (set KUBECONFIG or pass --kubeconfig)")
    merged: dict[str, dict[str, tuple[dict[str, Any], Path]]] = {
        "clusters": {}, "users": {}, "contexts": {}}
    current = None
    for p in paths:
        doc = _read(p)
        current = current or doc.get("current-context")
        for section in merged:
            for item in _entries(doc, section, p):
                name = item.get("name")
                if isinstance(name, str) and name not in merged[section]:
                    body = item.get(section[:-1]) or {}
                    merged[section][name] = (body, p.parent)
    context = context or current
    if not context or not isinstance(context, str):
        raise ConfigError("kubeconfig has no current-context; pass a context")
    if context not in merged["contexts"]:
        raise ConfigError(f'context "{context}" does not exist in the kubeconfig')
    ctx, _ = merged["contexts"][context]
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    if not isinstance(cluster_name, str) or cluster_name not in merged["clusters"]:
        raise ConfigError(f'cluster "{cluster_name}" of context "{context}" does not exist')
    cluster, cbase = merged["clusters"][cluster_name]
    user, ubase = merged["users"].get(user_name, ({}, cbase)) \
        if isinstance(user_name, str) else ({}, cbase)
    token = user.get("token")
    if not token and user.get("tokenFile"):
        try:
            token = Path(user["tokenFile"]).read_text().strip()
        except (OSError, TypeError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read tokenFile {user['tokenFile']!r}: {e}") from None
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise ConfigError(f'cluster "{cluster_name}" has no server')
    return Connection(
        server=server.rstrip("/"),
        ca_data=_file_or_data(cluster, "certificate-authority", cbase),
        cert_data=_file_or_data(user, "client-certificate", ubase),
        key_data=_file_or_data(user, "client-key", ubase),
        token=token,
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
    )


def merge_into(target: Path, source: Path, name: str, *, set_current: bool = True) -> None:
    """Add the cluster, user and context of kubeconfig `source` to `target` under
    `name` (replacing entries of that name), as `kind` does with `kind-<name>`.
    Other entries of `target` are kept; the file is replaced atomically."""
    src = _read(source)
    doc: dict[str, Any] = _read(target) if target.exists() else {
        "apiVersion": "v1", "kind": "Config", "preferences": {}}
    ctx_name = src.get("current-context")
    ctx = next((c for c in src.get("contexts") or [] if c.get("name") == ctx_name), None)
    if ctx is None:
        raise ConfigError(f"kubeconfig {source} has no current context")
    cluster = next(c for c in src.get("clusters") or []
                   if c.get("name") == ctx["context"]["cluster"])
    user = next(u for u in src.get("users") or [] if u.get("name") == ctx["context"]["user"])
    for section, body in (("clusters", {"name": name, "cluster": cluster["cluster"]}),
                          ("users", {"name": name, "user": user["user"]}),
                          ("contexts", {"name": name, "context": {"cluster": name,
                                                                  "user": name}})):
        items = [i for i in doc.get(section) or [] if i.get("name") != name]
        items.append(body)
        doc[section] = items
    if set_current:
        doc["current-context"] = name
    _write_atomic(target, doc)


def remove_from(target: Path, name: str) -> bool:
    """Remove the cluster, user and context `name` from `target`; unset the current
    context if it was that one. Returns whether anything was removed."""
    if not target.exists():
        return False
    doc = _read(target)
    removed = False
    for section in ("clusters", "users", "contexts"):
        items = doc.get(section) or []
        kept = [i for i in items if i.get("name") != name]
        removed = removed or len(kept) != len(items)
        doc[section] = kept
    if doc.get("current-context") == name:
        doc["current-context"] = ""
    if removed:
        _write_atomic(target, doc)
    return removed


def _write_atomic(target: Path, doc: dict[str, Any]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".kubeconfig-")
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(doc, f, default_flow_style=False, sort_keys=False)
    os.chmod(tmp, 0o600)
    os.replace(tmp, target)
