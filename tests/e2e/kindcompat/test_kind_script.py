"""An unmodified kind-style script, run against kind-compat: every step's output and
exit code are checked."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

KIND = str(Path(sys.executable).parent / "kind")

SCRIPT = r"""
set -euo pipefail
cat > kind-config.yaml <<'YAML'
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
featureGates:
  DynamicResourceAllocation: true
runtimeConfig:
  "resource.k8s.io/v1beta1": "true"
containerdConfigPatches:
- |-
  [plugins."io.containerd.grpc.v1.cri"]
    enable_cdi = true
nodes:
- role: control-plane
- role: worker
- role: worker
YAML
kind create cluster --name dra --config kind-config.yaml --wait 60s
kubectl wait --for=condition=Ready nodes --all --timeout=60s
kubectl get nodes -o name
cat <<'YAML' | kubectl apply -f -
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: single-gpu
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
YAML
kind get clusters
kind get nodes --name dra
kind get kubeconfig --name dra > dra.kubeconfig
kubectl --kubeconfig dra.kubeconfig get resourceclaim single-gpu -o name
kind load docker-image example/driver:v1 --name dra
kind delete cluster --name dra
kind get clusters
"""


def run_script(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kind").symlink_to(KIND)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "KUBECONFIG": str(tmp_path / "kube" / "config"),
           "DRAEMU_KIND_HOME": str(tmp_path / "kind-state"), "HOME": str(tmp_path)}
    env.pop("KIND_CLUSTER_NAME", None)
    return subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=240)


def test_kind_style_dra_script_runs_unchanged(tmp_path):
    result = run_script(tmp_path, SCRIPT)
    assert result.returncode == 0, result.stdout + result.stderr
    out, err = result.stdout, result.stderr
    assert 'Creating cluster "dra" ...' in err
    assert 'Set kubectl context to "kind-dra"' in err
    assert "node/dra-control-plane\nnode/dra-worker\nnode/dra-worker2\n" in out
    assert "deviceclass.resource.k8s.io/gpu.example.com created" in out
    assert "dra\n" in out  # kind get clusters
    assert "dra-control-plane\ndra-worker\ndra-worker2\n" in out  # kind get nodes
    assert "resourceclaim.resource.k8s.io/single-gpu" in out
    assert 'Deleted nodes: ["dra-control-plane" "dra-worker" "dra-worker2"]' in err
    assert err.rstrip().endswith("No kind clusters found.")
    kubeconfig = yaml.safe_load((tmp_path / "dra.kubeconfig").read_text())
    assert kubeconfig["current-context"] == "kind-dra"
    merged = yaml.safe_load((tmp_path / "kube" / "config").read_text())
    assert [c["name"] for c in merged["contexts"]] == []  # removed by delete
    assert not (tmp_path / "kind-state" / "dra").exists()


def test_bad_config_gives_kinds_error_and_exit_code(tmp_path):
    result = run_script(tmp_path, "printf 'kind: Cluster\\napiVersion: kind.x-k8s.io/v1alpha4"
                                  "\\nnodes:\\n- role: worker\\n  bogus: 1\\n' > c.yaml\n"
                                  "kind create cluster --config c.yaml")
    assert result.returncode == 1
    assert result.stderr.startswith("ERROR: failed to create cluster: unable to decode config: "
                                    "yaml: unmarshal errors:\n  line 5: field bogus not found "
                                    "in type v1alpha4.Node")


def test_get_kubeconfig_of_a_missing_cluster_fails_like_kind(tmp_path):
    result = run_script(tmp_path, "kind get kubeconfig --name nope")
    assert result.returncode == 1
    assert "could not locate any control plane nodes for cluster named 'nope'" in result.stderr


def test_create_with_drivers_returns_once_their_slices_are_published(tmp_path):
    # No config: one control-plane node, which gets the drivers (kind has no workers).
    script = ("DRAEMU_KIND_DRIVERS=gpu kind create cluster --name solo\n"
              "kubectl get resourceslices -o jsonpath='{.items[*].spec.nodeName}'; echo\n"
              "kind delete cluster --name solo\n")
    result = run_script(tmp_path, script)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "solo-control-plane"
    assert ("WARNING: the cluster has no worker nodes: DRAEMU_KIND_DRIVERS are on "
            "solo-control-plane") in result.stderr
    assert " ✓ Publishing DRA devices (draemu: gpu.example.com)" in result.stderr


def test_the_source_tree_kind_needs_no_activated_venv(tmp_path):
    """kind-compat/kind runs with the system python3, outside any venv."""
    script = Path(__file__).resolve().parents[3] / "kind-compat" / "kind"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env["DRAEMU_KIND_HOME"] = str(tmp_path)
    result = subprocess.run([str(script), "get", "clusters"], env=env, capture_output=True,
                            text=True, timeout=60)
    if (script.parents[1] / ".venv" / "bin" / "python").exists():  # after `make install`
        assert result.returncode == 0, result.stderr
        assert result.stderr.strip() == "No kind clusters found."
    else:  # a clone without .venv: one line saying what to do
        assert result.returncode == 1
        assert result.stderr.strip() == (
            f"kind-compat needs draemu's dependencies: run `make install` in "
            f"{script.parents[1]} (it creates .venv), or `pip install {script.parents[1]}`")
