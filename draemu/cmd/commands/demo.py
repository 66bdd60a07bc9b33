"""`draemu demo seed` and `draemu demo seed-nvidia`: the DRA introduction's three
scenarios, run with real kubectl (seed-nvidia: served by NVIDIA's real DRA driver)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

HELP = "walk through the DRA introduction's scenarios on a seed cluster (with kubectl)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=["seed", "seed-nvidia"],
                        help="the walk-through to run: seed (draemu's example GPU driver) "
                        "or seed-nvidia (NVIDIA's real DRA driver on its mock NVML, from its "
                        "own Helm chart; needs root and tests/e2e/vendors/build.sh nvidia)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="use the cluster of this kubeconfig (it must have the seed "
                        "preset's nodes; for seed-nvidia, with NVIDIA's chart installed); "
                        "default: $KUBECONFIG if it points at one, else a temporary cluster")
    parser.add_argument("--pause", action="store_true",
                        help="wait for Enter between steps (for a live audience)")
    parser.add_argument("--kubectl", default="kubectl", help="kubectl binary to run")


def run(args: argparse.Namespace) -> int:
    import shutil
    import sys

    from draemu import aio, log

    if getattr(args, "log_level", "info") == "info":  # keep the walk-through readable
        # Before the components are imported: their loggers are bound at import.
        log.configure(getattr(args, "log_format", "auto"), "warning")
    kubectl = shutil.which(args.kubectl)
    if kubectl is None:
        print(f"error: {args.kubectl} not found; the demo runs real kubectl commands "
              "(pass --kubectl PATH)", file=sys.stderr)
        return 2
    return aio.run(_main(args, kubectl))


async def _existing_cluster(args: argparse.Namespace) -> tuple[Path | None, str]:
    """The kubeconfig of the cluster to use (None: start one), or why it cannot be used."""
    import os

    from draemu.client.config import default_paths
    from draemu.cmd.demo.seed import cluster_has_seed_nodes

    kubeconfig = Path(args.kubeconfig) if args.kubeconfig else None
    if kubeconfig is None and os.environ.get("KUBECONFIG"):
        candidate = default_paths()[0]
        if candidate.exists() and await cluster_has_seed_nodes(candidate):
            kubeconfig = candidate
    if kubeconfig is None:
        return None, ""
    if not await cluster_has_seed_nodes(kubeconfig):
        return None, (f"the cluster of {kubeconfig} has no seed nodes (start one with: "
                      f"draemu up --preset {args.name})")
    if args.name == "seed-nvidia":
        from draemu.cmd.demo.seed_nvidia import driver_installed
        if not await driver_installed(kubeconfig):
            return None, (f"the cluster of {kubeconfig} has no GPUs of NVIDIA's driver: "
                          "install its chart (examples/seed_nvidia/README.md), or run "
                          "draemu demo seed-nvidia without --kubeconfig")
    return kubeconfig, ""


async def _start(name: str) -> tuple[Any, Any]:
    """A temporary cluster for the walk-through, and the vendor files (seed-nvidia)."""
    import os

    from draemu.cmd.cluster import Cluster, ClusterOptions

    if name == "seed":
        return Cluster(ClusterOptions(in_memory=True, port=0, preset="seed")), None
    from draemu.cmd.demo.seed import DemoError
    from draemu.cmd.demo.seed_nvidia import image_map_entries, preset_file, vendor_files
    from draemu.kubelet.runtime import ImageMap

    if os.geteuid() != 0:
        raise DemoError("seed-nvidia runs NVIDIA's driver on the process runtime, which "
                        "needs root")
    files = vendor_files()
    options = ClusterOptions(in_memory=True, port=0, preset=str(preset_file()),
                             runtime="process", image_map=ImageMap(image_map_entries(files)))
    return Cluster(options), files


async def _main(args: argparse.Namespace, kubectl: str) -> int:
    import sys

    from draemu.cmd.demo.seed import Demo, DemoError

    kubeconfig, refusal = await _existing_cluster(args)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    cluster, files = None, None
    try:
        if kubeconfig is None:
            print(f"Starting a temporary draemu cluster with the {args.name} preset ...",
                  flush=True)
            cluster, files = await _start(args.name)
            await cluster.start()
            kubeconfig = cluster.kubeconfig_path
            print(f"  ready in {cluster.timings['nodes']:.2f} s at {cluster.url}", flush=True)
        demo = Demo(kubeconfig, kubectl, pause=args.pause, folder=_folder(args.name))
        if cluster is not None and files is not None:
            from draemu.cmd.demo.seed_nvidia import install_driver
            demo.title("NVIDIA's DRA driver from its own Helm chart, on its mock NVML")
            seconds = await install_driver(demo, files, cluster.data_dir)
            demo.say(f"\nhelm install -> every node's GPUs published: {seconds:.1f} s")
        await demo.run_all()
        return 0
    except DemoError as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    finally:
        if cluster is not None:
            await cluster.stop()


def _folder(name: str) -> Path | None:
    if name == "seed":
        return None
    from draemu.cmd.demo.seed_nvidia import manifests
    return manifests()
