"""`draemu wait`: until the `draemu up` of a data directory is ready (for scripts that
start it in the background: `draemu up ... &`, then `draemu wait`)."""

from __future__ import annotations

import argparse

HELP = "wait until the draemu up of a data dir is ready (API serving, nodes Ready)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", metavar="DIR",
                        help="the data dir draemu up was given (default: $XDG_DATA_HOME/draemu "
                        "or ~/.local/share/draemu)")
    parser.add_argument("--timeout", default="120s", metavar="DURATION",
                        help="give up after this long: 90s, 2m, or seconds (default: 120s)")


def parse_duration(text: str) -> float:
    """kubectl's durations: 30s, 2m, 1h, 1m30s, 500ms, or a number of seconds."""
    import re

    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r} (use e.g. 90s, 2m, 1m30s)")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * scale[u] for n, u in parts)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from draemu.cmd import readiness
    from draemu.cmd.cluster import default_data_dir

    try:
        timeout = parse_duration(args.timeout)
    except ValueError as e:
        print(f"error: --timeout: {e}", file=sys.stderr)
        return 2
    data_dir = Path(args.data_dir or default_data_dir())
    record = readiness.wait(data_dir, timeout)
    if record is None:
        print(f"error: no draemu became ready on the data directory {data_dir} within "
              f"{args.timeout}", file=sys.stderr)
        return 1
    print(f"draemu is ready: {record['url']} (kubeconfig {record['kubeconfig']})")
    return 0
