"""etcd's v3 API as the etcd store speaks it: the messages of etcd's rpc.proto and
kv.proto that the store sends and reads, and a client of a cluster's endpoints.

The messages are declared field by field as upstream numbers and types them (the wire
format is all the server sees), under a package of draemu's own: a process may also hold
etcd's generated modules (a client library) in protobuf's default pool. A `oneof` member
is declared as a proto3 `optional` field: the same bytes on the wire, with presence, so a
compare against 0 (`create_revision == 0`: the key is absent) is sent.

The client holds one gRPC channel per endpoint and uses one at a time, as etcd's own
client does for a request: reads go to the next endpoint when one is unavailable; a
write goes to the next only when it was never sent (the channel could not connect),
since a write that reached a member may have been applied (etcd's clientv3 retries
mutations on the same condition). Everything else is the caller's to decide.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import grpc

from draemu.log import get_logger
from draemu.protoschema import Field, ProtoFile
from draemu.store.errors import StoreError, ValueTooLargeError

log = get_logger("store")

_F = Field
_HEADER = _F("header", 1, "ResponseHeader")
_FILE = ProtoFile(
    name="draemu/store/etcd_v3.proto",
    package="draemu.etcdserverpb",
    enums={
        # mvccpb.Event.EventType, etcdserverpb.Compare.CompareResult and .CompareTarget
        "EventType": [("PUT", 0), ("DELETE", 1)],
        "CompareResult": [("EQUAL", 0), ("GREATER", 1), ("LESS", 2), ("NOT_EQUAL", 3)],
        "CompareTarget": [("VERSION", 0), ("CREATE", 1), ("MOD", 2), ("VALUE", 3),
                          ("LEASE", 4)],
    },
    messages={
        "ResponseHeader": [_F("cluster_id", 1, "uint64"), _F("member_id", 2, "uint64"),
                           _F("revision", 3, "int64"), _F("raft_term", 4, "uint64")],
        "KeyValue": [_F("key", 1, "bytes"), _F("create_revision", 2, "int64"),
                     _F("mod_revision", 3, "int64"), _F("version", 4, "int64"),
                     _F("value", 5, "bytes"), _F("lease", 6, "int64")],
        "Event": [_F("type", 1, "enum:EventType"), _F("kv", 2, "KeyValue"),
                  _F("prev_kv", 3, "KeyValue")],
        "RangeRequest": [_F("key", 1, "bytes"), _F("range_end", 2, "bytes"),
                         _F("limit", 3, "int64"), _F("revision", 4, "int64"),
                         _F("serializable", 7, "bool"), _F("keys_only", 8, "bool"),
                         _F("count_only", 9, "bool")],
        "RangeResponse": [_HEADER, _F("kvs", 2, "KeyValue", repeated=True),
                          _F("more", 3, "bool"), _F("count", 4, "int64")],
        "PutRequest": [_F("key", 1, "bytes"), _F("value", 2, "bytes"),
                       _F("lease", 3, "int64"), _F("prev_kv", 4, "bool")],
        "PutResponse": [_HEADER, _F("prev_kv", 2, "KeyValue")],
        "DeleteRangeRequest": [_F("key", 1, "bytes"), _F("range_end", 2, "bytes"),
                               _F("prev_kv", 3, "bool")],
        "DeleteRangeResponse": [_HEADER, _F("deleted", 2, "int64"),
                                _F("prev_kvs", 3, "KeyValue", repeated=True)],
        # oneof request / response
        "RequestOp": [_F("request_range", 1, "RangeRequest"),
                      _F("request_put", 2, "PutRequest"),
                      _F("request_delete_range", 3, "DeleteRangeRequest")],
        "ResponseOp": [_F("response_range", 1, "RangeResponse"),
                       _F("response_put", 2, "PutResponse"),
                       _F("response_delete_range", 3, "DeleteRangeResponse")],
        # oneof target_union: version, create_revision, mod_revision, value
        "Compare": [_F("result", 1, "enum:CompareResult"),
                    _F("target", 2, "enum:CompareTarget"), _F("key", 3, "bytes"),
                    _F("version", 4, "int64", optional=True),
                    _F("create_revision", 5, "int64", optional=True),
                    _F("mod_revision", 6, "int64", optional=True),
                    _F("value", 7, "bytes", optional=True)],
        "TxnRequest": [_F("compare", 1, "Compare", repeated=True),
                       _F("success", 2, "RequestOp", repeated=True),
                       _F("failure", 3, "RequestOp", repeated=True)],
        "TxnResponse": [_HEADER, _F("succeeded", 2, "bool"),
                        _F("responses", 3, "ResponseOp", repeated=True)],
        "CompactionRequest": [_F("revision", 1, "int64"), _F("physical", 2, "bool")],
        "CompactionResponse": [_HEADER],
        # oneof request_union
        "WatchRequest": [_F("create_request", 1, "WatchCreateRequest"),
                         _F("cancel_request", 2, "WatchCancelRequest"),
                         _F("progress_request", 3, "WatchProgressRequest")],
        "WatchCreateRequest": [_F("key", 1, "bytes"), _F("range_end", 2, "bytes"),
                               _F("start_revision", 3, "int64"),
                               _F("progress_notify", 4, "bool"), _F("prev_kv", 6, "bool"),
                               _F("watch_id", 7, "int64"), _F("fragment", 8, "bool")],
        "WatchCancelRequest": [_F("watch_id", 1, "int64")],
        "WatchProgressRequest": [],
        "WatchResponse": [_HEADER, _F("watch_id", 2, "int64"), _F("created", 3, "bool"),
                          _F("canceled", 4, "bool"), _F("compact_revision", 5, "int64"),
                          _F("cancel_reason", 6, "string"), _F("fragment", 7, "bool"),
                          _F("events", 11, "Event", repeated=True)],
        "StatusRequest": [],
        "StatusResponse": [_HEADER, _F("version", 2, "string")],
    },
)
pb: Any = type("pb", (), _FILE.build())  # the message classes and enums, by name

EQUAL, GREATER = 0, 1  # CompareResult
VERSION, CREATE, MOD = 0, 1, 2  # CompareTarget
PUT, DELETE = 0, 1  # EventType

_RANGE = "/etcdserverpb.KV/Range"
_TXN = "/etcdserverpb.KV/Txn"
_COMPACT = "/etcdserverpb.KV/Compact"
_WATCH = "/etcdserverpb.Watch/Watch"
_STATUS = "/etcdserverpb.Maintenance/Status"

DEFAULT_PORT = 2379
CALL_TIMEOUT = 30.0  # seconds for a request, retries on other endpoints included
CONNECT_WAIT = 2.0  # seconds a write waits for an endpoint's connection before the next
# etcd's Go client sends at most 2 MiB in one request (clientv3's MaxCallSendMsgSize);
# kube-apiserver reports a larger object as that client's error (see _too_large).
MAX_SEND_BYTES = 2 * 1024 * 1024
_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", MAX_SEND_BYTES),
    # A member that vanished without closing its connections is noticed within ~40 s
    # (etcd refuses pings more often than every 5 s).
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    # A restarted member is reconnected to within 2 s, not gRPC's default of up to 120 s.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]
# Watches end on a member that lost its leader instead of waiting there (as clientv3's
# WithRequireLeader): the store watches again through another endpoint.
_REQUIRE_LEADER = (("hasleader", "true"),)
_QUERY = ("cafile", "certfile", "keyfile")


@dataclass(frozen=True)
class EtcdConfig:
    """Where the cluster is and how to reach it, from an etcd:// URL."""

    endpoints: tuple[tuple[str, int], ...]
    prefix: str = ""
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None

    @property
    def tls(self) -> bool:
        return bool(self.cafile or self.certfile or self.keyfile)

    def shown(self) -> str:
        hosts = ",".join(_host_port(h, p) for h, p in self.endpoints)
        return f"etcd://{hosts}{self.prefix}" + (" (TLS)" if self.tls else "")


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_url(url: str) -> EtcdConfig:
    """`etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX][?cafile=F&certfile=F&keyfile=F]`.

    PREFIX goes before every key (none by default: the keys are kube-apiserver's own,
    /registry/...); the files select TLS: the CA that signed the members' certificates,
    and a client certificate and its key when the members ask for one.
    """
    rest = url.removeprefix("etcd://")
    if rest == url:
        raise StoreError(f"invalid etcd URL {url!r}: must start with etcd://")
    rest, _, query = rest.partition("?")
    hosts, slash, path = rest.partition("/")
    endpoints = tuple(_endpoint(url, item) for item in hosts.split(","))
    prefix = ("/" + path.strip("/")) if slash and path.strip("/") else ""
    if any(ord(c) < 0x20 or c == "\x7f" for c in prefix) or "//" in prefix:
        raise StoreError(f"invalid etcd URL {url!r}: the key prefix {prefix!r} must be a "
                         "path such as /draemu")
    files: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in _QUERY:
            raise StoreError(f"invalid etcd URL {url!r}: unknown parameter {name!r} "
                             f"(known: {', '.join(_QUERY)})")
        if not value:
            raise StoreError(f"invalid etcd URL {url!r}: {name} needs a file name")
        files[name] = value
    if ("certfile" in files) != ("keyfile" in files):
        raise StoreError(f"invalid etcd URL {url!r}: certfile and keyfile go together "
                         "(a client certificate and its key)")
    return EtcdConfig(endpoints, prefix, **files)


def _endpoint(url: str, item: str) -> tuple[str, int]:
    item = item.strip()
    if item.startswith("["):
        host, _, port = item[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = item.rpartition(":") if item.count(":") == 1 else (item, "", "")
    if not host:
        raise StoreError(f"invalid etcd URL {url!r}: give the members as "
                         "etcd://HOST:PORT[,HOST:PORT...]")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise StoreError(f"invalid etcd URL {url!r}: bad port in {item!r}")
    return host, int(port) if port else DEFAULT_PORT


def with_tls_files(url: str, cafile: str | None, certfile: str | None,
                   keyfile: str | None) -> str:
    """`url` with the TLS files of kube-apiserver's --etcd-cafile, --etcd-certfile and
    --etcd-keyfile flags added as its query parameters."""
    from urllib.parse import urlencode

    given = {k: str(Path(v).absolute()) for k, v in
             (("cafile", cafile), ("certfile", certfile), ("keyfile", keyfile)) if v}
    if not given:
        return url
    if not url.startswith("etcd://"):
        raise StoreError("--etcd-cafile, --etcd-certfile and --etcd-keyfile need an "
                         "etcd:// store URL")
    return url + ("&" if "?" in url else "?") + urlencode(given)


class EtcdCallError(StoreError):
    """etcd (or the connection to it) answered a request with an error."""

    def __init__(self, what: str, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{what}: {details or code.name}")
        self.code = code
        self.details = details


def _credentials(config: EtcdConfig) -> grpc.ChannelCredentials | None:
    if not config.tls:
        return None

    def read(name: str, path: str | None) -> bytes | None:
        if path is None:
            return None
        try:
            return Path(path).read_bytes()
        except OSError as error:
            raise StoreError(f"cannot read the etcd {name} {path}: {error.strerror}") from None

    return grpc.ssl_channel_credentials(
        root_certificates=read("CA file", config.cafile),
        private_key=read("key file", config.keyfile),
        certificate_chain=read("certificate file", config.certfile))


class EtcdClient:
    """Requests to an etcd cluster, one endpoint at a time."""

    def __init__(self, config: EtcdConfig) -> None:
        self.config = config
        self._credentials = _credentials(config)
        self._channels: list[grpc.aio.Channel | None] = [None] * len(config.endpoints)
        # Processes start on different members, spreading their load.
        self._current = random.randrange(len(config.endpoints))

    def _channel(self, index: int) -> grpc.aio.Channel:
        channel = self._channels[index]
        if channel is None:
            target = _host_port(*self.config.endpoints[index])
            if self._credentials is None:
                channel = grpc.aio.insecure_channel(target, options=_OPTIONS)
            else:
                channel = grpc.aio.secure_channel(target, self._credentials, options=_OPTIONS)
            self._channels[index] = channel
        return channel

    def leave(self, index: int) -> None:
        """Go to the next endpoint after a failure on `index` (unless another request
        left it already)."""
        if self._current == index:
            self._current = (index + 1) % len(self._channels)

    @property
    def endpoint(self) -> str:
        return _host_port(*self.config.endpoints[self._current])

    async def range(self, request: Any, what: str, timeout: float = CALL_TIMEOUT) -> Any:
        return await self._unary(_RANGE, request, pb.RangeResponse, what, timeout,
                                 mutation=False)

    async def txn(self, request: Any, what: str, *, mutation: bool = True) -> Any:
        return await self._unary(_TXN, request, pb.TxnResponse, what, CALL_TIMEOUT,
                                 mutation=mutation)

    async def compact(self, revision: int) -> Any:
        # Compacting twice to one revision is harmless: retried like a read.
        return await self._unary(_COMPACT, pb.CompactionRequest(revision=revision),
                                 pb.CompactionResponse, f"compacting to {revision}",
                                 CALL_TIMEOUT, mutation=False)

    async def status(self, timeout: float = CALL_TIMEOUT) -> Any:
        return await self._unary(_STATUS, pb.StatusRequest(), pb.StatusResponse,
                                 "asking for the status", timeout, mutation=False)

    async def _unary(self, method: str, request: Any, response: Any, what: str,
                     timeout: float, *, mutation: bool) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        attempt = 0
        while True:
            index = self._current
            channel = self._channel(index)
            left = deadline - loop.time()
            if mutation and not await _connected(channel, min(CONNECT_WAIT, left)):
                last = EtcdCallError(what, grpc.StatusCode.UNAVAILABLE,
                                     f"cannot connect to {self.endpoint}")
            else:
                call = channel.unary_unary(method, request_serializer=_serialize,
                                           response_deserializer=response.FromString)
                try:
                    return await call(request, timeout=max(left, 0.001))
                except grpc.aio.AioRpcError as error:
                    failure = _call_error(what, error, request)
                    if not isinstance(failure, EtcdCallError) or not _retryable(error, mutation):
                        raise failure from None
                    last = failure
            attempt += 1
            self.leave(index)
            pause = min(0.05 * 2 ** (attempt // len(self._channels)), 1.0)
            if loop.time() + pause >= deadline:
                raise EtcdCallError(what, last.code,
                                    f"etcd unavailable at {self.config.shown()}: "
                                    f"{last.details}")
            if attempt % len(self._channels) == 0:
                await asyncio.sleep(pause)

    def watch(self) -> WatchStream:
        """A watch stream on the current endpoint (a new stream goes to the next one
        after `rotate()`)."""
        index = self._current
        call = self._channel(index).stream_stream(
            _WATCH, request_serializer=_serialize,
            response_deserializer=pb.WatchResponse.FromString)(metadata=_REQUIRE_LEADER)
        return WatchStream(call, self, index)

    async def close(self) -> None:
        channels, self._channels = self._channels, [None] * len(self._channels)
        for channel in channels:
            if channel is not None:
                await channel.close()


def _serialize(message: Any) -> bytes:
    return message.SerializeToString()


async def _connected(channel: grpc.aio.Channel, wait: float) -> bool:
    """Whether the channel has (or makes within `wait` seconds) a connection."""
    state = channel.get_state(try_to_connect=True)
    if state == grpc.ChannelConnectivity.READY:
        return True
    if state == grpc.ChannelConnectivity.TRANSIENT_FAILURE or wait <= 0:
        return False
    try:
        async with asyncio.timeout(wait):
            await channel.channel_ready()
    except TimeoutError:
        return False
    return True


# Answers that say a request was not applied and another member may take it: etcd is
# busy, or has no leader to forward to.
_NOT_APPLIED = ("etcdserver: too many requests", "etcdserver: no leader")


def _retryable(error: grpc.aio.AioRpcError, mutation: bool) -> bool:
    code, details = error.code(), error.details() or ""
    if not mutation:
        return code == grpc.StatusCode.UNAVAILABLE or details in _NOT_APPLIED
    # gRPC fails a request at once, unsent, when its channel cannot connect.
    return details in _NOT_APPLIED or (
        code == grpc.StatusCode.UNAVAILABLE and details.startswith("failed to connect"))


def _call_error(what: str, error: grpc.aio.AioRpcError, request: Any) -> StoreError:
    code, details = error.code(), error.details() or ""
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details:
        return _too_large(request)
    if code == grpc.StatusCode.INVALID_ARGUMENT and details == "etcdserver: request is too large":
        return ValueTooLargeError(details)
    return EtcdCallError(what, code, details)


def _too_large(request: Any) -> ValueTooLargeError:
    """What kube-apiserver answers for an object over its etcd client's send limit."""
    return ValueTooLargeError(
        "rpc error: code = ResourceExhausted desc = trying to send message larger than max "
        f"({request.ByteSize()} vs. {MAX_SEND_BYTES})")


class WatchStream:
    """One gRPC Watch stream: create watches, ask for progress, read responses (their
    fragments joined)."""

    def __init__(self, call: Any, client: EtcdClient, index: int) -> None:
        self._call = call
        self._client = client
        self._index = index

    async def create(self, key: bytes, range_end: bytes, start_revision: int, *,
                     prev_kv: bool = True) -> None:
        await self._send(pb.WatchRequest(create_request=pb.WatchCreateRequest(
            key=key, range_end=range_end, start_revision=start_revision, prev_kv=prev_kv,
            fragment=True)))

    async def request_progress(self) -> None:
        """Ask for a progress notification: a response without events whose header
        revision says every event up to it has been sent (etcd answers only once the
        stream's watchers have caught up)."""
        request = pb.WatchRequest()
        request.progress_request.SetInParent()
        await self._send(request)

    async def _send(self, request: Any) -> None:
        try:
            await self._call.write(request)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError) as error:
            raise self._failed(error) from None

    async def read(self) -> Any:
        """The next response; EtcdCallError when the stream ends."""
        joined = None
        while True:
            try:
                response = await self._call.read()
            except grpc.aio.AioRpcError as error:
                raise self._failed(error) from None
            if response is grpc.aio.EOF:
                raise EtcdCallError(f"watching at {self._client.endpoint}",
                                    grpc.StatusCode.UNAVAILABLE, "the watch stream ended")
            if joined is None:
                joined = response
            else:
                joined.events.extend(response.events)
            if not response.fragment:
                joined.fragment = False
                return joined

    def _failed(self, error: BaseException) -> EtcdCallError:
        self._client.leave(self._index)
        if isinstance(error, grpc.aio.AioRpcError):
            return EtcdCallError("watching", error.code(), error.details() or "")
        return EtcdCallError("watching", grpc.StatusCode.UNAVAILABLE, str(error))

    def cancel(self) -> None:
        self._call.cancel()

