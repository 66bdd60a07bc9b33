"""`draemu scheduler`: the scheduler alone, against any apiserver (draemu's or a real one)."""

from __future__ import annotations

import argparse

HELP = "run the scheduler (with DRA) against an apiserver given by a kubeconfig"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--feature-gates", default="", metavar="A=true,B=false",
                        help="feature gates, as kube-scheduler takes them")
    parser.add_argument("--config", metavar="FILE",
                        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): "
                             "profiles by schedulerName, plugins enabled/disabled, "
                             "pluginConfig args, percentageOfNodesToScore")
    parser.add_argument("--dra-filter-timeout", type=float, default=None, metavar="SECONDS",
                        help="longest time the DRA allocator may spend on one node (default "
                             "10; 0 = no limit; gate DRASchedulerFilterTimeout)")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import signal
    import sys

    from draemu import aio
    from draemu.client import Client, ConfigError
    from draemu.features import FeatureGateError, FeatureGates
    from draemu.scheduler import Scheduler
    from draemu.scheduler.config import ConfigError as SchedulerConfigError
    from draemu.scheduler.config import load_file

    try:
        config = load_file(args.config) if args.config else None
    except SchedulerConfigError as e:
        print(f"error: --config: {e}", file=sys.stderr)
        return 2
    try:
        gates = FeatureGates.parse(args.feature_gates)
        client = Client.from_kubeconfig(args.kubeconfig, args.context,
                                        user_agent="draemu-scheduler")
    except (FeatureGateError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    async def main() -> None:
        options = {} if args.dra_filter_timeout is None else {
            "dra_filter_timeout": args.dra_filter_timeout}
        scheduler = Scheduler(client, gates, config=config, **options)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await scheduler.start()
            aio.collect_young_less_often()
            await stop.wait()
        finally:
            await scheduler.stop()
            await client.close()

    aio.run(main())
    return 0
