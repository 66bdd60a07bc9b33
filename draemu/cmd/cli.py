"""The `draemu` command.

Each sub-command is a module in `draemu.cmd.commands` that defines `HELP` (one line),
`add_arguments(parser)` and `run(args) -> int`. Modules import their heavy
dependencies inside `run`, so `draemu --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

import draemu
from draemu.cmd import commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="draemu",
        description="A Kubernetes control plane for Dynamic Resource Allocation (DRA), "
        "in one Python process.",
        epilog="Run 'draemu COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version",
                        version=f"draemu {draemu.__version__} (Kubernetes "
                        f"{draemu.KUBERNETES_VERSION})")
    parser.add_argument("--log-format", choices=["auto", "console", "json"], default="auto",
                        help="log renderer: console on a terminal, JSON otherwise (default: auto)")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"],
                        default="info", help="least severe level logged (default: info)")
    # The logging options are accepted after the command too (`draemu up --log-format json`).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log-format", choices=["auto", "console", "json"],
                        default=argparse.SUPPRESS, help="log renderer (default: auto)")
    common.add_argument("--log-level", choices=["debug", "info", "warning", "error"],
                        default=argparse.SUPPRESS, help="least severe level logged")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"draemu.cmd.commands.{info.name}")
        name = getattr(module, "NAME", info.name.replace("_", "-"))
        command = sub.add_parser(name, help=module.HELP, description=module.HELP,
                                 epilog=getattr(module, "EPILOG", None), parents=[common])
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    # gRPC's fork handlers log a line ("skipping fork() handlers") each time a command
    # starts kubectl while a driver's gRPC server runs in this process; the children
    # exec at once and never use gRPC, so the handlers are not needed. Read when grpc is
    # first imported, which the commands do lazily, after this.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # `up --background` runs it again
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    from draemu import log

    log.configure(args.log_format, args.log_level)
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # inside the try: a closed pipe is reported here, not at exit
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `draemu why pod/x | head`: the reader is gone; say nothing more (as cat does).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:
        if not _user_facing(e):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 1


def _user_facing(error: Exception) -> bool:
    """Errors whose message is the whole story: one line, no traceback."""
    from draemu.store.errors import StoreLockedError  # not at start-up: it imports the store

    return isinstance(error, StoreLockedError)


if __name__ == "__main__":
    sys.exit(main())
