"""A small declarative way to build proto3 files and get their message classes: the
kubelet plugin protocols (draemu/kubeletapi/) and etcd's v3 API (store/etcdrpc.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
    "bool": _F.TYPE_BOOL,
    "int64": _F.TYPE_INT64,
    "uint32": _F.TYPE_UINT32,
    "uint64": _F.TYPE_UINT64,
}


@dataclass(frozen=True)
class Field:
    name: str
    number: int
    type: str  # a scalar name, a message name of this file, or "enum:Name"
    repeated: bool = False
    optional: bool = False  # proto3 `optional` (explicit presence)


@dataclass(frozen=True)
class Map:
    name: str
    number: int
    key: str
    value: str  # a message name of this file


@dataclass
class ProtoFile:
    """One .proto file: `package`, its messages, enums and services."""

    name: str
    package: str
    messages: dict[str, list[Field | Map]] = field(default_factory=dict)
    enums: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    services: dict[str, dict[str, tuple[str, str, bool]]] = field(default_factory=dict)

    def descriptor(self) -> descriptor_pb2.FileDescriptorProto:
        fdp = descriptor_pb2.FileDescriptorProto(name=self.name, package=self.package,
                                                 syntax="proto3")
        for name, values in self.enums.items():
            enum = fdp.enum_type.add(name=name)
            for value_name, number in values:
                enum.value.add(name=value_name, number=number)
        for name, fields in self.messages.items():
            self._message(fdp.message_type.add(name=name), fields)
        for name, methods in self.services.items():
            service = fdp.service.add(name=name)
            for method, (request, response, streaming) in methods.items():
                service.method.add(name=method, input_type=self._ref(request),
                                   output_type=self._ref(response),
                                   server_streaming=streaming)
        return fdp

    def _ref(self, type_name: str) -> str:
        return f".{self.package}.{type_name}"

    def _message(self, msg: descriptor_pb2.DescriptorProto, fields: list[Field | Map]) -> None:
        for item in fields:
            if isinstance(item, Map):
                self._map(msg, item)
                continue
            fd = msg.field.add(name=item.name, number=item.number, json_name=_camel(item.name))
            fd.label = _F.LABEL_REPEATED if item.repeated else _F.LABEL_OPTIONAL
            self._set_type(fd, item.type)
            if item.optional:
                # proto3 `optional` is a synthetic one-field oneof named `_<field>`.
                fd.proto3_optional = True
                fd.oneof_index = len(msg.oneof_decl)
                msg.oneof_decl.add(name=f"_{item.name}")

    def _map(self, msg: descriptor_pb2.DescriptorProto, item: Map) -> None:
        entry_name = "".join(p.capitalize() for p in item.name.split("_")) + "Entry"
        entry = msg.nested_type.add(name=entry_name)
        entry.options.map_entry = True
        key = entry.field.add(name="key", number=1, json_name="key", label=_F.LABEL_OPTIONAL)
        self._set_type(key, item.key)
        value = entry.field.add(name="value", number=2, json_name="value",
                                label=_F.LABEL_OPTIONAL)
        self._set_type(value, item.value)
        fd = msg.field.add(name=item.name, number=item.number, json_name=_camel(item.name),
                           label=_F.LABEL_REPEATED, type=_F.TYPE_MESSAGE)
        fd.type_name = f"{self._ref(msg.name)}.{entry_name}"

    def _set_type(self, fd: descriptor_pb2.FieldDescriptorProto, type_name: str) -> None:
        if type_name in _SCALARS:
            fd.type = _SCALARS[type_name]
        elif type_name.startswith("enum:"):
            fd.type = _F.TYPE_ENUM
            fd.type_name = self._ref(type_name[5:])
        else:
            fd.type = _F.TYPE_MESSAGE
            fd.type_name = self._ref(type_name)

    def build(self) -> dict[str, Any]:
        """Register the file in the default pool; returns message classes and enums by name."""
        pool = descriptor_pool.Default()
        try:
            file_desc = pool.FindFileByName(self.name)
        except KeyError:
            pool.AddSerializedFile(self.descriptor().SerializeToString())
            file_desc = pool.FindFileByName(self.name)
        out: dict[str, Any] = {}
        for name in self.messages:
            out[name] = message_factory.GetMessageClass(file_desc.message_types_by_name[name])
        for name in self.enums:
            out[name] = file_desc.enum_types_by_name[name]
        return out

    def method_path(self, service: str, method: str) -> str:
        return f"/{self.package}.{service}/{method}"


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p.capitalize() for p in rest)
