"""A container's environment from its spec: the Services of its namespace (service links),
`envFrom`, then `env` (values, field references, ConfigMap and Secret keys), in the order
the kubelet builds it, each later one overriding the earlier."""

from __future__ import annotations

import base64
import math

from draemu.api.quantity import parse_quantity
from draemu.api.types import Obj
from draemu.client import ApiError, Client


class EnvError(Exception):
    pass


def expand(text: str, env: dict[str, str]) -> str:
    """`$(NAME)` references in a command, an argument or an env value, as the kubelet
    expands them: a defined NAME is replaced, an undefined one is left as written, `$$`
    is a literal `$`, and any other `$` stays."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            end = text.find(")", i + 2)
            if end < 0:
                out.append(text[i:])
                break
            name = text[i + 2:end]
            out.append(env[name] if name in env else text[i:end + 1])
            i = end + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def field_value(pod: Obj, path: str, host_ip: str, pod_ip: str | None) -> str:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    simple = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName"),
              "status.hostIP": host_ip, "status.podIP": pod_ip or ""}
    if path in simple:
        return str(simple[path] or "")
    for prefix, source in (("metadata.labels", "labels"),
                           ("metadata.annotations", "annotations")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str((meta.get(source) or {}).get(path[len(prefix) + 2:-2], ""))
    raise EnvError(f"unsupported fieldRef {path}")


class EnvBuilder:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def _data(self, kind: str, namespace: str, name: str) -> dict[str, str] | None:
        resource = "configmaps" if kind == "configMap" else "secrets"
        try:
            obj = await self.client.get("v1", resource, name, namespace)
        except ApiError as err:
            if err.code == 404:
                return None
            raise EnvError(f"{resource} {name}: {err.message}") from err
        if kind == "configMap":
            return dict(obj.get("data") or {})
        return {k: base64.b64decode(v).decode(errors="replace")
                for k, v in (obj.get("data") or {}).items()}

    async def build(self, pod: Obj, container: Obj, host_ip: str,
                    pod_ip: str | None) -> dict[str, str]:
        namespace = pod["metadata"]["namespace"]
        env: dict[str, str] = {}
        if (pod.get("spec") or {}).get("enableServiceLinks", True) is not False:
            env.update(await self._service_links(namespace))
        env["HOSTNAME"] = pod["metadata"]["name"]
        for source in container.get("envFrom") or []:
            for kind in ("configMap", "secret"):
                ref = source.get(f"{kind}Ref")
                if not ref:
                    continue
                data = await self._data(kind, namespace, ref["name"])
                if data is None:
                    if ref.get("optional"):
                        continue
                    raise EnvError(f'{kind} "{ref["name"]}" not found')
                prefix = source.get("prefix", "")
                env.update({prefix + k: v for k, v in data.items()})
        for item in container.get("env") or []:
            if "valueFrom" not in item:
                env[item["name"]] = expand(item.get("value", ""), env)
                continue
            source = item["valueFrom"]
            if "fieldRef" in source:
                env[item["name"]] = field_value(pod, source["fieldRef"]["fieldPath"], host_ip,
                                           pod_ip)
                continue
            for kind in ("configMap", "secret"):
                ref = source.get(f"{kind}KeyRef")
                if not ref:
                    continue
                data = await self._data(kind, namespace, ref["name"])
                if data is None or ref["key"] not in data:
                    if ref.get("optional"):
                        break
                    raise EnvError(f'couldn\'t find key {ref["key"]} in {kind} '
                                   f'{namespace}/{ref["name"]}')
                env[item["name"]] = data[ref["key"]]
                break
            else:
                if "resourceFieldRef" in source:
                    env[item["name"]] = resource_value(container, source["resourceFieldRef"])
        return env


    async def _service_links(self, namespace: str) -> dict[str, str]:
        """The variables of every Service in the namespace with a cluster IP (the
        `kubernetes` Service's are the runtime's: it knows how the pod reaches the
        apiserver)."""
        try:
            services = (await self.client.list("v1", "services", namespace)).get("items") or []
        except ApiError as err:
            raise EnvError(f"services of {namespace}: {err.message}") from err
        env: dict[str, str] = {}
        for service in sorted(services, key=lambda s: s["metadata"]["name"]):
            if (namespace, service["metadata"]["name"]) != ("default", "kubernetes"):
                env.update(service_link_env(service))
        return env


def service_link_env(service: Obj) -> dict[str, str]:
    """A Service's variables as the kubelet writes them (enableServiceLinks): NAME_SERVICE_HOST
    and _SERVICE_PORT[_PORTNAME], and Docker's link variables NAME_PORT[_P_PROTO[_PROTO,
    _PORT, _ADDR]]; none for a Service without a cluster IP (headless, ExternalName)."""
    spec = service.get("spec") or {}
    ip = spec.get("clusterIP") or ""
    ports = spec.get("ports") or []
    if not ip or ip == "None" or not ports:
        return {}
    name = service["metadata"]["name"].upper().replace("-", "_")
    env = {f"{name}_SERVICE_HOST": ip, f"{name}_SERVICE_PORT": str(ports[0].get("port"))}
    for port in ports:
        if port.get("name"):
            env[f"{name}_SERVICE_PORT_{port['name'].upper().replace('-', '_')}"] = \
                str(port.get("port"))
    host = f"[{ip}]" if ":" in ip else ip
    first = ports[0]
    env[f"{name}_PORT"] = f"{(first.get('protocol') or 'TCP').lower()}://{host}:{first['port']}"
    for port in ports:
        protocol = port.get("protocol") or "TCP"
        prefix = f"{name}_PORT_{port['port']}_{protocol.upper()}"
        env[prefix] = f"{protocol.lower()}://{host}:{port['port']}"
        env[f"{prefix}_PROTO"] = protocol.lower()
        env[f"{prefix}_PORT"] = str(port["port"])
        env[f"{prefix}_ADDR"] = ip
    return env


def resource_value(container: Obj, ref: Obj) -> str:
    """A resourceFieldRef: the container's request or limit in units of `divisor`
    (rounded up, as upstream); an unset limit is reported as 0 here (upstream: the
    node's allocatable)."""
    kind, _, name = ref["resource"].partition(".")
    value = ((container.get("resources") or {}).get(kind) or {}).get(name)
    if value is None:
        return "0"
    divisor = ref.get("divisor") or "1"
    try:
        amount, unit = parse_quantity(str(value)), parse_quantity(str(divisor))
    except ValueError as err:
        raise EnvError(f"resourceFieldRef {ref['resource']}: {err}") from None
    if unit == 0:
        raise EnvError(f"resourceFieldRef {ref['resource']}: divisor must not be 0")
    return str(math.ceil(amount / unit))
