"""Helpers shared by the long-running commands."""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Awaitable, Callable


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
    """Start, run until a signal, stop — stopping also when start fails half-way."""
    try:
        await start()
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
