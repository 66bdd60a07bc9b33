"""The README's "Test your driver's chart" blocks, pasted as they are into bash as root:
`make chart-tools` from draemu's root, then, with the `export`s and the `cd` it prints,
the chart block in the example driver's source tree (issue 36, points 1-3: it started
`draemu up &` and ran helm at once, shared make up's data dir, and left helm and the
driver's source unexplained)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from draemu.cmd.testing.readme import REPOSITORY, shell_block

SECTION = "Test your driver's chart"

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1500),
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")]


def _go() -> None:
    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Go is required under CI=true: no `go` on PATH")
        pytest.skip("Go is not installed (needed to build helm and the example driver)")


def _printed(output: str) -> tuple[dict[str, str], Path]:
    """The `export`s and the `cd` that `make chart-tools` prints, as an environment
    and a folder (the user pastes them)."""
    env = {**os.environ}
    for line in output.splitlines():
        m = re.fullmatch(r"\s*export (.*)", line)
        if m:
            for name, value in re.findall(r"(\w+)=(\S+)", m.group(1)):
                env[name] = value.replace("$PATH", env.get("PATH", ""))
    [folder] = re.findall(r"^\s*cd (\S+)$", output, re.M)
    return env, Path(folder)


def test_the_readme_chart_blocks_run_as_pasted(tmp_path: Path) -> None:
    _go()
    tools = subprocess.run(["bash", "-euo", "pipefail", "-c", shell_block(SECTION, 0)],
                           cwd=REPOSITORY, capture_output=True, text=True, timeout=1200,
                           env={**os.environ, "PATH": f"/usr/local/go/bin:{os.environ['PATH']}"})
    assert tools.returncode == 0, tools.stdout[-3000:] + tools.stderr[-3000:]
    env, source = _printed(tools.stdout)
    assert (source / "deployments" / "helm" / "dra-example-driver" / "Chart.yaml").exists()
    # The venv this test runs in is the one the export puts on PATH.
    assert Path(sys.executable).parent == Path(env["PATH"].split(":")[1])
    env.update(HOME=str(tmp_path), PATH=f"{env['PATH']}:/usr/local/go/bin")
    env.pop("KUBECONFIG", None)
    data_dir = tmp_path / ".local" / "share" / "draemu-chart"
    try:
        block = subprocess.run(["bash", "-euo", "pipefail", "-c", shell_block(SECTION, 1)],
                               cwd=source, env=env, capture_output=True, text=True,
                               timeout=900)
    finally:
        subprocess.run([sys.executable, "-m", "draemu", "down", "--data-dir", str(data_dir)],
                       capture_output=True, timeout=120)
    out = block.stdout
    assert block.returncode == 0, out[-4000:] + block.stderr[-4000:] + (
        (data_dir / "draemu.log").read_text(errors="replace")[-3000:]
        if (data_dir / "draemu.log").exists() else "")
    assert out.startswith("draemu is ready in ")  # up --background waited for it
    assert "STATUS: deployed" in out  # helm install --wait
    assert len(re.findall(r"^\S+\s+node-[12]\s+gpu\.example\.com\s", out, re.M)) == 2
    assert re.search(r'^declare -x GPU_DEVICE_\d+="gpu-\d+"$', out, re.M)
    assert 'daemon set "dra-example-driver-kubeletplugin" successfully rolled out' in out
    assert re.search(r"^stopped draemu \(pid \d+\) on ", out, re.M)
