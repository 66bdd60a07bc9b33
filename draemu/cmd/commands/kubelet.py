"""`draemu kubelet --node NAME`: one emulated kubelet alone, against any draemu apiserver.

It registers the Node, renews its Lease, watches `<root>/plugins_registry` for DRA
plugins (built-in ones from a preset with `--preset`, or any external plugin binary) and
runs the pods bound to the node. Its kubelet API (container logs, which the apiserver
proxies for `kubectl logs`) listens with HTTPS on `--address`/`--port`; its serving
certificate is signed by the cluster CA found in `--data-dir` (else self-signed, or
given with `--tls-cert-file`), and it trusts client certificates of the kubeconfig's CA.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from draemu.kubelet.servingcert import ServingTLS

HELP = "run one emulated kubelet (and optionally its preset drivers) against an apiserver"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from draemu.cmd.commands._common import add_runtime_arguments

    parser.add_argument("--node", required=True, metavar="NAME", help="the node's name")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="credentials to use (default: $KUBECONFIG or ~/.kube/config); "
                        "see 'draemu kubeconfig --node NAME' for the node's own")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="the cluster's data directory (default: as draemu up): its CA "
                        "signs the kubelet's serving certificate")
    parser.add_argument("--root-dir", metavar="DIR",
                        help="the kubelet directory (default: <data dir>/nodes/NAME)")
    parser.add_argument("--tls-cert-file", metavar="FILE",
                        help="serving certificate of the kubelet API (with "
                        "--tls-private-key-file) instead of one made at start")
    parser.add_argument("--tls-private-key-file", metavar="FILE")
    parser.add_argument("--client-ca-file", metavar="FILE",
                        help="CA of the client certificates the kubelet API accepts "
                        "(default: the kubeconfig's cluster CA)")
    add_runtime_arguments(parser)
    parser.add_argument("--preset", metavar="NAME|FILE",
                        help="also run the built-in drivers that this preset gives the node")
    parser.add_argument("--labels", default="", metavar="K=V,...",
                        help="extra node labels; as for a real kubelet, none in the "
                        "kubernetes.io or k8s.io namespaces beyond the kubelet's own "
                        "(node-role.kubernetes.io/... is an administrator's: kubectl label "
                        "node)")
    parser.add_argument("--address", default="127.0.0.1",
                        help="kubelet API address, also the Node's InternalIP")
    parser.add_argument("--port", type=int, default=0,
                        help="kubelet API port (default: 0, a free one)")
    parser.add_argument("--feature-gates", default="", metavar="A=true,B=false",
                        help="feature gates, e.g. ResourceHealthStatus=true")


def run(args: argparse.Namespace) -> int:
    import sys

    from draemu import aio
    from draemu.api.nodelabels import kubelet_may_set_label
    from draemu.client import Client, ConfigError, config
    from draemu.cmd.cluster import default_data_dir
    from draemu.cmd.commands._common import runtime_image_map, serve
    from draemu.drivers.builtin import start_builtin_driver
    from draemu.drivers.presets import PresetError, load_preset
    from draemu.features import FeatureGateError, FeatureGates
    from draemu.kubelet.kubelet import Kubelet, KubeletOptions

    try:
        gates = FeatureGates.parse(args.feature_gates)
        labels = dict(item.split("=", 1) for item in args.labels.split(",") if item)
        refused = sorted(k for k in labels if not kubelet_may_set_label(k))
        if refused:
            # As the kubelet: NodeRestriction would refuse the registration anyway.
            print(f"error: unknown 'kubernetes.io' or 'k8s.io' labels specified with "
                  f"--labels: {refused} (an administrator sets them, e.g. kubectl label "
                  f"node {args.node} ...)", file=sys.stderr)
            return 2
        drivers = []
        if args.preset:
            specs = {n.name: n for n in load_preset(args.preset).nodes}
            if args.node not in specs:
                print(f"error: preset {args.preset} has no node {args.node} (it has: "
                      f"{', '.join(specs)})", file=sys.stderr)
                return 2
            drivers = specs[args.node].drivers
            preset_labels = specs[args.node].labels
            admin_only = sorted(k for k in preset_labels if not kubelet_may_set_label(k))
            if admin_only:
                print(f"note: the preset's labels {', '.join(admin_only)} are an "
                      f"administrator's to set (kubectl label node {args.node} ...); a "
                      f"kubelet may not", file=sys.stderr)
            labels = {**{k: v for k, v in preset_labels.items() if k not in admin_only},
                      **labels}
        data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
        root = Path(args.root_dir) if args.root_dir else data_dir / "nodes" / args.node
        tls = _serving_tls(args, config.load(args.kubeconfig).ca_data, data_dir, root)
        client = Client.from_kubeconfig(args.kubeconfig)
        image_map = runtime_image_map(args)
    except (FeatureGateError, PresetError, ConfigError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    kubelet = Kubelet(client, KubeletOptions(
        node_name=args.node, root_dir=root, runtime=args.runtime, labels=labels,
        address=args.address, port=args.port, tls=tls, feature_gates=gates,
        image_map=image_map, runtime_unconfined=args.runtime_unconfined))
    plugins = []

    async def start() -> None:
        await kubelet.start()
        layout = kubelet.layout
        for spec in drivers:
            plugins.append(await start_builtin_driver(
                spec, args.node, client, layout.registry_dir, layout.plugin_dir(spec.name),
                layout.cdi_dir))
        print(f"node {args.node} is up; kubelet API on {args.address}:{kubelet.server.port}"
              if kubelet.server else f"node {args.node} is up", flush=True)
        print(f"  registration dir: {layout.registry_dir}", flush=True)
        print(f"  plugins dir:      {layout.plugins_dir}", flush=True)
        print(f"  CDI dir:          {layout.cdi_dir}", flush=True)

    async def stop() -> None:
        for plugin in plugins:
            await plugin.stop()
        await kubelet.stop()
        await client.close()

    aio.run(serve(start, stop))
    return 0


def _serving_tls(args: argparse.Namespace, kubeconfig_ca: bytes | None, data_dir: Path,
                 root: Path) -> ServingTLS | None:
    """The kubelet API's TLS; None (plain HTTP) only when no CA is known to check callers
    against (an apiserver serving plain HTTP has no client certificate to show)."""
    from draemu.kubelet.node import reachable_address
    from draemu.kubelet.servingcert import (
        ServingTLS,
        cluster_ca,
        issue_serving_tls,
        write_client_ca,
    )

    client_ca = Path(args.client_ca_file).read_bytes() if args.client_ca_file else kubeconfig_ca
    if client_ca is None:
        return None
    directory = root / "pki"
    if args.tls_cert_file or args.tls_private_key_file:
        if not (args.tls_cert_file and args.tls_private_key_file):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")
        return ServingTLS(Path(args.tls_cert_file), Path(args.tls_private_key_file),
                          write_client_ca(directory, client_ca))
    hosts = [reachable_address(args.address), args.node, "localhost"]
    return issue_serving_tls(directory, args.node, hosts, client_ca, cluster_ca(data_dir))
