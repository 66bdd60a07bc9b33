#!/usr/bin/env bash
# NVIDIA's own e2e tests (tests/bats/ in the driver's source, unchanged) against draemu,
# as the driver's mock-NVML CI runs them (hack/ci/mock-nvml/e2e-test.sh and the
# `tests-mock-nvml` target of tests/bats/Makefile): one node with 8 GB200s on the mock
# NVML, labelled as its kind node, MOCK_NVML=true, the CI's test filter and values, the
# chart installed by the tests from the local source.
#
#   nvidia_bats.sh [BATS_FILE...]      (default: the files of `tests-mock-nvml`)
#
# Needs root, tests/e2e/vendors/build.sh nvidia, helm (tests/e2e/helm/build.sh), kubectl,
# and Debian's bats, bats-support, bats-assert, bats-file, jq and yq (installed if
# missing). Differences from NVIDIA's CI runner image, each for a reason:
# - the runner image's bats libraries are at /bats-libraries, where the tests load them:
#   a link there to Debian's (/usr/lib/bats) is made if missing;
# - setup_suite adds NVIDIA's NGC Helm repository (for the up/downgrade tests, which
#   MOCK_NVML skips): this machine reaches no such host, so `helm repo add|update` are
#   answered by a shim on PATH; every other helm command is the real helm;
# - bats is Debian 12's 1.8.2 (the runner builds bats-core 658f442): without --abort.
# Output: bats' TAP lines; the cluster's log and data stay in $OUT (default a temp dir).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
vendors=${DRAEMU_VENDORS_CACHE:-$HOME/.cache/draemu/vendors}
gocache=${DRAEMU_GO_CACHE:-$HOME/.cache/draemu/go}
src=$vendors/src/kubernetes-sigs__dra-driver-nvidia-gpu
python=${PYTHON:-$repo/.venv/bin/python}
out=${OUT:-$(mktemp -d /tmp/draemu-nvidia-bats-XXXXXX)}
[ "$(id -u)" = 0 ] || { echo "nvidia_bats.sh: needs root (the process runtime)" >&2; exit 2; }
[ -d "$src/tests/bats" ] || { echo "nvidia_bats.sh: run build.sh nvidia first" >&2; exit 2; }

for tool in bats jq yq envsubst; do
  command -v "$tool" >/dev/null || { apt-get update -q && apt-get install -y -q bats \
    bats-assert bats-support bats-file jq yq gettext-base parallel bc; break; }
done
[ -e /bats-libraries ] || ln -s /usr/lib/bats /bats-libraries

mkdir -p "$out/bin"
cat > "$out/bin/helm" <<EOF
#!/bin/sh
# No network here: NGC's repository cannot be added (only up/downgrade tests use it).
case "\$1 \$2" in "repo add"|"repo update") echo "(offline: helm \$*)"; exit 0 ;; esac
exec "$gocache/bin/helm" "\$@"
EOF
chmod +x "$out/bin/helm"

cleanup() { "$python" -m draemu down --data-dir "$out/data" >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$python" -m draemu up --background --data-dir "$out/data" --port 0 \
  --kubeconfig "$out/kubeconfig" --preset empty --nodes 1 --runtime process \
  --image-map "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu=$vendors/nvidia/image" \
  --image-map "ubuntu=/" --feature-gates DRAExtendedResource=true,DRAPartitionableDevices=true \
  >/dev/null
"$python" - "$out/data" <<'EOF'
import sys
from pathlib import Path
from draemu.cmd.demo.nvidiamock import MockProfile, lay_out
lay_out(Path(sys.argv[1]) / "nodes" / "node-1" / "host", MockProfile("gb200", 8))
EOF
export KUBECONFIG=$out/kubeconfig
kubectl label node node-1 nvidia.com/gpu.present=true \
  feature.node.kubernetes.io/pci-10de.present=true >/dev/null

files=("$@")
[ ${#files[@]} -gt 0 ] || files=(test_gpu_basic test_gpu_cuda_workloads test_gpu_sharing
  test_gpu_robustness test_gpu_extres test_gpu_stress test_gpu_updowngrade
  test_cd_imex_chan_inject test_cd_misc test_cd_logging test_cd_failover
  test_cd_mnnvl_workload test_cd_updowngrade test_cd_leader_election)
paths=()
for f in "${files[@]}"; do paths+=("tests/bats/${f%.bats}.bats"); done

version=$(tr -d '[:space:]' < "$src/VERSION")
mkdir -p "$out/run"
cd "$src"
PATH="$out/bin:$PATH" USER=root TMPDIR="$out/run" \
  TEST_CHART_REPO=deployments/helm/dra-driver-nvidia-gpu TEST_CHART_VERSION="${version#v}" \
  TEST_CHART_LASTSTABLE_REPO=oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu \
  TEST_CHART_LASTSTABLE_VERSION=0.4.0 TEST_CRD_UPGRADE_TARGET_GIT_REF=main \
  TEST_NVIDIA_DRIVER_ROOT=/var/lib/nvml-mock/driver \
  TEST_ALT_PROC_DEVICES=/var/lib/nvml-mock/imex/proc-devices \
  TEST_EXPECTED_IMAGE_SPEC_SUBSTRING="$version" TEST_GPU_STRESS_PODS_N=20 \
  TEST_GPU_STRESS_ITERATIONS=1 TEST_GPU_STRESS_DELAY=1 SKIP_CLEANUP=true CI=true \
  DISABLE_COMPUTE_DOMAINS=false MOCK_NVML=true NVMM_PATH="$src/tests/bats/lib/lambda" \
  bats --print-output-on-failure --no-tempdir-cleanup --timing \
    --filter-tags '!version-specific,!cuda-workload,!dynmig,!mig,!gpu-busgrind,!compute-domain,!multi-node' \
    "${paths[@]}"
