"""Child processes of the store tests (run as `python store_child.py MODE ...`).

writer URL PREFIX COUNT    create COUNT keys under PREFIX, then print "done"
crash-writer URL           write forever; print "ack KEY REVISION VALUE" after each
                           acknowledged write
open URL [DATA_DIR]        open the store and print "opened" or "error: MESSAGE"
hold URL DATA_DIR          open the store, print "opened", wait for stdin to close
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from draemu.store import StoreError, open_store


async def writer(url: str, prefix: str, count: int) -> None:
    store = await open_store(url, compaction_interval=0)
    for i in range(count):
        await store.create(f"{prefix}{i}", b"x")
    await store.close()
    print("done", flush=True)


async def crash_writer(url: str) -> None:
    store = await open_store(url, compaction_interval=0)
    print("opened", flush=True)
    i = 0
    while True:
        key = f"/registry/crash/k{i % 50}"
        value = f"v{i}".encode()
        current = await store.get(key)
        if current is None:
            kv = await store.create(key, value)
        elif i % 7 == 0:
            revision, _ = await store.delete(key, current.mod_revision)
            print(f"ack {key} {revision} -", flush=True)
            i += 1
            continue
        else:
            kv, _ = await store.update(key, value, current.mod_revision)
        print(f"ack {key} {kv.mod_revision} {value.decode()}", flush=True)
        i += 1


async def try_open(url: str, data_dir: str | None, hold: bool) -> None:
    try:
        store = await open_store(url, data_dir=Path(data_dir) if data_dir else None,
                                 compaction_interval=0)
    except StoreError as error:
        print(f"error: {error}", flush=True)
        return
    print("opened", flush=True)
    if hold:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await store.close()


def main(argv: list[str]) -> None:
    mode, args = argv[0], argv[1:]
    if mode == "writer":
        asyncio.run(writer(args[0], args[1], int(args[2])))
    elif mode == "crash-writer":
        asyncio.run(crash_writer(args[0]))
    elif mode in ("open", "hold"):
        asyncio.run(try_open(args[0], args[1] if len(args) > 1 else None, mode == "hold"))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1:])
