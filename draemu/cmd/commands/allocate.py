"""`draemu allocate`: what the DRA allocator would do on a node, from manifests."""

from __future__ import annotations

import argparse
import sys
from typing import Any

HELP = "show how DRA claims would be allocated on a node, from manifests, without a cluster"
EPILOG = ("The devices come from the manifests (-f), a preset (--preset) or a live cluster "
          "(--kubeconfig, read only), or any of them together; the claims to allocate are "
          "the -f ResourceClaims without status.allocation. Without --node, every node the "
          "input knows is tried. Exit status: 0 when the claims are allocated (on at least "
          "one node), 1 when they cannot be (unsatisfiable or an allocator error), 2 when the "
          "input is bad. Example: draemu allocate --preset seed -f "
          "examples/allocate/claim.yaml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", action="append", default=[], metavar="FILE",
                        help="YAML or JSON manifests (DeviceClass, ResourceSlice, "
                        "ResourceClaim, DeviceTaintRule, Node, or a draemu Preset); '-' reads "
                        "stdin; repeatable")
    parser.add_argument("--preset", metavar="NAME|FILE",
                        help="take the devices, classes and nodes of a preset (seed, example, "
                        "or a preset file) as the inventory")
    parser.add_argument("--nodes", type=int, metavar="N",
                        help="number of nodes for --preset example")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="take the devices, classes, taint rules, allocated claims and "
                        "nodes of that cluster as the inventory (read only: nothing is "
                        "written)")
    parser.add_argument("--context", default=None, help="kubeconfig context (--kubeconfig)")
    parser.add_argument("--node", help="name of the node to allocate on (default: every node "
                        "the input knows)")
    parser.add_argument("--node-label", action="append", default=[], metavar="KEY=VALUE",
                        help="a label of the node (repeatable; adds to a Node manifest's)")
    parser.add_argument("--feature-gates", default="", metavar="NAME=BOOL,...",
                        help="Kubernetes feature gates, e.g. DRAConsumableCapacity=false")
    parser.add_argument("--no-validate", action="store_true",
                        help="feed objects to the allocator without API validation")
    parser.add_argument("-o", "--output", choices=["json", "yaml", "text"], default="text",
                        help="output format (default: text)")


def _labels(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--node-label {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def _objects(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Everything the flags name, as API objects."""
    from draemu.cmd.explain import offline

    objects: list[dict[str, Any]] = []
    if args.preset:
        objects += offline.preset_objects(args.preset, args.nodes)
    if args.kubeconfig:
        objects += _from_cluster(args.kubeconfig, args.context)
    for name in args.filename:
        if name == "-":
            text = sys.stdin.read()
        else:
            with open(name, encoding="utf-8") as f:
                text = f.read()
        docs = offline.parse_documents(text, name)
        if any(d.get("kind") == "Preset" for d in docs):
            if name == "-":
                raise offline.InputError("-: a Preset is read from a file (pass its path)")
            objects += offline.preset_objects(name)
            docs = [d for d in docs if d.get("kind") != "Preset"]
        objects += docs
    return objects


def _from_cluster(kubeconfig: str, context: str | None) -> list[dict[str, Any]]:
    from draemu import aio
    from draemu.client import Client
    from draemu.cmd.explain import offline

    async def read() -> list[dict[str, Any]]:
        async with Client.from_kubeconfig(kubeconfig, context,
                                          user_agent="draemu-allocate") as client:
            return await offline.cluster_objects(client)

    return aio.run(read())


def run(args: argparse.Namespace) -> int:
    from draemu.client import ApiError, ConfigError
    from draemu.cmd.explain import offline
    from draemu.drivers.presets import PresetError
    from draemu.features import FeatureGateError, FeatureGates

    if not (args.filename or args.preset or args.kubeconfig):
        print("error: nothing to allocate from: pass -f FILE (and --preset or --kubeconfig "
              "for the devices)", file=sys.stderr)
        return 2
    try:
        gates = FeatureGates.parse(args.feature_gates)
        labels = _labels(args.node_label)
        objects = _objects(args)
        outcomes, claims, inputs = offline.run_on_nodes(
            objects, [args.node] if args.node else None, labels, gates,
            validate=not args.no_validate)
    except PresetError as e:  # before ValueError, which it is
        print(f"error: preset: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError, FeatureGateError, offline.InputError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ApiError as e:
        print(f"Error from server: {e}", file=sys.stderr)
        return 2
    for skipped in inputs.skipped:
        print(f"warning: ignoring {skipped} (not a DRA object or Node)", file=sys.stderr)
    _print(args, outcomes, claims)
    return 0 if any(o.allocated for o in outcomes) else 1


def _print(args: argparse.Namespace, outcomes: list[Any], claims: list[dict[str, Any]]) -> None:
    import json

    import yaml

    from draemu.cmd.explain import offline

    if args.output == "text":
        print("\n".join(o.explanation.text() for o in outcomes))
        if not args.node:
            fits = [o.node for o in outcomes if o.allocated]
            print(f"The claims fit on: {', '.join(fits)}" if fits
                  else "The claims fit on no node.")
        return
    reports = [offline.report(o, claims) for o in outcomes]
    out: Any = reports[0] if args.node else {
        "nodes": reports, "fits": [o.node for o in outcomes if o.allocated]}
    if args.output == "json":
        print(json.dumps(out, indent=2))
    else:
        print(yaml.safe_dump(out, sort_keys=False), end="")
