"""`draemu down`: stop the `draemu up` of a data directory (one started with
`--background`, say), as Ctrl-C would; the data dir keeps the cluster."""

from __future__ import annotations

import argparse

HELP = "stop the draemu up of a data dir (it keeps its state for the next draemu up)"
STOP_TIMEOUT = 60.0  # seconds a graceful stop may take before SIGKILL


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", metavar="DIR",
                        help="the data dir draemu up was given (default: $XDG_DATA_HOME/draemu "
                        "or ~/.local/share/draemu)")


def run(args: argparse.Namespace) -> int:
    import os
    import signal
    import sys
    import time
    from pathlib import Path

    from draemu.cmd import readiness
    from draemu.cmd.cluster import default_data_dir

    data_dir = Path(args.data_dir or default_data_dir())
    pid = readiness.running_pid(data_dir)
    if pid is None:
        print(f"no draemu runs on the data directory {data_dir}", file=sys.stderr)
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while readiness.alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            print(f"draemu (pid {pid}) did not stop in {STOP_TIMEOUT:.0f} s: killed",
                  file=sys.stderr)
            break
        time.sleep(0.1)
    print(f"stopped draemu (pid {pid}) on {data_dir}")
    return 0
