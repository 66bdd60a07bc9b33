"""`draemu apiserver`: the Kubernetes API server alone (the other components can run as
separate processes against it)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "run the apiserver alone"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--data-dir", type=Path, default=None,
                       help="state directory: store, certificates, kubeconfig "
                       "(default: ~/.local/share/draemu)")
    where.add_argument("--in-memory", action="store_true",
                       help="keep the store in memory (certificates in a temporary directory)")
    parser.add_argument("--address", default="127.0.0.1", help="bind address (default: "
                        "127.0.0.1)")
    parser.add_argument("--port", type=int, default=6443, help="port; 0 picks a free one "
                        "(default: 6443)")
    parser.add_argument("--kubeconfig", type=Path, default=None,
                        help="also write the admin kubeconfig here (a kubeconfig draemu did "
                        "not write is never overwritten)")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="store URL: sqlite:///file.db (default: state.db in the data "
                        "directory), sqlite://:memory:, postgresql://user@host:port/db, "
                        "etcd://host:port[,host:port...][/prefix] (the etcd members; keys "
                        "after the prefix are kube-apiserver's, /registry/...)")
    parser.add_argument("--pki-dir", type=Path, default=None, metavar="DIR",
                        help="where the CA, certificates, admin credentials and service-"
                        "account keys live, made there when missing (default: pki in the "
                        "data directory); several apiservers on one PostgreSQL or etcd "
                        "store given the same DIR share them, so one kubeconfig and one "
                        "service-account token work with each")
    parser.add_argument("--feature-gates", default="", metavar="A=true,B=false",
                        help="feature gates to change from Kubernetes 1.37's defaults")
    from draemu.cmd.commands._common import add_emulation_arguments, add_etcd_arguments

    add_etcd_arguments(parser)
    add_emulation_arguments(parser, "off")
    parser.add_argument("--insecure-http", action="store_true",
                        help="serve plain HTTP without authentication (loopback only)")
    parser.add_argument("--token-auth-file", type=Path, default=None,
                        help='bearer tokens, CSV lines: token,user,uid,"group1,group2"')
    parser.add_argument("--audit-log", type=Path, default=None, metavar="FILE",
                        help="append an audit event (audit.k8s.io/v1, Metadata level) per "
                        "request to FILE, as JSON lines")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import signal
    import sys
    import tempfile

    from draemu import aio
    from draemu import kubeconfig as kubeconfig_file
    from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions
    from draemu.cmd.commands._common import store_url as store_url_of
    from draemu.features import FeatureGateError, FeatureGates
    from draemu.store import StoreError

    try:
        gates = FeatureGates.parse(args.feature_gates, args.emulated_version)
    except FeatureGateError as e:
        print(f"draemu apiserver: --feature-gates: {e}", file=sys.stderr)
        return 2
    try:
        store_url = store_url_of(args)
    except (ValueError, StoreError) as e:
        print(f"draemu apiserver: {e}", file=sys.stderr)
        return 2
    temp: tempfile.TemporaryDirectory[str] | None = None
    if args.in_memory:
        temp = tempfile.TemporaryDirectory(prefix="draemu-apiserver-")
        data_dir = Path(temp.name)
        store_url = store_url or "sqlite://:memory:"
    else:
        data_dir = args.data_dir or Path.home() / ".local" / "share" / "draemu"
    if args.kubeconfig and kubeconfig_file.foreign(args.kubeconfig):
        print(f"draemu apiserver: {args.kubeconfig} holds a kubeconfig draemu did not write; "
              "refusing to overwrite it (choose another --kubeconfig path)", file=sys.stderr)
        return 1
    options = APIServerOptions(data_dir=data_dir, store_url=store_url, address=args.address,
                               port=args.port, insecure_http=args.insecure_http,
                               feature_gates=gates, token_file=args.token_auth_file,
                               audit_log=args.audit_log, pki_dir=args.pki_dir,
                               legacy_versions=bool(args.legacy_v1alpha3), freeze_gc=True)

    async def serve() -> int:
        server = APIServer(options)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await server.start()
        kubeconfig = server.kubeconfig_path
        if args.kubeconfig:
            kubeconfig = server.write_kubeconfig(args.kubeconfig)
        print(f"API server:  {server.url}", flush=True)
        print(f"export KUBECONFIG={kubeconfig}", flush=True)
        print(f"ready in {server.ready_seconds:.3f}s", flush=True)
        try:
            await stop.wait()
        finally:
            await server.stop()
        return 0

    try:
        return aio.run(serve())
    except (OSError, ValueError, StoreError) as e:
        print(f"draemu apiserver: {e}", file=sys.stderr)
        return 1
    finally:
        if temp is not None:
            temp.cleanup()
