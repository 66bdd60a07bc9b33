"""`draemu controllers`: the controller manager alone, against any apiserver."""

from __future__ import annotations

import argparse
from pathlib import Path

from draemu.controllers.registry import NAMES

HELP = "run the controllers (resource claims, GC, namespaces, nodes, workloads, ...) alone"

# Also `draemu up --controllers`.
CONTROLLERS_HELP = (
    "controllers to run, as kube-controller-manager's --controllers: a comma-separated "
    "list where * is all of them, NAME adds one and -NAME leaves one out (upstream's "
    "NAME-controller names are taken too), e.g. '*,-node-lifecycle' (default: all): "
    + ", ".join(NAMES))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--controllers", default="", metavar="A,B",
                        help=CONTROLLERS_HELP)
    parser.add_argument("--service-account-private-key-file", metavar="FILE",
                        help="the key that signs legacy ServiceAccount token Secrets (a draemu "
                        "apiserver's <data-dir>/pki/sa.key); without it those Secrets stay "
                        "empty")
    parser.add_argument("--feature-gates", default="", metavar="A=true,B=false",
                        help="feature gates, as kube-controller-manager takes them")
    parser.add_argument("--allocate-node-cidrs", action="store_true",
                        help="node-ipam gives each Node a podCIDR from --cluster-cidr")
    parser.add_argument("--cluster-cidr", metavar="CIDR",
                        help="the range pod addresses come from (with --allocate-node-cidrs)")
    parser.add_argument("--node-cidr-mask-size", type=int, default=24, metavar="N",
                        help="the size of each Node's podCIDR block (default: 24)")


def run(args: argparse.Namespace) -> int:
    import sys

    from draemu import aio
    from draemu.client import Client, ConfigError
    from draemu.cmd.commands._common import serve
    from draemu.controllers.manager import ControllerManager
    from draemu.controllers.registry import select
    from draemu.features import FeatureGateError, FeatureGates

    try:
        gates = FeatureGates.parse(args.feature_gates)
        client = Client.from_kubeconfig(args.kubeconfig, args.context,
                                        user_agent="draemu-controller-manager")
        enabled = select(args.controllers)
        key = args.service_account_private_key_file
        if args.allocate_node_cidrs and not args.cluster_cidr:
            raise ValueError("--allocate-node-cidrs needs --cluster-cidr")
        manager = ControllerManager(client, gates, enabled=enabled,
                                    service_account_key_file=Path(key) if key else None,
                                    cluster_cidr=args.cluster_cidr
                                    if args.allocate_node_cidrs else None,
                                    node_cidr_mask_size=args.node_cidr_mask_size)
    except (FeatureGateError, ConfigError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    async def stop() -> None:
        await manager.stop()
        await client.close()

    aio.run(serve(manager.start, stop))
    return 0
