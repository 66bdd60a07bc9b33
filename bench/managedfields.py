"""CPU time of the managedFields bookkeeping (`update_managed_fields`) for each write
that scheduling a pod makes in bench/scheduler.py.

    .venv/bin/python bench/managedfields.py [--baseline REV] [--iterations 1000]

The writes are recorded from a small cluster run in this process (apiserver, resource-
claim controller and scheduler; 4 nodes, 8 pods from one template): the first create of
a pod, of its claim and of an event, the claim controller's pod status patch, the
scheduler's claim update (finalizer) and claim status update (allocation, reservedFor),
and the binding. Each is replayed on fresh copies of its object; a figure is the best of
5 runs of process CPU time (garbage collector off) divided by the iterations.

`--baseline REV` measures, on the same recorded writes, the implementation at git
revision REV too (apiserver/wire/patch/{fieldpath,typed,managed}.py, before the
apiserver's regrouping apiserver/patch/, loaded over the current modules).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("fieldpath", "typed", "managed")  # in import order
REPEATS = 5

Write = tuple[str, tuple[Any, ...]]  # (label, arguments of update_managed_fields)


def _label(kind: str, manager: str, subresource: str, create: bool) -> str:
    verb = "create" if create else "update"
    return f"{verb} {kind}{'/' + subresource if subresource else ''} by {manager}"


def record() -> list[Write]:
    """The first write of each kind of a scheduled pod, with the arguments the
    apiserver passed."""
    from draemu import log
    from draemu.apiserver.endpoints import managedfields
    from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions
    from draemu.client import Client
    from draemu.controllers.manager import ControllerManager

    spec = importlib.util.spec_from_file_location("bench_scheduler",
                                                  ROOT / "bench" / "scheduler.py")
    assert spec is not None and spec.loader is not None
    scheduler_bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scheduler_bench)

    writes: dict[str, tuple[Any, ...]] = {}
    real = managedfields.update_managed_fields

    def recording(old: Any, new: Any, *args: Any, subresource: str = "") -> Any:
        label = _label(new.get("kind", ""), args[0], subresource, old is None)
        if new.get("kind") in ("Pod", "ResourceClaim", "Event") and label not in writes:
            writes[label] = copy.deepcopy((old, new, *args, subresource))
        return real(old, new, *args, subresource=subresource)

    async def run() -> None:
        log.configure("console", "warning")
        with tempfile.TemporaryDirectory(prefix="draemu-bench-") as tmp:
            server = APIServer(APIServerOptions(data_dir=Path(tmp),
                                                store_url="sqlite://:memory:"))
            await server.start()
            client = Client.from_kubeconfig(str(server.kubeconfig_path),
                                            user_agent="draemu-bench-controllers")
            controllers = ControllerManager(client, enabled=["resourceclaim"])
            await controllers.start()
            try:
                await scheduler_bench.run_one(str(server.kubeconfig_path), os.getpid(), 4, 8,
                                              False, False)
            finally:
                await controllers.stop()
                await client.close()
                await server.stop()

    managedfields.update_managed_fields = recording
    try:
        asyncio.run(run())
    finally:
        managedfields.update_managed_fields = real
    return list(writes.items())


def cpu_per_write(update: Callable[..., Any], args: tuple[Any, ...], iterations: int) -> float:
    """Microseconds of CPU per call, the best of REPEATS runs."""
    old, new, manager, operation, api_version, stamp, subresource = args
    best = float("inf")
    for _ in range(REPEATS):
        fresh = [copy.deepcopy(new) for _ in range(iterations)]
        gc.collect()
        gc.disable()
        start = time.process_time()
        for obj in fresh:
            update(old, obj, manager, operation, api_version, stamp, subresource=subresource)
        best = min(best, time.process_time() - start)
        gc.enable()
    return best / iterations * 1e6


def _source_at(revision: str, name: str) -> tuple[str, str]:
    """The patch library's module `name` at `revision`, its imports named as today (the
    library was apiserver/patch/ and imported draemu.apiserver.jsoncopy before the
    apiserver's modules were grouped by role)."""
    for path in (f"apiserver/wire/patch/{name}.py", f"apiserver/patch/{name}.py"):
        found = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT,
                               capture_output=True, text=True)
        if found.returncode == 0:
            source = found.stdout
            for old, new in (("patch", "wire.patch"), ("jsoncopy", "wire.jsoncopy")):
                source = source.replace(f"draemu.apiserver.{old}", f"draemu.apiserver.{new}")
            return path, source
    raise SystemExit(f"{revision}: no patch library module {name}")


def load_revision(revision: str) -> Callable[..., Any]:
    """`update_managed_fields` as it was at `revision`."""
    from draemu.apiserver.wire.patch import fieldpath, managed, typed

    for name, module in zip(MODULES, (fieldpath, typed, managed), strict=True):
        path, source = _source_at(revision, name)
        exec(compile(source, path, "exec"), module.__dict__)  # our own history
    return managed.update_managed_fields


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--baseline", metavar="REV",
                        help="also measure the implementation at this git revision")
    args = parser.parse_args()
    from draemu.apiserver.wire.patch import update_managed_fields

    writes = record()
    current = {label: cpu_per_write(update_managed_fields, w, args.iterations)
               for label, w in writes}
    baseline = {}
    if args.baseline:
        old_update = load_revision(args.baseline)
        baseline = {label: cpu_per_write(old_update, w, args.iterations)
                    for label, w in writes}
    for label, _ in writes:
        line = f"{label:60s} {current[label]:7.1f} us"
        if baseline:
            line += f"   {args.baseline}: {baseline[label]:7.1f} us"
        print(line)
    total = f"{'total per pod':60s} {sum(current.values()):7.1f} us"
    if baseline:
        ratio = sum(baseline.values()) / sum(current.values())
        total += f"   {args.baseline}: {sum(baseline.values()):7.1f} us ({ratio:.2f}x)"
    print(total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
