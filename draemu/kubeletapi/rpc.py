"""gRPC plumbing for the plugin protocols: server handlers and client calls by method path.

Servers and clients are grpc.aio objects on unix sockets. Handlers are registered under
upstream's full service names, so Go kubelets and Go plugins interoperate.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from draemu.kubeletapi import pluginregistration as reg
from draemu.kubeletapi.dra import DRAVersion
from draemu.kubeletapi.health import HealthVersion

Unary = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
Streaming = Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]


def unix_target(path: str) -> str:
    return f"unix://{path}" if path.startswith("/") else f"unix:{path}"


# A unix socket address holds 107 bytes of path. The kubelet dials sockets whose names a
# plugin chose to fit under /var/lib/kubelet; under a node's longer folder they may not.
UNIX_PATH_MAX = 107
_folders: dict[str, int] = {}  # folder -> an O_PATH descriptor of it, for long paths


def dial_target(path: str) -> str:
    """The gRPC target that dials the unix socket `path`; a path too long for a socket
    address is reached as /proc/self/fd/<folder descriptor>/<name>."""
    if len(os.fsencode(path)) <= UNIX_PATH_MAX:
        return unix_target(path)
    folder, name = os.path.split(path)
    fd = _folders.get(folder)
    try:
        if fd is not None and os.fstat(fd).st_ino != os.stat(folder).st_ino:
            os.close(_folders.pop(folder))  # the folder was made anew
            fd = None
        if fd is None:
            fd = _folders[folder] = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    except OSError:
        return unix_target(path)  # missing: the dial fails with its own error
    return unix_target(f"/proc/self/fd/{fd}/{name}")


def _unary(fn: Unary, request: Any, response: Any) -> grpc.RpcMethodHandler:
    return grpc.unary_unary_rpc_method_handler(
        fn, request_deserializer=request.FromString,
        response_serializer=response.SerializeToString)


def registration_handler(get_info: Unary, notify: Unary) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(reg.SERVICE, {
        "GetInfo": _unary(get_info, reg.InfoRequest, reg.PluginInfo),
        "NotifyRegistrationStatus": _unary(notify, reg.RegistrationStatus,
                                           reg.RegistrationStatusResponse),
    })


def dra_handler(version: DRAVersion, prepare: Unary, unprepare: Unary) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(version.service, {
        "NodePrepareResources": _unary(prepare, version.NodePrepareResourcesRequest,
                                       version.NodePrepareResourcesResponse),
        "NodeUnprepareResources": _unary(unprepare, version.NodeUnprepareResourcesRequest,
                                         version.NodeUnprepareResourcesResponse),
    })


def health_handler(version: HealthVersion, watch: Streaming) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(version.service, {
        "NodeWatchResources": grpc.unary_stream_rpc_method_handler(
            watch, request_deserializer=version.NodeWatchResourcesRequest.FromString,
            response_serializer=version.NodeWatchResourcesResponse.SerializeToString),
    })


class RegistrationClient:
    """What the kubelet calls on a plugin's registration socket."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.get_info = channel.unary_unary(
            reg.GET_INFO, request_serializer=reg.InfoRequest.SerializeToString,
            response_deserializer=reg.PluginInfo.FromString)
        self.notify_registration_status = channel.unary_unary(
            reg.NOTIFY_REGISTRATION_STATUS,
            request_serializer=reg.RegistrationStatus.SerializeToString,
            response_deserializer=reg.RegistrationStatusResponse.FromString)


class DRAClient:
    """What the kubelet calls on a DRA plugin's service socket, in one protocol version."""

    def __init__(self, channel: grpc.aio.Channel, version: DRAVersion) -> None:
        self.version = version
        self.node_prepare_resources = channel.unary_unary(
            version.prepare_path,
            request_serializer=version.NodePrepareResourcesRequest.SerializeToString,
            response_deserializer=version.NodePrepareResourcesResponse.FromString)
        self.node_unprepare_resources = channel.unary_unary(
            version.unprepare_path,
            request_serializer=version.NodeUnprepareResourcesRequest.SerializeToString,
            response_deserializer=version.NodeUnprepareResourcesResponse.FromString)


class HealthClient:
    def __init__(self, channel: grpc.aio.Channel, version: HealthVersion) -> None:
        self.version = version
        self.node_watch_resources = channel.unary_stream(
            version.watch_path,
            request_serializer=version.NodeWatchResourcesRequest.SerializeToString,
            response_deserializer=version.NodeWatchResourcesResponse.FromString)
