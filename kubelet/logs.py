"""Container logs: where they live and how `pods/log` reads them.

`<pods dir>/<namespace>_<pod>_<uid>/<container>/<restart count>.log`, in the CRI format
(`<RFC 3339 time> <stream> <P|F> <text>`), like /var/log/pods on a real node.
`--previous` reads the log of the restart before the current one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from draemu.api.meta import parse_time


@dataclass
class LogOptions:
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    since_time: str | None = None
    limit_bytes: int | None = None


def pod_log_dir(pods_dir: Path, namespace: str, name: str, uid: str) -> Path:
    return pods_dir / f"{namespace}_{name}_{uid}"


def container_log_path(pods_dir: Path, namespace: str, name: str, uid: str, container: str,
                       restart: int) -> Path:
    return pod_log_dir(pods_dir, namespace, name, uid) / container / f"{restart}.log"


def _format(line: str, opts: LogOptions, since: datetime | None) -> str | None:
    stamp, _, rest = line.partition(" ")
    _stream, _, rest = rest.partition(" ")
    _tag, _, text = rest.partition(" ")
    if since is not None:
        when = datetime.fromisoformat(stamp[:26]).replace(tzinfo=UTC) if stamp else None
        if when is not None and when < since:
            return None
    return f"{stamp} {text}\n" if opts.timestamps else f"{text}\n"


def _since(opts: LogOptions) -> datetime | None:
    if opts.since_seconds is not None:
        return datetime.now(UTC) - timedelta(seconds=opts.since_seconds)
    if opts.since_time:
        return parse_time(opts.since_time)
    return None


def pick_log_file(container_dir: Path, previous: bool, instance: int | None = None
                  ) -> Path | None:
    """The log to read. `instance`: the restart count of the container instance asked for
    when the kubelet knows it (-1: none); otherwise the newest file, or the one before."""
    if instance is not None:
        path = container_dir / f"{instance}.log"
        return path if instance >= 0 and path.exists() else None
    files = sorted((p for p in container_dir.glob("*.log") if p.stem.isdigit()),
                   key=lambda p: int(p.stem))
    if previous:
        return files[-2] if len(files) >= 2 else None
    return files[-1] if files else None


async def stream_log(path: Path, opts: LogOptions,
                     still_running: Callable[[], bool] = lambda: False,
                     ) -> AsyncIterator[bytes]:
    """The log as `kubectl logs` shows it; with follow, until the container stops."""
    since = _since(opts)
    sent = 0
    with path.open("r", encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
        if opts.tail_lines is not None:
            lines = lines[-opts.tail_lines:] if opts.tail_lines > 0 else []
        for line in lines:
            out = _format(line.rstrip("\n"), opts, since)
            if out is None:
                continue
            data = out.encode()
            if opts.limit_bytes is not None and sent + len(data) > opts.limit_bytes:
                yield data[:opts.limit_bytes - sent]
                return
            sent += len(data)
            yield data
        if not opts.follow:
            return
        partial = ""
        while True:
            chunk = f.readline()
            if not chunk:
                if not still_running():
                    return
                await asyncio.sleep(0.1)
                continue
            partial += chunk
            if not partial.endswith("\n"):
                continue
            out = _format(partial.rstrip("\n"), opts, since)
            partial = ""
            if out is not None:
                yield out.encode()
