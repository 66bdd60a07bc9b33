"""Helpers shared by the long-running commands."""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import Any


async def wait_for_signal() -> None:
    """Return on SIGINT or SIGTERM (graceful shutdown follows)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def serve(start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]) -> None:
    """Start, run until a signal, stop — stopping also when start fails half-way. Once
    started, the youngest generation is collected less often (draemu.aio)."""
    from draemu import aio

    try:
        await start()
        aio.collect_young_less_often()
        await wait_for_signal()
    finally:
        await stop()


def add_emulation_arguments(parser: argparse.ArgumentParser, legacy_default: str) -> None:
    """--emulated-version and --legacy-v1alpha3, shared by `up` and `apiserver`."""
    from draemu.features import CURRENT_VERSION, EMULATABLE_VERSIONS

    parser.add_argument("--emulated-version", default=CURRENT_VERSION, metavar="1.MINOR",
                        choices=EMULATABLE_VERSIONS,
                        help="behave as that Kubernetes release: its feature-gate defaults "
                        "and the resource.k8s.io versions it serves (1.38 no longer serves "
                        f"v1beta1); one of {', '.join(EMULATABLE_VERSIONS)} (default: "
                        f"{CURRENT_VERSION})")
    parser.add_argument("--legacy-v1alpha3", action=argparse.BooleanOptionalAction,
                        default=None,
                        help="also serve resource.k8s.io/v1alpha3 DeviceClass, "
                        "ResourceClaim, ResourceClaimTemplate and ResourceSlice in their "
                        "Kubernetes 1.31 shape, for manifests written then (no release since "
                        f"serves it; requests get a warning) (default: {legacy_default})")


def add_etcd_arguments(parser: argparse.ArgumentParser) -> None:
    """kube-apiserver's flags for TLS to etcd (with --store etcd://...), shared by `up`
    and `apiserver`."""
    group = parser.add_argument_group("TLS to etcd (with --store etcd://...)")
    group.add_argument("--etcd-cafile", metavar="FILE",
                       help="CA that signed the etcd members' serving certificates")
    group.add_argument("--etcd-certfile", metavar="FILE",
                       help="client certificate to present to etcd")
    group.add_argument("--etcd-keyfile", metavar="FILE",
                       help="key of --etcd-certfile")


def store_url(args: argparse.Namespace) -> str | None:
    """--store with --etcd-cafile/--etcd-certfile/--etcd-keyfile as the etcd URL's
    query parameters; ValueError when they are given without an etcd:// URL."""
    url = args.store
    if not (args.etcd_cafile or args.etcd_certfile or args.etcd_keyfile):
        return url
    if not url or not url.startswith("etcd://"):
        raise ValueError("--etcd-cafile, --etcd-certfile and --etcd-keyfile need "
                         "--store etcd://HOST:PORT[,HOST:PORT...]")
    if bool(args.etcd_certfile) != bool(args.etcd_keyfile):
        raise ValueError("--etcd-certfile and --etcd-keyfile go together")
    from draemu.store.etcdrpc import with_tls_files

    return with_tls_files(url, args.etcd_cafile, args.etcd_certfile, args.etcd_keyfile)


def add_runtime_arguments(parser: argparse.ArgumentParser) -> None:
    """--runtime and the process runtime's image map (draemu up, draemu kubelet)."""
    parser.add_argument("--runtime", choices=["fake", "process"], default="fake",
                        help="container runtime of the emulated kubelets: fake (nothing is "
                        "executed; logs list what the container would get) or process (runs "
                        "containers as local processes confined as a container runtime "
                        "confines them: each pod in a user namespace of its own, each "
                        "container in its own root with the pod's volumes; needs root)")
    parser.add_argument("--runtime-unconfined", action="store_true",
                        help="process runtime: run pods without a user namespace, as this "
                        "machine's root, where the machine cannot make user namespaces "
                        "(anyone who may create pods then controls this machine)")
    parser.add_argument("--image-map", action="append", default=[], metavar="IMAGE=PATH",
                        help="process runtime: the local executable or folder that stands for "
                        "an image (repeatable; IMAGE may omit its tag or be a pattern such as "
                        "'registry.k8s.io/*'); containers of unmapped images do not execute")
    parser.add_argument("--image-map-file", metavar="FILE",
                        help="process runtime: image map entries, one IMAGE=PATH per line")


def runtime_image_map(args: argparse.Namespace) -> Any:
    """The image map of --image-map and --image-map-file, checked before anything starts
    (paths exist, the runtime is process, and the process runtime can make its
    namespaces here); ValueError says what is wrong."""
    if args.runtime != "process" and not args.image_map_file and not args.image_map \
            and not args.runtime_unconfined:
        return None  # the fake runtime: nothing to import (`draemu up` stays light)
    from pathlib import Path

    from draemu.cmd.cluster import default_data_dir
    from draemu.kubelet.runtime import ImageMap
    from draemu.kubelet.runtime.process import NamespacesUnavailable, preflight

    image_map = ImageMap()
    if args.image_map_file:
        image_map.load_file(args.image_map_file)
    for entry in args.image_map:
        image_map.add_entry(entry)
    if image_map and args.runtime != "process":
        raise ValueError("--image-map needs --runtime process")
    if args.runtime_unconfined and args.runtime != "process":
        raise ValueError("--runtime-unconfined needs --runtime process")
    if args.runtime == "process":
        data_dir = getattr(args, "data_dir", None)
        try:
            preflight(Path(data_dir) if data_dir else default_data_dir(),
                      args.runtime_unconfined)
        except NamespacesUnavailable as err:
            raise ValueError(str(err)) from None
    return image_map
