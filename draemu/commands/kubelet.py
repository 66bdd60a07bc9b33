"""`draemu kubelet --node NAME`: one emulated kubelet alone, against any draemu apiserver.

It registers the Node, renews its Lease, watches `<root>/plugins_registry` for DRA
plugins (built-in ones from a preset with `--preset`, or any external plugin binary) and
runs the pods bound to the node. Its kubelet API (container logs) listens on
`--address`/`--port`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "run one emulated kubelet (and optionally its preset drivers) against an apiserver"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node", required=True, metavar="NAME", help="the node's name")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="credentials to use (default: $KUBECONFIG or ~/.kube/config); "
                        "see 'draemu kubeconfig --node NAME' for the node's own")
    parser.add_argument("--root-dir", metavar="DIR",
                        help="the kubelet directory (default: <draemu data dir>/nodes/NAME)")
    parser.add_argument("--runtime", choices=["fake", "process"], default="fake",
                        help="fake (default: nothing runs) or process (runs the commands)")
    parser.add_argument("--preset", metavar="NAME|FILE",
                        help="also run the built-in drivers that this preset gives the node")
    parser.add_argument("--labels", default="", metavar="K=V,...", help="extra node labels")
    parser.add_argument("--address", default="127.0.0.1",
                        help="kubelet API address, also the Node's InternalIP")
    parser.add_argument("--port", type=int, default=0,
                        help="kubelet API port (default: 0, a free one)")
    parser.add_argument("--feature-gates", default="", metavar="A=true,B=false",
                        help="feature gates, e.g. ResourceHealthStatus=true")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from draemu.client import Client, ConfigError
    from draemu.cluster import default_data_dir
    from draemu.commands._common import serve
    from draemu.drivers.builtin import start_builtin_driver
    from draemu.drivers.presets import PresetError, load_preset
    from draemu.features import FeatureGateError, FeatureGates
    from draemu.kubelet.kubelet import Kubelet, KubeletOptions

    try:
        gates = FeatureGates.parse(args.feature_gates)
        labels = dict(item.split("=", 1) for item in args.labels.split(",") if item)
        drivers = []
        if args.preset:
            specs = {n.name: n for n in load_preset(args.preset).nodes}
            if args.node not in specs:
                print(f"error: preset {args.preset} has no node {args.node} (it has: "
                      f"{', '.join(specs)})", file=sys.stderr)
                return 2
            drivers = specs[args.node].drivers
            labels = {**specs[args.node].labels, **labels}
        client = Client.from_kubeconfig(args.kubeconfig)
    except (FeatureGateError, PresetError, ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    root = Path(args.root_dir) if args.root_dir else default_data_dir() / "nodes" / args.node
    kubelet = Kubelet(client, KubeletOptions(
        node_name=args.node, root_dir=root, runtime=args.runtime, labels=labels,
        address=args.address, port=args.port, feature_gates=gates))
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

    asyncio.run(serve(start, stop))
    return 0
