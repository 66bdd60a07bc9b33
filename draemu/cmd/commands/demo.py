"""`draemu demo seed`: the DRA introduction's three scenarios, run with real kubectl."""

from __future__ import annotations

import argparse

HELP = "walk through the DRA introduction's scenarios on a seed cluster (with kubectl)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=["seed"], help="the walk-through to run")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="use the cluster of this kubeconfig (it must have the seed "
                        "preset's nodes); default: $KUBECONFIG if it points at one, else a "
                        "temporary in-process cluster")
    parser.add_argument("--pause", action="store_true",
                        help="wait for Enter between steps (for a live audience)")
    parser.add_argument("--kubectl", default="kubectl", help="kubectl binary to run")


def run(args: argparse.Namespace) -> int:
    import os
    import shutil
    import sys
    from pathlib import Path

    from draemu import aio, log

    if getattr(args, "log_level", "info") == "info":  # keep the walk-through readable
        # Before the components are imported: their loggers are bound at import.
        log.configure(getattr(args, "log_format", "auto"), "warning")
    from draemu.client.config import default_paths
    from draemu.cmd.demo.seed import Demo, DemoError, cluster_has_seed_nodes
    kubectl = shutil.which(args.kubectl)
    if kubectl is None:
        print(f"error: {args.kubectl} not found; the demo runs real kubectl commands "
              "(pass --kubectl PATH)", file=sys.stderr)
        return 2

    async def main() -> int:
        cluster = None
        kubeconfig = Path(args.kubeconfig) if args.kubeconfig else None
        if kubeconfig is None and os.environ.get("KUBECONFIG"):
            candidate = default_paths()[0]
            if candidate.exists() and await cluster_has_seed_nodes(candidate):
                kubeconfig = candidate
        if kubeconfig is not None and not await cluster_has_seed_nodes(kubeconfig):
            print(f"error: the cluster of {kubeconfig} has no seed nodes "
                  "(start one with: draemu up --preset seed)", file=sys.stderr)
            return 2
        if kubeconfig is None:
            from draemu.cmd.cluster import Cluster, ClusterOptions

            print("Starting a temporary draemu cluster with the seed preset ...", flush=True)
            cluster = Cluster(ClusterOptions(in_memory=True, port=0, preset="seed"))
            await cluster.start()
            kubeconfig = cluster.kubeconfig_path
            print(f"  ready in {cluster.timings['nodes']:.2f} s at {cluster.url}", flush=True)
        demo = Demo(kubeconfig, kubectl, pause=args.pause)
        try:
            await demo.run_all()
            return 0
        except DemoError as e:
            print(f"\nerror: {e}", file=sys.stderr)
            return 1
        finally:
            if cluster is not None:
                await cluster.stop()

    return aio.run(main())
