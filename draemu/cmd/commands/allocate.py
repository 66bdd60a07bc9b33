"""`draemu allocate`: what the DRA allocator would do on one node, from manifests."""

from __future__ import annotations

import argparse
import sys

HELP = "show how DRA claims would be allocated on a node, from manifests, without a cluster"
EPILOG = ("exit status: 0 when every claim is allocated, 1 when they cannot be (unsatisfiable "
          "or an allocator error), 2 when the input is bad")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", action="append", required=True, metavar="FILE",
                        help="YAML or JSON manifests (DeviceClass, ResourceSlice, "
                        "ResourceClaim, DeviceTaintRule, Node); '-' reads stdin; repeatable")
    parser.add_argument("--node", required=True, help="name of the node to allocate on")
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


def run(args: argparse.Namespace) -> int:
    import json

    import yaml

    from draemu.cmd.explain import offline
    from draemu.features import FeatureGateError, FeatureGates

    try:
        gates = FeatureGates.parse(args.feature_gates)
        labels = _labels(args.node_label)
        objects = []
        for name in args.filename:
            if name == "-":
                text = sys.stdin.read()
            else:
                with open(name, encoding="utf-8") as f:
                    text = f.read()
            objects.extend(offline.parse_documents(text, name))
        outcome, claims, inputs = offline.run(objects, args.node, labels, gates,
                                              validate=not args.no_validate)
    except (OSError, ValueError, FeatureGateError, offline.InputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for skipped in inputs.skipped:
        print(f"warning: ignoring {skipped} (not a DRA object or Node)", file=sys.stderr)
    if args.output == "text":
        print(outcome.explanation.text())
    else:
        report = offline.report(outcome, claims)
        if args.output == "json":
            print(json.dumps(report, indent=2))
        else:
            print(yaml.safe_dump(report, sort_keys=False), end="")
    return 0 if outcome.allocated else 1
