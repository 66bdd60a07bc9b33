"""`draemu nodes --kubeconfig F --count N`: N emulated nodes — each a kubelet with its
preset's DRA drivers — in one process, against any apiserver, draemu's or a real
cluster's; several such processes (`--first`) spread a large emulation over machines.

Each node is what `draemu up` runs in its child process (draemu/cmd/nodes.py): it
registers its Node, renews its Lease, runs the pods bound to it and serves its kubelet API
(logs, exec) over HTTPS on an address of its own, which the Node reports, so that the
apiserver reaches it as it reaches a real kubelet. With the cluster CA (`--ca-dir`: a
draemu data directory's pki/, or kubeadm's /etc/kubernetes/pki) each node gets its own
credentials (a client certificate for system:node:NAME in system:nodes, as the Node
authorizer and NodeRestriction expect) and a serving certificate the CA signed; without
it the nodes use the kubeconfig's credentials and self-signed serving certificates.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from draemu.client import Client
    from draemu.client.config import Connection
    from draemu.cmd.nodecredentials import NodeAccess
    from draemu.kubelet.servingcert import ServingTLS
    from draemu.pki import KeyPair

# Nodes starting at once: each opens TLS connections to the apiserver and registers.
STARTING = 64
# Seconds to wait for every driver's slices and registration before saying so.
READY_TIMEOUT = 120.0

HELP = "run N emulated nodes (kubelets with their DRA drivers) against any apiserver"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from draemu.cmd.commands._common import add_runtime_arguments

    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="the apiserver and the credentials to reach it (default: "
                        "$KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--count", type=int, required=True, metavar="N",
                        help="number of nodes: the preset's node template (a node with a "
                        "count) made N times")
    parser.add_argument("--preset", default="example", metavar="NAME|FILE",
                        help="the nodes' labels, capacity and drivers (default: example, "
                        "nodes node-1, node-2, ... with 8 example GPUs each)")
    parser.add_argument("--first", type=int, default=1, metavar="I",
                        help="the first node's number: node-I ... node-(I+N-1), so that "
                        "processes on several machines run different nodes (default: 1)")
    parser.add_argument("--ca-dir", metavar="DIR",
                        help="folder with the cluster CA (ca.crt, ca.key): a draemu data "
                        "directory's pki/ or kubeadm's /etc/kubernetes/pki; each node then "
                        "gets its own credentials (system:node:NAME) and a serving "
                        "certificate the CA signed")
    parser.add_argument("--root-dir", metavar="DIR",
                        help="where the nodes' kubelet folders go (DIR/nodes/NAME; default: "
                        "a temporary folder, removed at exit)")
    parser.add_argument("--address", metavar="IP",
                        help="address every kubelet API listens on (each on a port of its "
                        "own), the Nodes' InternalIP: this machine's, for an apiserver on "
                        "another (default: a loopback address per node, 127.0.x.y)")
    add_runtime_arguments(parser)
    parser.add_argument("--feature-gates", default="", metavar="A=true,B=false",
                        help="feature gates, e.g. ResourceHealthStatus=true")


def run(args: argparse.Namespace) -> int:
    import sys
    import tempfile

    from draemu import aio
    from draemu.client import ConfigError, config
    from draemu.cmd.commands._common import runtime_image_map, serve
    from draemu.drivers.presets import PresetError, load_preset
    from draemu.features import FeatureGateError, FeatureGates

    if args.count < 1 or args.first < 0:
        print("error: --count must be 1 or more and --first 0 or more", file=sys.stderr)
        return 2
    try:
        gates = FeatureGates.parse(args.feature_gates)
        preset = load_preset(args.preset, args.count, args.first)
        ca = _cluster_ca(Path(args.ca_dir)) if args.ca_dir else None
        connection = config.load(args.kubeconfig)
        image_map = runtime_image_map(args)
    except (FeatureGateError, PresetError, ConfigError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _raise_open_files_limit()
    temp = None if args.root_dir else tempfile.TemporaryDirectory(prefix="draemu-nodes-")
    data_dir = Path(args.root_dir) if args.root_dir else Path(temp.name)  # type: ignore[union-attr]
    access = _access(connection, ca, data_dir, args.address, args.kubeconfig)
    handle = None

    async def start() -> None:
        nonlocal handle
        import time

        from draemu.cmd.nodes import start_nodes

        started = time.perf_counter()

        handle = await start_nodes(preset, data_dir=data_dir, runtime=args.runtime,
                                   feature_gates=gates, image_map=image_map, access=access,
                                   runtime_unconfined=args.runtime_unconfined,
                                   first_index=max(args.first - 1, 0),
                                   concurrency=STARTING, wait=False)
        try:
            await handle.wait_ready(READY_TIMEOUT)
        except TimeoutError as e:  # they go on trying: a slow apiserver is no reason to stop
            print(f"warning: {e} within {READY_TIMEOUT:.0f} s; still trying", flush=True)
        names = list(handle.nodes)
        print(f"{len(names)} nodes up in {time.perf_counter() - started:.1f} s "
              f"({names[0]} ... {names[-1]}) against {connection.server}", flush=True)
        print(f"  kubelet folders: {data_dir / 'nodes'}", flush=True)

    async def stop() -> None:
        if handle is not None:
            await handle.stop()

    try:
        aio.run(serve(start, stop))
    except (OSError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if temp is not None:
            temp.cleanup()
    return 0


def _cluster_ca(folder: Path) -> KeyPair:
    from draemu.pki import KeyPair

    cert, key = folder / "ca.crt", folder / "ca.key"
    if not (cert.exists() and key.exists()):
        raise ValueError(f"--ca-dir {folder}: no ca.crt and ca.key there")
    return KeyPair(cert.read_bytes(), key.read_bytes())


def _raise_open_files_limit() -> None:
    """Each node holds a few sockets (its API, its connections, its drivers'): take the
    hard limit of open files."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _access(connection: Connection, ca: KeyPair | None, data_dir: Path,
            address: str | None, kubeconfig: str | None) -> NodeAccess:
    """How the nodes reach the apiserver (their own credentials when the CA is known,
    else the kubeconfig's) and how it reaches their kubelet APIs."""
    from dataclasses import replace

    from draemu.client import Client
    from draemu.cmd.nodecredentials import NodeAccess
    from draemu.kubelet.servingcert import issue_serving_tls
    from draemu.pki import make_client_cert

    def node_client(name: str) -> Client:
        if ca is None:
            return Client.from_kubeconfig(kubeconfig)
        pair = make_client_cert(ca, f"system:node:{name}", ["system:nodes"])
        own = replace(connection, cert_data=pair.cert_pem, key_data=pair.key_pem, token=None)
        return Client(own.server, ssl_context=own.ssl_context(), ca_pem=own.ca_data)

    def serving_tls(name: str, host: str) -> ServingTLS | None:
        # The apiserver shows a client certificate its CA signed (the kubeconfig's).
        if connection.ca_data is None:
            return None
        return issue_serving_tls(data_dir / "nodes" / name / "pki", name,
                                 [host, name, "localhost"], connection.ca_data, ca)

    return NodeAccess(url=connection.server, node_client=node_client,
                      admin_client=lambda: Client.from_kubeconfig(kubeconfig),
                      serving_tls=serving_tls,
                      kubelet_address=(lambda _index: address) if address else None)
