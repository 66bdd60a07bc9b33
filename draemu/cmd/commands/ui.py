"""`draemu ui`: the web view against any cluster (draemu's or a real one)."""

from __future__ import annotations

import argparse

HELP = "serve the web view (nodes, devices, claims, pods, reasons) of a cluster"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", default=None, help="kubeconfig context")
    parser.add_argument("--address", default="127.0.0.1",
                        help="address to serve the page on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0,
                        help="port to serve the page on; 0 picks a free one (default: 0)")
    parser.add_argument("--demo", action="store_true",
                        help="offer the seed demo's scenarios step by step (applies and "
                        "deletes the examples in the default namespace)")
    parser.add_argument("--feature-gates", default="", metavar="NAME=BOOL,...",
                        help="feature gates the cluster's scheduler runs with (for the "
                        "explanations and the what-if panel)")
    parser.add_argument("--scheduler-config", metavar="FILE",
                        help="the KubeSchedulerConfiguration the cluster's scheduler runs "
                        "with, which the explanations replay (default: upstream's default "
                        "profile)")


def run(args: argparse.Namespace) -> int:
    import sys

    from draemu import aio
    from draemu.client import Client, ConfigError
    from draemu.client.config import default_paths
    from draemu.cmd.commands._common import wait_for_signal
    from draemu.cmd.ui.model import LiveModel
    from draemu.cmd.ui.server import UIServer
    from draemu.features import FeatureGateError, FeatureGates
    from draemu.scheduler.config import ConfigError as SchedulerConfigError
    from draemu.scheduler.config import load

    scheduler_config = None
    try:
        if args.scheduler_config:
            with open(args.scheduler_config, encoding="utf-8") as f:
                scheduler_config = f.read()
            load(scheduler_config)
    except (OSError, SchedulerConfigError) as e:
        print(f"error: --scheduler-config: {e}", file=sys.stderr)
        return 2
    try:
        gates = FeatureGates.parse(args.feature_gates)
        client = Client.from_kubeconfig(args.kubeconfig, args.context, user_agent="draemu-ui")
        kubeconfig = args.kubeconfig or default_paths()[0]
    except (FeatureGateError, ConfigError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    async def main() -> int:
        model = LiveModel(client, gates)
        server = UIServer(client, model, demo=args.demo, kubeconfig=str(kubeconfig),
                          context=args.context, scheduler_config=scheduler_config)
        try:
            try:
                await model.start()
                url = await server.start(args.address, args.port)
            except OSError as e:
                print(f"error: cannot serve the web view: {e}", file=sys.stderr)
                return 1
            print(f"web view: {url}", flush=True)
            print("Press Ctrl-C to stop.", flush=True)
            await wait_for_signal()
            return 0
        finally:
            await server.stop()
            await model.stop()
            await client.close()

    return aio.run(main())
