"""The README's kind block, pasted as it is into bash from the repository's root, with
the `kind` and `draemu` a venv puts on PATH (issue 36: it named a kind-config.yaml the
repository did not ship)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draemu.cmd.testing.readme import REPOSITORY, shell_block

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_readme_kind_block_runs_as_pasted(tmp_path: Path) -> None:
    block = shell_block("Coming from kind")
    assert "examples/kind-config.yaml" in block
    env = {**os.environ, "HOME": str(tmp_path), "DRAEMU_KIND_HOME": str(tmp_path / "kind"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("KUBECONFIG", None)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=REPOSITORY, env=env,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "node/dra-control-plane condition met" in result.stdout
    assert "node/dra-worker2 condition met" in result.stdout
    kubeconfig = yaml.safe_load(result.stdout[result.stdout.index("apiVersion: v1"):])
    assert kubeconfig["current-context"] == "kind-dra"
    assert 'Deleting cluster "dra" ...' in result.stderr
    assert "WARNING" not in result.stderr  # the shipped config needs no caveat
    assert not (tmp_path / "kind" / "dra").exists()
