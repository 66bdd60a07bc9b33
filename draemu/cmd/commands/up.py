"""`draemu up`: a whole cluster — apiserver, controllers, scheduler, emulated nodes with
their DRA drivers — in this process, until Ctrl-C."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from draemu.cmd.commands.controllers import CONTROLLERS_HELP

if TYPE_CHECKING:  # imported when used: `draemu up --help` stays quick
    from draemu.client import Client
    from draemu.cmd.cluster import Cluster, ClusterOptions
    from draemu.cmd.ui.model import LiveModel
    from draemu.cmd.ui.server import UIServer
    from draemu.features import FeatureGates

HELP = "start a whole DRA cluster (apiserver, scheduler, controllers, nodes, drivers)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--data-dir", metavar="DIR",
                       help="where the store, certificates and kubeconfig live; restarting "
                       "on the same folder brings the cluster back (default: "
                       "$XDG_DATA_HOME/draemu or ~/.local/share/draemu)")
    parser.add_argument("--reset", action="store_true",
                        help="delete the cluster kept in the data dir and start afresh (a "
                        "data dir keeps the preset it was started with; another --preset "
                        "on it is refused without --reset)")
    where.add_argument("--in-memory", action="store_true",
                       help="keep everything in memory and a temporary folder, gone at exit")
    parser.add_argument("--address", default="127.0.0.1",
                        help="address to serve the API on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=6443,
                        help="port to serve the API on; 0 picks a free one (default: 6443)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="also write the admin kubeconfig to FILE (never merged into "
                        "~/.kube/config unless --merge-kubeconfig is given)")
    parser.add_argument("--merge-kubeconfig", action="store_true",
                        help="add a 'draemu' context to $KUBECONFIG or ~/.kube/config and "
                        "make it current, the way kind does")
    parser.add_argument("--store", metavar="URL",
                        help="store URL: sqlite:///FILE (default: a file in the data dir), "
                        "sqlite://:memory:, postgresql://USER@HOST:PORT/DB, or "
                        "etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (keys as kube-apiserver's)")
    parser.add_argument("--feature-gates", default="", metavar="A=true,B=false",
                        help="feature gates with Kubernetes' names, e.g. "
                        "DRAListTypeAttributes=true")
    from draemu.cmd.commands._common import add_emulation_arguments, add_etcd_arguments

    add_etcd_arguments(parser)
    add_emulation_arguments(parser, "on for the seed preset, off otherwise")
    parser.add_argument("--preset", default="seed", metavar="NAME|FILE",
                        help="nodes and drivers to start: seed (the DRA introduction's three "
                        "GPU nodes), seed-nvidia (the same nodes for NVIDIA's real driver on "
                        "its mock NVML: see draemu demo seed-nvidia), example, empty, or a "
                        "preset YAML file (default: seed)")
    parser.add_argument("--nodes", type=int, metavar="N",
                        help="number of nodes for the 'example' preset")
    from draemu.cmd.commands._common import add_runtime_arguments

    add_runtime_arguments(parser)
    parser.add_argument("--pod-cidr", default="10.244.0.0/16", metavar="CIDR",
                        help="process runtime: the pod network's range, which node-ipam "
                        "splits into a /24 per node, as kube-controller-manager's "
                        "--cluster-cidr (default: 10.244.0.0/16, kind's)")
    parser.add_argument("--service-cidr", default="10.96.0.0/12", metavar="CIDR",
                        help="the range ClusterIPs come from, as kube-apiserver's "
                        "--service-cluster-ip-range (default: 10.96.0.0/12, kubeadm's; "
                        "kube-dns gets its 10th address)")
    parser.add_argument("--insecure-http", action="store_true",
                        help="serve plain HTTP without authentication (loopback only)")
    parser.add_argument("--token-auth-file", metavar="FILE",
                        help="CSV of bearer tokens: token,user,uid,\"group1,group2\"")
    parser.add_argument("--audit-log", metavar="FILE",
                        help="append an audit event (audit.k8s.io/v1, Metadata level) per "
                        "request to FILE, as JSON lines")
    parser.add_argument("--ui-port", type=int, default=0, metavar="N",
                        help="port of the web view (its address, with a one-time token, is "
                        "printed in the banner); 0 picks a free one (default: 0)")
    parser.add_argument("--no-ui", action="store_true", help="do not serve the web view")
    parser.add_argument("--background", action="store_true",
                        help="start the cluster in the background and return once it is "
                        "ready (the banner is printed then; its log goes to DATA-DIR/"
                        "draemu.log; `draemu down` stops it)")
    parser.add_argument("--no-scheduler", action="store_true", help="do not run the scheduler")
    parser.add_argument("--scheduler-config", metavar="FILE",
                        help="the scheduler's KubeSchedulerConfiguration "
                        "(kubescheduler.config.k8s.io/v1: profiles, plugins, pluginConfig)")
    parser.add_argument("--no-controllers", action="store_true",
                        help="do not run the controllers")
    parser.add_argument("--controllers", default="", metavar="A,B", help=CONTROLLERS_HELP)
    parser.add_argument("--one-process", action="store_true",
                        help="run the scheduler, the controllers and the nodes' kubelets and "
                        "drivers in the apiserver's process (less memory, but a slow request "
                        "can then stall scheduling and the kubelets); by default they run in "
                        "one child process")


def _self_command() -> str:
    """How the user can run draemu again: `draemu` when that is on PATH, else the path
    of the script that is running (e.g. .venv/bin/draemu without an activated venv)."""
    import os
    import shutil
    import sys

    here = os.path.realpath(sys.argv[0])
    on_path = shutil.which("draemu")
    if on_path and os.path.realpath(on_path) == here:
        return "draemu"
    if os.path.basename(here) != "draemu":
        return "draemu"
    relative = os.path.relpath(sys.argv[0])
    return os.path.abspath(sys.argv[0]) if relative.startswith("..") else relative


class UsageError(Exception):
    """A flag's value cannot be used: printed as `error: ...`, exit status 2."""


BACKGROUND_TIMEOUT = 300.0  # seconds `up --background` waits for the cluster to be ready


def run(args: argparse.Namespace) -> int:
    import sys

    from draemu import aio

    if args.background:
        return _background(args)
    try:
        options = cluster_options(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if options.control_plane_process and (options.scheduler or options.controllers
                                          or _has_nodes(options)):
        from draemu.cmd.controlplane import ControlPlaneProcess

        # Forked before the event loop starts: the child shares this process's pages of
        # the modules both use, and imports its own while the apiserver starts here.
        options.forked_control_plane = ControlPlaneProcess.fork(
            scheduler=options.scheduler, controllers=options.controllers,
            nodes=_has_nodes(options))
    return aio.run(_serve(args, options))


def _background(args: argparse.Namespace) -> int:
    """`draemu up` again, detached, with its output in the data dir's log; returns when
    it is ready (its banner printed) or has failed (the end of its log printed)."""
    import subprocess
    import sys

    from draemu.cmd import readiness
    from draemu.cmd.cluster import default_data_dir

    if args.in_memory:
        print("error: --background needs a data dir (with --in-memory nothing would be left "
              "to stop it by)", file=sys.stderr)
        return 2
    data_dir = Path(args.data_dir or default_data_dir())
    running = readiness.running_pid(data_dir)
    if running is not None:
        print(f"error: a draemu (pid {running}) already runs on the data directory "
              f"{data_dir}; stop it with: {_self_command()} down --data-dir {data_dir}",
              file=sys.stderr)
        return 1
    data_dir.mkdir(parents=True, exist_ok=True)
    argv = [a for a in getattr(args, "argv", None) or sys.argv[1:] if a != "--background"]
    with open(data_dir / readiness.LOG, "wb") as log:
        child = subprocess.Popen([sys.executable, "-m", "draemu", *argv], stdout=log,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
    record = readiness.wait(data_dir, BACKGROUND_TIMEOUT, pid=child.pid,
                            gone=lambda: child.poll() is not None)
    if record is None:
        if child.poll() is None:
            child.terminate()
            child.wait(30)
        tail = (data_dir / readiness.LOG).read_text(errors="replace")[-3000:]
        print(f"error: draemu up did not become ready (exit status {child.returncode}); the "
              f"end of {data_dir / readiness.LOG}:\n{tail}", file=sys.stderr)
        return 1
    print("\n".join(record["banner"]))
    print(f"Running in the background (pid {child.pid}; log: {data_dir / readiness.LOG}).")
    print(f"Stop it with: {_self_command()} down --data-dir {data_dir}", flush=True)
    return 0


def _has_nodes(options: ClusterOptions) -> bool:
    from draemu.cmd.cluster import has_nodes

    return has_nodes(options)


def _check_usage(args: argparse.Namespace) -> tuple[FeatureGates, Any, str | None, Any]:
    """Every flag checked before anything starts: (feature gates, image map, scheduler
    configuration text, enabled controllers)."""
    import ipaddress

    from draemu.controllers.registry import select
    from draemu.drivers.presets import PresetError, load_preset
    from draemu.features import FeatureGateError, FeatureGates

    try:
        gates = FeatureGates.parse(args.feature_gates, args.emulated_version)
    except FeatureGateError as e:
        raise UsageError(f"--feature-gates: {e}") from None
    try:
        # Read the preset before anything starts: a mistake in it is a usage error.
        load_preset(args.preset, args.nodes)
    except PresetError as e:
        raise UsageError(f"--preset: {e}") from None
    if args.insecure_http:
        try:
            loopback = ipaddress.ip_address(args.address).is_loopback
        except ValueError:
            loopback = args.address == "localhost"
        if not loopback:
            raise UsageError("--insecure-http is only allowed on a loopback address")
    from draemu.cmd.commands._common import runtime_image_map

    try:
        image_map = runtime_image_map(args)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        enabled_controllers = select(args.controllers)
    except ValueError as e:
        raise UsageError(f"--controllers: {e}") from None
    return gates, image_map, _scheduler_config(args), enabled_controllers


def _scheduler_config(args: argparse.Namespace) -> str | None:
    if not args.scheduler_config:
        return None
    from draemu.scheduler.config import ConfigError, load

    try:
        with open(args.scheduler_config, encoding="utf-8") as f:
            text = f.read()
        load(text)
    except (OSError, ConfigError) as e:
        raise UsageError(f"--scheduler-config: {e}") from None
    return text


def _check_ranges(args: argparse.Namespace) -> None:
    """--pod-cidr and --service-cidr: private IPv4 ranges that do not overlap each other
    nor the node network (the whole check only where there can be a pod network)."""
    import ipaddress

    if args.runtime == "process":
        from draemu.podnetwork import NetworkRanges

        try:
            NetworkRanges(cluster_cidr=args.pod_cidr, service_cidr=args.service_cidr)
        except ValueError as e:
            raise UsageError(f"--pod-cidr/--service-cidr: {e}") from None
        return
    try:
        cidr = ipaddress.ip_network(args.service_cidr, strict=True)
    except ValueError as e:
        raise UsageError(f"--service-cidr: {e}") from None
    if cidr.version != 4 or not cidr.is_private:
        raise UsageError(f"--service-cidr {cidr}: not a private IPv4 range")


def cluster_options(args: argparse.Namespace) -> ClusterOptions:
    """`draemu up`'s flags as the cluster's options; UsageError says what is wrong."""
    from draemu.cmd import datadir
    from draemu.cmd.cluster import ClusterOptions, default_data_dir
    from draemu.cmd.commands._common import store_url
    from draemu.store import StoreError

    gates, image_map, scheduler_config, enabled_controllers = _check_usage(args)
    _check_ranges(args)
    try:
        store = store_url(args)
    except (ValueError, StoreError) as e:
        raise UsageError(str(e)) from None
    data_dir = None if args.in_memory else Path(args.data_dir or default_data_dir())
    if data_dir is not None:
        try:
            if args.reset:
                datadir.reset(data_dir)
            datadir.check_preset(data_dir, args.preset, args.nodes)
        except datadir.DataDirError as e:
            raise UsageError(str(e)) from None
    return ClusterOptions(
        data_dir=data_dir, in_memory=args.in_memory, address=args.address, port=args.port,
        kubeconfig=Path(args.kubeconfig) if args.kubeconfig else None, store_url=store,
        feature_gates=gates, insecure_http=args.insecure_http,
        token_file=Path(args.token_auth_file) if args.token_auth_file else None,
        audit_log=Path(args.audit_log) if args.audit_log else None,
        preset=args.preset, nodes=args.nodes, runtime=args.runtime,
        legacy_v1alpha3=args.legacy_v1alpha3,
        scheduler=not args.no_scheduler, controllers=not args.no_controllers,
        image_map=image_map, runtime_unconfined=args.runtime_unconfined,
        control_plane_process=not args.one_process, pod_cidr=args.pod_cidr,
        service_cidr=args.service_cidr,
        scheduler_config=scheduler_config, enabled_controllers=enabled_controllers)


async def _serve(args: argparse.Namespace, options: ClusterOptions) -> int:
    """Start the cluster and the web view, print the banner, run until a signal."""
    import sys

    from draemu.cmd import readiness
    from draemu.cmd.cluster import Cluster
    from draemu.cmd.commands._common import wait_for_signal
    from draemu.store import StoreError

    cluster = Cluster(options)
    ui = WebView(options.feature_gates, demo=args.preset == "seed",
                 scheduler_config=options.scheduler_config) if not args.no_ui else None
    if options.data_dir is not None:
        readiness.remove(options.data_dir)  # a killed draemu's, if any
    try:
        try:
            await cluster.start()
        except (OSError, StoreError) as e:
            print(f"error: cannot start: {e}", file=sys.stderr)
            if "address already in use" in str(e).lower():
                print(f"hint: port {args.port} is taken; pass --port 0 for a free one",
                      file=sys.stderr)
            return 1
        failed = await _after_start(args, cluster, ui)
        if failed:
            print(f"error: {failed}", file=sys.stderr)
            return 1
        _ready(args, cluster, ui)
        await wait_for_signal()
        print("stopping...", file=sys.stderr, flush=True)
        return 0
    finally:
        if options.data_dir is not None:
            readiness.remove(options.data_dir)
        if ui is not None:
            await ui.stop()
        await cluster.stop()


async def _after_start(args: argparse.Namespace, cluster: Cluster,
                       ui: WebView | None) -> str | None:
    """The kubeconfig merge and the web view, once the API serves; an error's text."""
    from draemu.client.config import ConfigError, default_paths, merge_into

    if args.merge_kubeconfig:
        try:
            merge_into(default_paths()[0], cluster.kubeconfig_path, "draemu")
        except ConfigError as e:
            return f"--merge-kubeconfig: {e}"
    if ui is not None:
        try:
            await ui.start(cluster.kubeconfig_path, args.address, args.ui_port)
        except OSError as e:
            return f"cannot serve the web view: {e}"
    return None


def _banner(args: argparse.Namespace, cluster: Cluster, ui: WebView | None) -> list[str]:
    kubeconfig = args.kubeconfig or str(cluster.kubeconfig_path)
    nodes = cluster.node_names
    lines = [f"draemu is ready in {cluster.timings['nodes']:.2f} s "
             f"(API in {cluster.timings['apiserver']:.2f} s)",
             f"  API server:  {cluster.url}",
             f"  kubeconfig:  {kubeconfig}",
             f"  data dir:    {cluster.data_dir}"
             + ("  (temporary, removed at exit)" if args.in_memory else ""),
             f"  preset:      {args.preset} ({len(nodes)} nodes"
             + (f": {', '.join(nodes)})" if len(nodes) <= 8 else ")")]
    if ui is not None:
        lines.append(f"  web view:    {ui.url}")
    lines.append("")
    if args.merge_kubeconfig:
        lines.append("The 'draemu' context is now current in your kubeconfig. Try:")
    else:
        lines += [f"  export KUBECONFIG={kubeconfig}", "", "Then try:"]
    lines += ["  kubectl get nodes", "  kubectl get deviceclasses,resourceslices"]
    if args.preset == "seed":
        lines.append(f"  {_self_command()} demo seed")
    return lines


def _ready(args: argparse.Namespace, cluster: Cluster, ui: WebView | None) -> None:
    """The banner, and the record `draemu wait` / `up --background` wait for."""
    from draemu.cmd import readiness

    lines = _banner(args, cluster, ui)
    print("\n".join(lines))
    print("Press Ctrl-C to stop.", flush=True)
    if not args.in_memory:
        readiness.write(cluster.data_dir, {
            "url": cluster.url, "kubeconfig": args.kubeconfig or str(cluster.kubeconfig_path),
            "webView": ui.url if ui is not None else None, "banner": lines})


class WebView:
    """The web view served beside the cluster, as an API client of it."""

    def __init__(self, gates: FeatureGates, *, demo: bool,
                 scheduler_config: str | None = None) -> None:
        self.gates = gates
        self.demo = demo
        self.scheduler_config = scheduler_config  # what the explanations replay
        self.url = ""
        self._parts: tuple[Client, LiveModel, UIServer] | None = None

    async def start(self, kubeconfig: Path, address: str, port: int) -> None:
        from draemu.client import Client
        from draemu.cmd.ui.model import LiveModel
        from draemu.cmd.ui.server import UIServer

        client = Client.from_kubeconfig(kubeconfig, user_agent="draemu-ui")
        model = LiveModel(client, self.gates)
        server = UIServer(client, model, demo=self.demo, kubeconfig=str(kubeconfig),
                          scheduler_config=self.scheduler_config)
        self._parts = (client, model, server)
        await model.start()
        self.url = await server.start(address, port)

    async def stop(self) -> None:
        if self._parts is not None:
            client, model, server = self._parts
            await server.stop()
            await model.stop()
            await client.close()
