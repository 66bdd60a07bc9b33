"""`draemu why pod/NAME`: a per-node, per-device report of a pod's DRA allocation."""

from __future__ import annotations

import argparse
import sys

HELP = ("explain, node by node and device by device, why a pod went where it did or waits, "
        "and the scores that decided (replayed with the scheduler's plugins)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pod", metavar="pod/NAME", help="the pod (pod/NAME or NAME)")
    parser.add_argument("-n", "--namespace", default="default", help="the pod's namespace")
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: "
                        "$KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", default=None, help="kubeconfig context")
    parser.add_argument("--feature-gates", default="", metavar="NAME=BOOL,...",
                        help="feature gates the cluster's scheduler runs with")
    parser.add_argument("--scheduler-config", metavar="FILE",
                        help="the KubeSchedulerConfiguration the cluster's scheduler runs "
                        "with (its profiles, plugins and weights; default: upstream's "
                        "default profile)")


def _pod_name(text: str) -> str:
    kind, sep, name = text.partition("/")
    if not sep:
        return text
    if kind not in ("pod", "pods", "po"):
        raise ValueError(f"expected pod/NAME, got {text!r}")
    return name


def run(args: argparse.Namespace) -> int:
    from draemu import aio
    from draemu.client import ApiError, Client, ConfigError
    from draemu.cmd.explain.why import why_report
    from draemu.features import FeatureGateError, FeatureGates
    from draemu.scheduler.config import ConfigError as SchedulerConfigError
    from draemu.scheduler.config import load_file

    try:
        name = _pod_name(args.pod)
        gates = FeatureGates.parse(args.feature_gates)
        config = load_file(args.scheduler_config) if args.scheduler_config else None
        client = Client.from_kubeconfig(args.kubeconfig, args.context)
    except SchedulerConfigError as e:
        print(f"error: --scheduler-config: {e}", file=sys.stderr)
        return 2
    except (ValueError, FeatureGateError, ConfigError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    async def main() -> str:
        try:
            return await why_report(client, args.namespace, name, gates, config)
        finally:
            await client.close()

    try:
        print(aio.run(main()))
    except ApiError as e:
        print(f"Error from server: {e}", file=sys.stderr)
        return 1
    return 0
