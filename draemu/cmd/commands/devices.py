"""`draemu devices`: every published device, who has it, and what capacity is left."""

from __future__ import annotations

import argparse

HELP = "list the devices drivers publish, their allocations and remaining capacity"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--node", help="only this node's devices")
    parser.add_argument("--driver", help="only this driver's devices")


def run(args: argparse.Namespace) -> int:
    import sys

    from draemu import aio
    from draemu.client import ApiError, Client, ConfigError
    from draemu.cmd.explain.devices import V1, build, render

    async def main() -> int:
        try:
            client = Client.from_kubeconfig(args.kubeconfig, args.context,
                                            user_agent="draemu-devices")
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        async with client:
            try:
                slices = (await client.list_all(V1, "resourceslices")).get("items") or []
                claims = (await client.list_all(V1, "resourceclaims")).get("items") or []
            except (ApiError, OSError) as e:
                print(f"error: {e}", file=sys.stderr)
                return 1
        rows = [r for r in build(slices, claims)
                if (not args.node or r.node == args.node)
                and (not args.driver or r.driver == args.driver)]
        if not rows:
            print("No devices found.", file=sys.stderr)
            return 0
        print(render(rows))
        return 0

    return aio.run(main())
