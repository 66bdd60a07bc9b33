"""`draemu up` in a child process, as a user would run it: for end-to-end tests that
drive it with real kubectl (synchronously, from any thread)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

READY_LINE = "draemu is ready"


@dataclass
class RunningDraemu:
    process: subprocess.Popen[str]
    kubeconfig: Path
    output: list[str]

    def kubectl(self, *args: str, binary: str = "kubectl", check: bool = True,
                input: str | None = None, timeout: float = 90
                ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBERC": "off",
               "HOME": str(self.kubeconfig.parent)}
        result = subprocess.run([binary, f"--cache-dir={self.kubeconfig.parent / 'cache'}",
                                 *args], env=env, capture_output=True, text=True,
                                input=input, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {result.returncode}:\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result


@contextmanager
def draemu_up(folder: Path, *args: str, timeout: float = 60.0,
              prefix: Sequence[str] = ()) -> Iterator[RunningDraemu]:
    """Run `draemu up --data-dir FOLDER/data --port 0 ARGS...` until the block ends,
    then stop it with SIGTERM (as Ctrl-C would). `prefix`: a command that runs it (its
    last arguments)."""
    folder.mkdir(parents=True, exist_ok=True)
    kubeconfig = folder / "kubeconfig"
    log = open(folder / "draemu.log", "w")  # closed below
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "draemu", "up", "--data-dir", str(folder / "data"),
         "--port", "0", "--kubeconfig", str(kubeconfig), "--log-format", "json", *args],
        stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True)
    output: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("draemu up exited before it was ready:\n"
                                   + (folder / "draemu.log").read_text()[-3000:])
            output.append(line)
            if line.startswith(READY_LINE):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"draemu up not ready in {timeout}s")
        yield RunningDraemu(proc, kubeconfig, output)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
