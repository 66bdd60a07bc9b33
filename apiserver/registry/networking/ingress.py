"""networking.k8s.io/v1 Ingress (+status), IngressClass and NetworkPolicy: stored and
validated as upstream (the parts charts get wrong), printed as `kubectl get` prints
them. Nothing routes traffic or enforces policies here."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, invalid, not_supported, required, too_many
from draemu.apiserver.registry.core.common import (
    dns_label,
    dns_subdomain,
    inclusive_range,
    label_selector_string,
)
from draemu.apiserver.registry.core.labelselector import validate_label_selector
from draemu.apiserver.registry.generic import (
    AGE_COLUMN,
    NAME,
    GenericStrategy,
    Printed,
    get_path,
    name_of,
)
from draemu.apiserver.registry.strategy import Column, Context, Obj

GROUP = "networking.k8s.io"
PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
POLICY_TYPES = ["Egress", "Ingress"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
_LOAD_BALANCER_WIDTH = 16


def _hosts(obj: Obj) -> str:
    rules = get_path(obj, "spec.rules") or []
    hosts = [r["host"] for r in rules[:3] if r.get("host")]
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if len(rules) > 3 else text


def _address(obj: Obj) -> str:
    found = sorted({i.get("ip") or i.get("hostname") or ""
                    for i in get_path(obj, "status.loadBalancer.ingress") or []} - {""})
    text = ",".join(found)
    if len(text) > _LOAD_BALANCER_WIDTH:
        text = text[:_LOAD_BALANCER_WIDTH - 3] + "..."
    return text


def _backend_errors(backend: Obj, path: Path) -> list[FieldError]:
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [invalid(path, "", "cannot set both service and resource backends")]
    if service is None and resource is None:
        return [invalid(path, "", "one backend type must be specified")]
    if resource is not None:
        errs = [required(path.child("resource", name)) for name in ("kind", "name")
                if not resource.get(name)]
        return errs
    errs = dns_label(service.get("name") or "", path.child("service", "name")) \
        if service.get("name") else [required(path.child("service", "name"))]
    port = service.get("port") or {}
    p = path.child("service", "port")
    if port.get("name") and port.get("number"):
        errs.append(invalid(p, port, "cannot set both port name & port number"))
    elif port.get("name"):
        errs += dns_label(port["name"], p.child("name"))
    elif port.get("number") is not None:
        if not 1 <= port["number"] <= 65535:
            errs.append(invalid(p.child("number"), port["number"], inclusive_range(1, 65535)))
    else:
        errs.append(required(p, "port name or number is required"))
    return errs


class IngressStrategy(GenericStrategy):
    group = GROUP
    kind = "Ingress"
    resource = "ingresses"
    singular = "ingress"
    short_names = ("ing",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    printer = (
        NAME,
        Printed(Column("Class", description="The name of the IngressClass resource that "
                       "should be used for ingress"),
                lambda o: get_path(o, "spec.ingressClassName") or "<none>"),
        Printed(Column("Hosts", description="Hosts that incoming requests are matched "
                       "against before the ingress rule"), _hosts),
        Printed(Column("Address", description="Address is a list containing ingress points "
                       "for the load-balancer"), _address),
        Printed(Column("Ports", description="Ports of TLS configurations that open"),
                lambda o: "80, 443" if get_path(o, "spec.tls") else "80"),
        AGE_COLUMN,
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        if spec.get("ingressClassName"):
            errs += dns_subdomain(spec["ingressClassName"], path.child("ingressClassName"))
        if spec.get("defaultBackend") is not None:
            errs += _backend_errors(spec["defaultBackend"], path.child("defaultBackend"))
        elif not spec.get("rules"):
            errs.append(invalid(path, spec, "either `defaultBackend` or `rules` must be "
                                "specified"))
        for i, rule in enumerate(spec.get("rules") or []):
            p = path.child("rules").index(i)
            host = rule.get("host") or ""
            if host:
                errs += dns_subdomain(host.removeprefix("*."), p.child("host"))
            http = rule.get("http")
            if http is None:
                continue
            paths = http.get("paths") or []
            if not paths:
                errs.append(required(p.child("http", "paths")))
            for j, item in enumerate(paths):
                q = p.child("http", "paths").index(j)
                kind = item.get("pathType")
                if kind is None:
                    errs.append(required(q.child("pathType"), "pathType must be specified"))
                elif kind not in PATH_TYPES:
                    errs.append(not_supported(q.child("pathType"), kind, PATH_TYPES))
                elif kind in ("Exact", "Prefix") and not str(item.get("path") or "").startswith(
                        "/"):
                    errs.append(invalid(q.child("path"), item.get("path") or "",
                                        "must be an absolute path"))
                errs += _backend_errors(item.get("backend") or {}, q.child("backend"))
        for i, tls in enumerate(spec.get("tls") or []):
            for j, host in enumerate(tls.get("hosts") or []):
                errs += dns_subdomain(host.removeprefix("*."),
                                      path.child("tls").index(i).child("hosts").index(j))
        return errs


def _class_name(obj: Obj) -> str:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    default = annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"
    return f"{name_of(obj)} (default)" if default else name_of(obj)


def _parameters(obj: Obj) -> str:
    ref = get_path(obj, "spec.parameters")
    if not ref:
        return "<none>"
    kind = ref.get("kind", "") + (f".{ref['apiGroup']}" if ref.get("apiGroup") else "")
    return f"{kind}/{ref.get('name', '')}"


class IngressClassStrategy(GenericStrategy):
    group = GROUP
    kind = "IngressClass"
    resource = "ingressclasses"
    singular = "ingressclass"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    immutable_fields = ("spec.controller",)
    printer = (
        Printed(NAME.column, _class_name),
        Printed(Column("Controller", description="Controller refers to the name of the "
                       "controller that should handle this class."),
                lambda o: get_path(o, "spec.controller") or ""),
        Printed(Column("Parameters", description="Parameters is a link to a custom resource "
                       "containing additional configuration for the controller."),
                _parameters),
        AGE_COLUMN,
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        controller = get_path(obj, "spec.controller") or ""
        path = Path("spec").child("controller")
        if not controller:
            return []  # upstream allows an empty controller
        if len(controller) > 250:
            return [invalid(path, controller, "must be no more than 250 characters")]
        domain = controller.split("/", 1)[0]
        if "/" not in controller:
            return [invalid(path, controller, "must be a domain-prefixed path (such as "
                            "\"acme.io/foo\")")]
        return dns_subdomain(domain, path)


class NetworkPolicyStrategy(GenericStrategy):
    group = GROUP
    kind = "NetworkPolicy"
    resource = "networkpolicies"
    singular = "networkpolicy"
    short_names = ("netpol",)
    versions = ("v1",)
    storage_version = "v1"
    printer = (
        NAME,
        Printed(Column("Pod-Selector", description="podSelector selects the pods to which "
                       "this NetworkPolicy object applies."), lambda o: _selector(o)),
        AGE_COLUMN,
    )

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if not spec.get("policyTypes"):
            spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
        for direction in ("ingress", "egress"):
            for rule in spec.get(direction) or []:
                for port in (rule.get("ports") or []) if isinstance(rule, dict) else []:
                    if isinstance(port, dict) and not port.get("protocol"):
                        port["protocol"] = "TCP"

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = validate_label_selector(spec.get("podSelector") or {}, path.child("podSelector"))
        types = spec.get("policyTypes") or []
        for i, kind in enumerate(types):
            if kind not in POLICY_TYPES:
                errs.append(not_supported(path.child("policyTypes").index(i), kind,
                                          POLICY_TYPES))
        if len(types) > 2:
            errs.append(too_many(path.child("policyTypes"), len(types), 2))
        for direction, peers in (("ingress", "from"), ("egress", "to")):
            for i, rule in enumerate(spec.get(direction) or []):
                p = path.child(direction).index(i)
                for j, port in enumerate(rule.get("ports") or []):
                    q = p.child("ports").index(j)
                    if port.get("protocol") not in PROTOCOLS:
                        errs.append(not_supported(q.child("protocol"), port.get("protocol"),
                                                  PROTOCOLS))
                    number, end = port.get("port"), port.get("endPort")
                    if isinstance(number, int) and not 1 <= number <= 65535:
                        errs.append(invalid(q.child("port"), number, inclusive_range(1, 65535)))
                    if end is not None:
                        if not isinstance(number, int):
                            errs.append(required(q.child("port"), "must specify port when "
                                                 "endPort is specified"))
                        elif end < number:
                            errs.append(invalid(q.child("endPort"), end, "must be greater "
                                                "than or equal to `port`"))
                for j, peer in enumerate(rule.get(peers) or []):
                    q = p.child(peers).index(j)
                    for name in ("podSelector", "namespaceSelector"):
                        if peer.get(name) is not None:
                            errs += validate_label_selector(peer[name], q.child(name))
        return errs


def _selector(obj: Obj) -> str:
    return label_selector_string(get_path(obj, "spec.podSelector") or {})


STRATEGIES = [IngressStrategy(), IngressClassStrategy(), NetworkPolicyStrategy()]
