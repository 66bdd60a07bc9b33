"""The scheduler, the controllers and the nodes of `draemu up` in a process of their own.

One slow request, or one expensive scheduling cycle, must not stall the others: in one
process the apiserver, the scheduler, the controllers and the kubelets shared one event
loop (and one core). So `draemu up` runs them here, in a child process, as API clients
over the apiserver's loopback socket with the per-identity tokens the apiserver issued
(they stay in the two processes' memory: the child reads them on its standard input):
the scheduler as system:kube-scheduler, the controllers' informers as
system:kube-controller-manager and each controller as its ServiceAccount (as
kube-controller-manager with --use-service-account-credentials), each kubelet as
system:node:NAME. Each kubelet serves its own API (logs, exec) on a loopback address of
its own, published as its Node's InternalIP, which the apiserver calls as it calls a
real kubelet (HTTPS with the certificates the parent issued; plain HTTP beside an
apiserver that serves plain HTTP).

One child for all of them, not one each: every extra Python process costs memory of its
own (this one adds ~25 MiB PSS to the seed cluster's ~76 MiB in one process, measured
with bench/startup.py), and what needed isolating is the apiserver's loop from theirs.

    parent                                   child
    ControlPlaneProcess.fork(...)          → forked before the event loop starts (how
      (or .spawn(...): python -m             `draemu up` runs it: the modules both use
       draemu.cmd.controlplane)              are shared), it imports what it will run
                                             while the parent starts the apiserver
    ControlPlaneProcess.configure(server,…)→ reads its config (one JSON line) on stdin,
                                             starts the controllers, the scheduler and
                                             the nodes
    ControlPlaneProcess.wait_ready()       ← "ready" on stdout (the nodes' slices are
                                             published and their drivers registered)
    /metrics of the apiserver              ← "metrics {...}" on stdout when they change
    ControlPlaneProcess.stop()             → closes stdin: the child stops the nodes,
                                             then the rest, and exits
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from draemu import aio, log
from draemu.client import Client, SharedInformers
from draemu.features import FeatureGates
from draemu.log import get_logger

logger = get_logger("controlplane")

READY = "ready"
METRICS = "metrics"
STOP_TIMEOUT = 10.0
METRICS_INTERVAL = 1.0  # seconds between looks at the controllers' metrics

Labels = tuple[tuple[str, str], ...]


@dataclass
class _Nodes:
    preset: dict[str, Any]  # drivers.presets.Preset as a dict
    data_dir: str
    runtime: str
    image_map: dict[str, str]
    image_defaults: dict[str, str]  # the add-ons' images (ImageMap.defaults)
    runtime_unconfined: bool
    tokens: dict[str, str]  # node name -> its token (system:node:NAME)
    admin_token: str
    tls: bool  # the parent wrote <root>/pki/kubelet.{crt,key}, client-ca.crt
    # The pod network: the cluster namespace's path and NetworkRanges as a dict.
    cluster_netns: str | None = None
    ranges: dict[str, Any] | None = None
    services: bool = False  # kube-proxy runs on the nodes
    dns: bool = False  # and CoreDNS


@dataclass
class _Config:
    socket: str
    url: str
    scheduler_token: str | None
    controllers_token: str | None
    gates: dict[str, bool]
    emulated_version: str
    controller_settings: dict[str, float]
    log_format: str
    log_level: str
    # The cluster CA (PEM), which the root CA publisher puts in every kube-root-ca.crt.
    ca_pem: str | None = None
    scheduler_config: str | None = None  # KubeSchedulerConfiguration text
    # ServiceAccount name (kube-system) -> its token, for each controller's own client.
    account_tokens: dict[str, str] = field(default_factory=dict)
    service_account_key_file: str | None = None
    enabled_controllers: list[str] | None = None  # None: all of them
    nodes: dict[str, Any] | None = None  # _Nodes as a dict
    # node-ipam's --cluster-cidr (None: no allocation) and --node-cidr-mask-size.
    cluster_cidr: str | None = None
    node_cidr_mask_size: int = 24


# What both processes use, imported before `ControlPlaneProcess.fork`: its pages are then
# shared by the two (copy-on-write) instead of being loaded twice.
SHARED_MODULES = ("asyncio", "ssl", "aiohttp", "aiohttp.web", "yaml", "structlog",
                  "draemu.log", "draemu.client", "draemu.features", "draemu.cel",
                  "draemu.api.types", "draemu.api.errors", "draemu.api.meta",
                  "draemu.api.jsonfast", "draemu.api.quantity", "draemu.api.quota",
                  "draemu.api.labels", "draemu.api.nodelabels", "draemu.pki",
                  "draemu.satokens", "draemu.identity", "draemu.remotecommand",
                  "draemu.drivers.presets", "draemu.controllers.registry",
                  "draemu.cmd.nodecredentials")


class ForkedProcess:
    """A child forked from this process, with pipes for its standard input and output
    (what `ControlPlaneProcess` uses of an asyncio.subprocess.Process)."""

    def __init__(self, pid: int, stdin_fd: int, stdout_fd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._stdin_fd, self._stdout_fd = stdin_fd, stdout_fd
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self._exited: asyncio.Future[int] | None = None

    async def connect(self) -> None:
        """Wrap the pipes in streams on the running loop (once it runs)."""
        loop = asyncio.get_running_loop()
        self.stdout = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.stdout),
                                     os.fdopen(self._stdout_fd, "rb", buffering=0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(self._stdin_fd, "wb", buffering=0))
        self.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        self._exited = asyncio.ensure_future(asyncio.to_thread(self._waitpid))

    def _waitpid(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    async def wait(self) -> int:
        assert self._exited is not None
        return await asyncio.shield(self._exited)

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class ControlPlaneProcess:
    """The parent's handle on the child."""

    def __init__(self) -> None:
        # An asyncio.subprocess.Process (spawn), or a ForkedProcess (fork).
        self.process: Any = None
        self.metrics: dict[str, dict[Labels, float]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[bool] | None = None
        self._server: Any = None
        self._stopping = False

    @classmethod
    def fork(cls, *, scheduler: bool, controllers: bool, nodes: bool) -> ControlPlaneProcess:
        """Fork the child now, before the event loop and any thread exist (`draemu up`
        calls this first thing): it shares the pages of the modules both import
        (SHARED_MODULES, frozen out of the garbage collector's reach so that neither
        process's collections copy them) and imports the rest while the parent starts
        the apiserver."""
        import importlib

        for name in SHARED_MODULES:
            importlib.import_module(name)
        try:
            import uvloop  # noqa: F401  (the loop both run on, when installed)
        except ImportError:
            pass
        gc.collect()
        gc.freeze()
        child_stdin, parent_stdin = os.pipe()
        parent_stdout, child_stdout = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                os.dup2(child_stdin, 0)
                os.dup2(child_stdout, 1)
                for fd in (child_stdin, parent_stdin, parent_stdout, child_stdout):
                    os.close(fd)
                sys.stdin = open(0, encoding="utf-8", closefd=False)
                sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
                code = main([flag for flag, on in (("--scheduler", scheduler),
                                                    ("--controllers", controllers),
                                                    ("--nodes", nodes)) if on])
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        os.close(child_stdin)
        os.close(child_stdout)
        handle = cls()
        handle.process = ForkedProcess(pid, parent_stdin, parent_stdout)  # type: ignore[assignment]
        return handle

    async def spawn(self, *, scheduler: bool, controllers: bool, nodes: bool) -> None:
        """Start the child: it imports what it will run while the apiserver starts here."""
        argv = [sys.executable, "-m", "draemu.cmd.controlplane"]
        argv += [flag for flag, on in (("--scheduler", scheduler),
                                       ("--controllers", controllers),
                                       ("--nodes", nodes)) if on]
        self.process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)

    async def configure(self, server: Any, gates: FeatureGates, *, scheduler: bool,
                        controllers: bool, controller_settings: dict[str, float],
                        enabled_controllers: list[str] | None = None,
                        scheduler_config: str | None = None, nodes: Any = None,
                        data_dir: Path | None = None, runtime: str = "fake",
                        image_map: Any = None, runtime_unconfined: bool = False,
                        network: Any = None) -> None:
        """Hand the child its configuration and credentials (`nodes`: a Preset to run;
        `network`: the pod network, a podnetwork.ClusterNetwork)."""
        from draemu.identity import (
            KUBE_CONTROLLER_MANAGER,
            KUBE_SCHEDULER,
            service_account_groups,
            service_account_user,
        )

        if self.process is None:
            await self.spawn(scheduler=scheduler, controllers=controllers,
                             nodes=nodes is not None)
        elif isinstance(self.process, ForkedProcess) and self.process.stdin is None:
            await self.process.connect()
        assert self.process is not None and self.process.stdin is not None
        self._server = server
        log_format, log_level = log.settings()
        accounts: dict[str, str] = {}
        if controllers:
            from draemu.controllers.registry import NAMESPACE, service_accounts

            accounts = {account: server.loopback_token(
                service_account_user(NAMESPACE, account), service_account_groups(NAMESPACE))
                for account in service_accounts()}
        key_file = Path(server.data_dir) / "pki" / "sa.key"
        config = _Config(
            socket=server.loopback_path, url=server.url,
            # As in one process: neither is in system:masters (the bootstrap policy's
            # roles bind them).
            scheduler_token=server.loopback_token(KUBE_SCHEDULER, ()) if scheduler else None,
            controllers_token=server.loopback_token(KUBE_CONTROLLER_MANAGER, ())
            if controllers else None,
            gates=gates.overrides(), emulated_version=gates.emulated_version,
            controller_settings=controller_settings, enabled_controllers=enabled_controllers,
            log_format=log_format,
            log_level=log_level,
            ca_pem=server.pki.ca.cert_pem.decode() if server.pki is not None else None,
            scheduler_config=scheduler_config, account_tokens=accounts,
            service_account_key_file=str(key_file) if key_file.exists() else None,
            nodes=asdict(_node_config(server, nodes, Path(data_dir or server.data_dir),
                                      runtime, image_map, runtime_unconfined, network))
            if nodes is not None else None,
            cluster_cidr=network.ranges.cluster_cidr if network is not None else None,
            node_cidr_mask_size=network.ranges.node_mask if network is not None else 24)
        self._ready = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read())
        self.process.stdin.write(json.dumps(config.__dict__).encode() + b"\n")
        await self.process.stdin.drain()

    async def wait_ready(self) -> None:
        """Until the child has started its components (it starts while the parent goes
        on)."""
        assert self._ready is not None
        if not await self._ready:
            assert self.process is not None
            code = await self.process.wait()
            raise RuntimeError(f"the scheduler, controllers and nodes process exited "
                               f"({code}) before it was ready")

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        assert self._ready is not None
        try:
            async for line in self.process.stdout:
                word, _, rest = line.decode(errors="replace").strip().partition(" ")
                if word == READY and not self._ready.done():
                    self._ready.set_result(True)
                elif word == METRICS:
                    self._take_metrics(rest)
        finally:
            if not self._ready.done():
                self._ready.set_result(False)
            self.metrics.clear()  # a child that is gone has no figures
            code = await self.process.wait()
            if not self._stopping:
                logger.error("the scheduler, controllers and nodes process exited", code=code)

    def _take_metrics(self, text: str) -> None:
        try:
            data = json.loads(text)
            metrics = {name: {tuple(tuple(pair) for pair in labels): float(value)
                              for labels, value in series}
                       for name, series in data.items()}
        except (ValueError, TypeError):
            logger.warning("unreadable metrics from the child process")
            return
        for name in metrics:
            if name not in self.metrics and self._server is not None:
                self._server.add_gauge(name, lambda n=name: self.metrics.get(n, {}))
        self.metrics = metrics

    async def stop(self) -> None:
        if self.process is None:
            return
        self._stopping = True
        process = self.process
        if isinstance(process, ForkedProcess) and process.stdin is None:
            await process.connect()  # never configured: closing its input stops it
        if process.returncode is None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._reader is not None:
            await self._reader
        self.process = None


def _node_config(server: Any, preset: Any, data_dir: Path, runtime: str,
                 image_map: Any, runtime_unconfined: bool,
                 network: Any = None) -> _Nodes:
    """The nodes' credentials: a kubeconfig each in its root (as in one process, for the
    tools that read it there), a loopback token, and a serving certificate for its
    kubelet API signed by the cluster CA (for its address on the pod network, or its
    loopback address)."""
    from draemu.cmd.nodecredentials import loopback_address, node_kubeconfig

    tls = server.pki is not None
    tokens = {}
    for index, spec in enumerate(preset.nodes):
        node_kubeconfig(server, data_dir, spec.name)
        tokens[spec.name] = server.loopback_token(f"system:node:{spec.name}",
                                                  ["system:nodes"])
        if tls:
            from draemu.kubelet.servingcert import issue_serving_tls

            address = network.ranges.node_ip(index) if network is not None else \
                loopback_address(index)
            issue_serving_tls(data_dir / "nodes" / spec.name / "pki", spec.name,
                              [address, spec.name, "localhost"], server.pki.ca.cert_pem,
                              server.pki.ca)
    return _Nodes(preset=asdict(preset), data_dir=str(data_dir), runtime=runtime,
                  image_map={k: str(v) for k, v in (image_map.entries.items()
                                                    if image_map else ())},
                  image_defaults={k: str(v) for k, v in (image_map.defaults.items()
                                                         if image_map is not None else ())},
                  runtime_unconfined=runtime_unconfined, tokens=tokens,
                  admin_token=server.loopback_token(), tls=tls,
                  cluster_netns=network.netns if network is not None else None,
                  ranges=asdict(network.ranges) if network is not None else None,
                  services=network is not None and network.services,
                  dns=network is not None and network.dns)


# The child ------------------------------------------------------------------------------
def _preset(data: dict[str, Any]) -> Any:
    from draemu.drivers.presets import DriverSpec, NodeSpec, Preset

    nodes = [NodeSpec(**{**n, "drivers": [DriverSpec(**d) for d in n["drivers"]]})
             for n in data["nodes"]]
    return Preset(**{**data, "nodes": nodes})


class _Child:
    def __init__(self, config: _Config) -> None:
        self.config = config
        self.parts: list[Any] = []
        self.clients: list[Client] = []
        self.manager: Any = None
        # With both the controllers and the scheduler here, they share the controllers'
        # informers: each pod and claim event is read and decoded once, not twice, and
        # the apiserver serves one watch less of each resource.
        self.informers: SharedInformers | None = None
        if config.controllers_token and config.scheduler_token:
            self.informers = SharedInformers(self.client(
                config.controllers_token, "draemu-controller-manager"))

    def client(self, token: str, user_agent: str) -> Client:
        c = self.config
        client = Client("http://localhost", token=token, user_agent=user_agent,
                        unix_socket=c.socket, ca_pem=c.ca_pem.encode() if c.ca_pem else None)
        self.clients.append(client)
        return client

    async def start_controllers(self, gates: FeatureGates) -> None:
        from draemu.controllers.manager import ControllerManager

        c = self.config
        assert c.controllers_token is not None

        def client_for(account: str) -> Client:
            token = c.account_tokens.get(account)
            if token is None:  # an account the parent did not know: the manager's own
                logger.warning("no token for a controller's account", account=account)
                token = c.controllers_token
            assert token is not None
            return self.client(token, f"draemu-controller-manager/{account}")

        self.manager = ControllerManager(
            self.client(c.controllers_token, "draemu-controller-manager"), gates,
            enabled=c.enabled_controllers, settings=c.controller_settings, client_for=client_for,
            service_account_key_file=Path(c.service_account_key_file)
            if c.service_account_key_file else None, informers=self.informers,
            cluster_cidr=c.cluster_cidr, node_cidr_mask_size=c.node_cidr_mask_size)
        await self.manager.start()
        self.parts.append(self.manager)

    async def start_scheduler(self, gates: FeatureGates) -> None:
        from draemu.scheduler import Scheduler
        from draemu.scheduler.config import load

        c = self.config
        assert c.scheduler_token is not None
        scheduler = Scheduler(self.client(c.scheduler_token, "draemu-scheduler"), gates,
                              config=load(c.scheduler_config) if c.scheduler_config else None,
                              informers=self.informers)
        await scheduler.start()
        self.parts.append(scheduler)

    async def start_nodes(self, gates: FeatureGates) -> None:
        from draemu.cmd.nodes import NodeAccess, start_nodes

        c = self.config
        assert c.nodes is not None
        n = _Nodes(**c.nodes)
        data_dir = Path(n.data_dir)

        def serving_tls(name: str, _address: str) -> Any:
            if not n.tls:
                return None
            from draemu.kubelet.servingcert import ServingTLS

            folder = data_dir / "nodes" / name / "pki"
            return ServingTLS(folder / "kubelet.crt", folder / "kubelet.key",
                              folder / "client-ca.crt")

        def node_client(name: str) -> Client:
            # Closed by the node when it stops.
            return Client("http://localhost", token=n.tokens[name], user_agent="draemu",
                          unix_socket=c.socket,
                          ca_pem=c.ca_pem.encode() if c.ca_pem else None)

        image_map = None
        if n.image_map or n.image_defaults:
            from draemu.kubelet.runtime import ImageMap

            image_map = ImageMap({k: Path(v) for k, v in n.image_map.items()},
                                 {k: Path(v) for k, v in n.image_defaults.items()})
        access = NodeAccess(url=c.url, node_client=node_client,
                            admin_client=lambda: Client(
                                "http://localhost", token=n.admin_token, user_agent="draemu",
                                unix_socket=c.socket),
                            serving_tls=serving_tls)
        network = None
        if n.cluster_netns is not None and n.ranges is not None:
            from draemu.podnetwork import NetworkRanges, NodeNetworks

            network = NodeNetworks(n.cluster_netns, NetworkRanges(**n.ranges), n.services,
                                   n.dns)
        handle = await start_nodes(_preset(n.preset), data_dir=data_dir, runtime=n.runtime,
                                   feature_gates=gates, image_map=image_map, access=access,
                                   runtime_unconfined=n.runtime_unconfined, network=network)
        self.parts.append(handle)

    def metrics(self) -> dict[str, list[Any]]:
        if self.manager is None:
            return {}
        return {name: [[list(map(list, labels)), value] for labels, value in series.items()]
                for name, series in self.manager.metrics().items()}

    async def stop(self) -> None:
        # The nodes first, then the scheduler, the controllers last (they own the shared
        # informers). The parts were appended as each finished starting.
        order = {"Scheduler": 1, "ControllerManager": 2}
        for part in sorted(self.parts, key=lambda p: order.get(type(p).__name__, 0)):
            try:
                await part.stop()
            except Exception:
                logger.exception("stopping a component failed")
        for client in self.clients:
            await client.close()


async def _report_metrics(child: _Child) -> None:
    last = ""
    while True:
        text = json.dumps(child.metrics(), sort_keys=True)
        if text != last:
            print(f"{METRICS} {text}", flush=True)
            last = text
        await asyncio.sleep(METRICS_INTERVAL)


async def _serve(config: _Config) -> None:
    gates = FeatureGates(config.gates, config.emulated_version)
    child = _Child(config)
    reporter: asyncio.Task[None] | None = None
    try:
        # The controllers, the scheduler and the nodes start together.
        starting = []
        if config.controllers_token:
            starting.append(child.start_controllers(gates))
        if config.scheduler_token:
            starting.append(child.start_scheduler(gates))
        if config.nodes is not None:
            starting.append(child.start_nodes(gates))
        for result in await asyncio.gather(*starting, return_exceptions=True):
            if isinstance(result, BaseException):
                raise result
        print(READY, flush=True)
        # (aio.collect_young_less_often. The scheduler freezes the informers' caches once
        # synced; the apiserver's GCFreezer is not used here: its once-a-second
        # gc.get_freeze_count() walks every frozen object, this process's shared modules
        # included, which cost more than the few full collections it saves.)
        aio.collect_young_less_often()
        reporter = asyncio.create_task(_report_metrics(child))
        await _until_told_to_stop()
    finally:
        if reporter is not None:
            reporter.cancel()
        await child.stop()


async def _until_told_to_stop() -> None:
    """Until the parent closes our standard input (or dies), or SIGTERM (sent to the
    whole process group, say): either way the nodes stop cleanly (their drivers
    deregister, process-runtime containers are stopped) before we exit."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(os.dup(0), "rb", buffering=0))

    async def eof() -> None:
        while await reader.read(1 << 16):
            pass

    waits = [asyncio.create_task(eof()), asyncio.create_task(stop.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
        loop.remove_signal_handler(signal.SIGTERM)


def _preload(args: argparse.Namespace) -> None:
    """Import what this child will run while the parent starts the apiserver."""
    if args.controllers:
        import draemu.controllers.manager
    if args.scheduler:
        import draemu.scheduler
    if args.nodes:
        import draemu.cmd.nodes  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C reaches the whole process group: the parent decides when we stop (it closes
    # our standard input), so that it can stop the nodes first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parser = argparse.ArgumentParser(prog="python -m draemu.cmd.controlplane")
    for flag in ("--scheduler", "--controllers", "--nodes"):
        parser.add_argument(flag, action="store_true")
    _preload(parser.parse_args(argv))
    line = sys.stdin.buffer.readline()
    if not line:
        return 0  # the parent went away before configuring us
    config = _Config(**json.loads(line))
    log.configure(config.log_format, config.log_level)
    aio.run(_serve(config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
