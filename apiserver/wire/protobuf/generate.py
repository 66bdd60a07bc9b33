"""Writes `messages.py`, the message tables of the protobuf decoder, from upstream's sources.

The facts come from two files per API package of the k8s.io/api and k8s.io/apimachinery
Go modules: `generated.proto` (field numbers, wire types, message types) and the Go
struct definitions beside it (the JSON name, `omitempty`, whether the Go field is a
pointer, and whether its JSON is inlined into the parent). Only messages reachable from
the kinds draemu accepts as request bodies are written. How to fetch the modules and run
it: see README.md beside this file.
"""

from __future__ import annotations

import argparse
import pprint
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# Request-body kinds per API package (group/version as in the Go module's folders).
ROOTS: dict[str, tuple[str, ...]] = {
    "core/v1": ("Namespace", "Node", "Pod", "Event", "ConfigMap", "Secret",
                "ServiceAccount", "Binding", "Service", "Endpoints", "PersistentVolume",
                "PersistentVolumeClaim", "ReplicationController", "ResourceQuota",
                "LimitRange", "PodTemplate"),
    "apps/v1": ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "ControllerRevision"),
    "autoscaling/v1": ("Scale",),
    "autoscaling/v2": ("HorizontalPodAutoscaler",),
    "batch/v1": ("Job", "CronJob"),
    "coordination/v1": ("Lease",),
    "discovery/v1": ("EndpointSlice",),
    "events/v1": ("Event",),
    "authorization/v1": ("SelfSubjectAccessReview", "SelfSubjectRulesReview",
                         "SubjectAccessReview", "LocalSubjectAccessReview"),
    "authentication/v1": ("SelfSubjectReview", "TokenRequest", "TokenReview"),
    "policy/v1": ("Eviction", "PodDisruptionBudget"),
    "rbac/v1": ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"),
    "scheduling/v1": ("PriorityClass",),
    "scheduling/v1beta1": ("Workload", "PodGroup"),
    "storage/v1": ("StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity",
                   "VolumeAttachment", "VolumeAttributesClass"),
    "certificates/v1": ("CertificateSigningRequest", "ClusterTrustBundle",
                        "PodCertificateRequest"),
    "networking/v1": ("ServiceCIDR", "IPAddress", "Ingress", "IngressClass", "NetworkPolicy"),
    "node/v1": ("RuntimeClass",),
    "storagemigration/v1": ("StorageVersionMigration",),
    "admissionregistration/v1": ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                                 "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
                                 "ValidatingWebhookConfiguration",
                                 "MutatingWebhookConfiguration"),
    "resource/v1": ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice",
                    "DeviceTaintRule"),
    "resource/v1beta2": ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate",
                         "ResourceSlice", "DeviceTaintRule"),
    "resource/v1beta1": ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate",
                         "ResourceSlice"),
    "resource/v1alpha3": ("DeviceTaintRule", "ResourcePoolStatusRequest"),
    "flowcontrol/v1": ("FlowSchema", "PriorityLevelConfiguration"),
    # From the k8s.io/apiextensions-apiserver and k8s.io/kube-aggregator modules.
    "apiextensions/v1": ("CustomResourceDefinition",),
    "apiregistration/v1": ("APIService",),
}
# API modules beside k8s.io/api whose kinds are roots: proto package prefix (the Go
# module's import path with '_' for '-') of their `pkg/apis/<group>/<version>` folders.
EXTRA_MODULES = ("k8s.io.apiextensions_apiserver.pkg.apis.", "k8s.io.kube_aggregator.pkg.apis.")
# apimachinery packages: proto package -> (folder, short name).
MACHINERY = {
    "k8s.io.apimachinery.pkg.apis.meta.v1": ("pkg/apis/meta/v1", "meta.v1"),
    "k8s.io.apimachinery.pkg.runtime": ("pkg/runtime", "runtime"),
    "k8s.io.apimachinery.pkg.api.resource": ("pkg/api/resource", "api.resource"),
    "k8s.io.apimachinery.pkg.util.intstr": ("pkg/util/intstr", "util.intstr"),
}
META_ROOTS = ("DeleteOptions",)
# Messages whose JSON form is not their fields (custom Go marshalling): the decoder
# knows them by these names.
SPECIAL = {"meta.v1.Time", "meta.v1.MicroTime", "meta.v1.FieldsV1",
           "api.resource.Quantity", "util.intstr.IntOrString", "runtime.RawExtension",
           "apiextensions.v1.JSON"}
# Custom marshalling over messages of their own (a schema, or a bool, or a list): the
# decoder knows them by name too, and their fields are tabled for it.
UNION = {"apiextensions.v1.JSONSchemaPropsOrArray", "apiextensions.v1.JSONSchemaPropsOrBool",
         "apiextensions.v1.JSONSchemaPropsOrStringArray"}
SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float",
           "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64"}
DECODED_SCALARS = {"string", "bytes", "bool", "int32", "int64", "double"}  # what decode.py reads

_MESSAGE = re.compile(r"^message (\w+) \{$")
_FIELD = re.compile(r"^\s+(optional|repeated) ([\w.]+) (\w+) = (\d+);")
_MAP = re.compile(r"^\s+map<([\w.]+), ([\w.]+)> (\w+) = (\d+);")
_STRUCT = re.compile(r"^type (\w+) struct \{$")
_SLICE_TYPE = re.compile(r"^type (\w+) \[\]")
_GO_FIELD = re.compile(r"^\t(?:(\w+)\s+)?([^\s`]+)\s+`([^`]*)`")


@dataclass
class ProtoField:
    number: int
    name: str
    label: str  # "optional", "repeated" or "map"
    type: str  # scalar name or message reference (short name)
    value_type: str = ""  # for maps


@dataclass
class GoField:
    json: str
    omitempty: bool
    omitzero: bool
    pointer: bool
    inline: bool


def short_name(package: str, ref: str) -> str:
    """`.k8s.io.api.core.v1.Pod`, `k8s.io.api.core.v1.Pod` or `Pod` (in package) ->
    `core.v1.Pod`."""
    if ref in SCALARS:
        return ref
    ref = ref.lstrip(".")
    if "." not in ref:
        return f"{package}.{ref}"
    pkg, _, name = ref.rpartition(".")
    if pkg in MACHINERY:
        return f"{MACHINERY[pkg][1]}.{name}"
    for prefix in ("k8s.io.api.", *EXTRA_MODULES):
        pkg = pkg.removeprefix(prefix)
    return f"{pkg}.{name}"


def parse_proto(path: Path, package: str) -> dict[str, list[ProtoField]]:
    messages: dict[str, list[ProtoField]] = {}
    current: list[ProtoField] | None = None
    for line in path.read_text().splitlines():
        if m := _MESSAGE.match(line):
            current = messages.setdefault(f"{package}.{m.group(1)}", [])
        elif line == "}":
            current = None
        elif current is not None and (m := _FIELD.match(line)):
            current.append(ProtoField(int(m.group(4)), m.group(3), m.group(1),
                                      short_name(package, m.group(2))))
        elif current is not None and (m := _MAP.match(line)):
            current.append(ProtoField(int(m.group(4)), m.group(3), "map",
                                      short_name(package, m.group(1)),
                                      short_name(package, m.group(2))))
    return messages


def parse_go(folder: Path, package: str) -> tuple[dict[str, dict[int, GoField]], set[str]]:
    """Struct fields by message and protobuf field number; the named slice types."""
    structs: dict[str, dict[int, GoField]] = {}
    slices: set[str] = set()
    for path in sorted(folder.glob("*.go")):
        if path.name.endswith("_test.go") or path.name.startswith("zz_generated"):
            continue
        current: dict[int, GoField] | None = None
        for line in path.read_text().splitlines():
            if m := _STRUCT.match(line):
                current = structs.setdefault(f"{package}.{m.group(1)}", {})
            elif m := _SLICE_TYPE.match(line):
                slices.add(f"{package}.{m.group(1)}")
            elif line == "}":
                current = None
            elif current is not None and (m := _GO_FIELD.match(line)):
                name, gotype, tags = m.groups()
                proto = re.search(r'protobuf:"\w+,(\d+),', tags)
                json_tag = re.search(r'json:"([^"]*)"', tags)
                if not proto or not json_tag:
                    continue
                json_name, *options = json_tag.group(1).split(",")
                current[int(proto.group(1))] = GoField(
                    json=json_name, omitempty="omitempty" in options,
                    omitzero="omitzero" in options,
                    pointer=gotype.startswith("*"),
                    inline=name is None and (json_name == "" or "inline" in options))
    return structs, slices


def load(api: Path, machinery: Path, extra: list[Path]
         ) -> tuple[dict[str, list[ProtoField]], dict[str, dict[int, GoField]], set[str]]:
    protos: dict[str, list[ProtoField]] = {}
    go: dict[str, dict[int, GoField]] = {}
    slices: set[str] = set()
    # Every API package: the roots reach into others (pods into scheduling, for one).
    folders = [(proto.parent, str(proto.parent.relative_to(api)).replace("/", "."))
               for proto in sorted(api.glob("*/*/generated.proto"))]
    for module in extra:
        apis = module / "pkg" / "apis"
        folders += [(proto.parent, str(proto.parent.relative_to(apis)).replace("/", "."))
                    for proto in sorted(apis.glob("*/*/generated.proto"))]
    folders += [(machinery / folder, short) for folder, short in MACHINERY.values()]
    for folder, package in folders:
        protos.update(parse_proto(folder / "generated.proto", package))
        structs, named = parse_go(folder, package)
        go.update(structs)
        slices |= named
    return protos, go, slices


def root_messages() -> list[str]:
    names = [f"{gv.replace('/', '.')}.{kind}" for gv, kinds in ROOTS.items() for kind in kinds]
    return names + [f"meta.v1.{kind}" for kind in META_ROOTS]


def reachable(protos: dict[str, list[ProtoField]]) -> list[str]:
    todo = root_messages()
    seen: list[str] = []
    while todo:
        name = todo.pop()
        if name in seen or name in SCALARS:
            continue
        if name not in protos:
            raise SystemExit(f"message {name} not found")
        seen.append(name)
        if name in SPECIAL:
            continue
        for f in protos[name]:
            todo += [t for t in (f.type, f.value_type) if t and t not in SCALARS]
    return sorted(seen)


def table(protos: dict[str, list[ProtoField]], go: dict[str, dict[int, GoField]],
          slices: set[str]) -> tuple[dict[str, tuple], list[str]]:
    """name -> ((number, json name, type, value type, flags), ...); the list wrappers."""
    messages: dict[str, tuple] = {}
    wrappers: list[str] = []
    for name in reachable(protos):
        if name in SPECIAL:
            continue
        if name in slices:
            wrappers.append(name)  # a named Go slice: JSON is the list of its `items`
        fields = []
        for f in protos[name]:
            g = go.get(name, {}).get(f.number)
            if g is None and name not in slices and name not in UNION:
                raise SystemExit(f"{name}.{f.name}: no Go struct field")
            flags = ""
            if f.label == "repeated":
                flags += "r"
            if f.label == "map":
                flags += "m"
            if g is not None:
                flags += "p" * g.pointer + "o" * g.omitempty + "z" * g.omitzero \
                    + "i" * g.inline
            json_name = g.json if g is not None and not g.inline else f.name
            fields.append((f.number, json_name, f.type, f.value_type, flags))
        messages[name] = tuple(fields)
    return messages, sorted(wrappers)


def render(messages: dict[str, tuple], wrappers: list[str], source: str) -> str:
    body = pprint.pformat(messages, width=96, compact=True)
    return (
        '"""Protobuf message tables of the Kubernetes API kinds accepted as request bodies.\n\n'
        f"Generated by `apiserver/wire/protobuf/generate.py` from {source}; do not\n"
        "edit. A field is (number, JSON name, type, map value type, flags); flags: r\n"
        "repeated, m map, p Go pointer (zero values are meaningful), o omitempty, i JSON\n"
        'inlined into the parent.\n"""\n\n'
        "# ruff: noqa: E501\n"
        "MESSAGES: dict[str, tuple[tuple[int, str, str, str, str], ...]] = \\\n"
        f"{body}\n\n"
        f"WRAPPERS: frozenset[str] = frozenset({wrappers!r})\n\n"
        "# The messages of the kinds taken as request bodies.\n"
        f"KINDS: frozenset[str] = frozenset({sorted(root_messages())!r})\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("api", type=Path, help="the k8s.io/api module folder")
    parser.add_argument("apimachinery", type=Path, help="the k8s.io/apimachinery module folder")
    parser.add_argument("extra", type=Path, nargs="*",
                        help="the k8s.io/apiextensions-apiserver and k8s.io/kube-aggregator "
                             "module folders")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("messages.py"))
    args = parser.parse_args(argv)
    protos, go, slices = load(args.api, args.apimachinery, args.extra)
    messages, wrappers = table(protos, go, slices)
    used = {t for fields in messages.values() for f in fields for t in f[2:4]}
    if unsupported := used & SCALARS - DECODED_SCALARS:
        raise SystemExit(f"the decoder does not read scalar types {sorted(unsupported)}")
    source = ", ".join(p.name for p in (args.api, args.apimachinery, *args.extra))
    args.out.write_text(render(messages, wrappers, source))
    print(f"{len(messages)} messages written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
