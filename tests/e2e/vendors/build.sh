#!/usr/bin/env bash
# Builds what tests/e2e/vendors runs: vendors' real DRA drivers, unchanged, from the
# source snapshots in ../shared/thirdparty/ (their README), with their mock hardware.
#
#   build.sh [nvidia|intel|all]      (default: all)
#
# nvidia: NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, vendored) built as
#   its Dockerfile builds it (`make cmds`: gpu-kubelet-plugin, compute-domain-kubelet-
#   plugin, compute-domain-controller, compute-domain-daemon, webhook; cgo), the
#   nvidia-cdi-hook of the container toolkit version it vendors (from the Go module proxy,
#   as its image copies it from that toolkit's image), NVIDIA's mock NVML
#   (NVIDIA/k8s-test-infra pkg/gpu/mocknvml, `make`; and its render-pci-sysfs), and nvidia-smi 550.163.01 (Debian 13's non-free
#   package, as NVIDIA's mock-NVML CI takes it from NVIDIA's Ubuntu package; the init
#   container runs it against the mock library). Then the image's root as a folder
#   (nvidia/image: the image's files at their paths, glibc and bash from this machine as
#   distroless/cc and bash-static give them, busybox's applets for its /busybox) for
#   `--image-map`, and the mock driver's files (nvidia/mock: libnvidia-ml.so, nvidia-smi,
#   the GPU profiles) that tests/e2e/vendors/nvidiamock.py lays out as a node's driver root.
# intel: Intel's GPU DRA driver (intel/intel-resource-drivers-for-kubernetes:
#   kubelet-gpu-plugin, device-faker; dependencies from the Go module proxy) and its
#   image folders (intel/image-gpu, intel/image-faker).
#
# Everything is cached outside the clone in ${DRAEMU_VENDORS_CACHE:-~/.cache/draemu/vendors}
# (sources unpacked in src/, compiled packages in gobuild/); Go modules are shared with
# the other builds in $DRAEMU_GO_CACHE/mod. A second run checks stamps and takes seconds.
# Cold figures are in tests/e2e/vendors/README.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
what=${1:-all}
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
cache=${DRAEMU_VENDORS_CACHE:-$HOME/.cache/draemu/vendors}
gocache=${DRAEMU_GO_CACHE:-$HOME/.cache/draemu/go}
thirdparty=${DRAEMU_THIRDPARTY:-$repo/../shared/thirdparty}
export GOCACHE="$cache/gobuild" GOMODCACHE="$gocache/mod" GOPATH="$gocache/path"
export GOTOOLCHAIN=local
# go-nvml's header marks half of NVML deprecated: keep cgo's warnings about it quiet.
export CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
mkdir -p "$cache/src"

log() { echo "vendors/build.sh: $*" >&2; }

# unpack NAME: the tarball's folder under src/, unpacked again when the tarball changes.
unpack() {
  local tarball
  tarball=$(ls "$thirdparty/$1"-*.tar.gz 2>/dev/null | head -1)
  [ -n "$tarball" ] || { log "$thirdparty/$1-*.tar.gz is missing"; exit 1; }
  local dir="$cache/src/$1" stamp="$cache/src/.$1.stamp"
  if [ ! -d "$dir" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$(basename "$tarball")" ]; then
    rm -rf "$dir"
    tar -xzf "$tarball" -C "$cache/src"
    basename "$tarball" > "$stamp"
  fi
  echo "$dir"
}

# fresh STAMPFILE KEY: true when STAMPFILE already holds KEY (the output is up to date).
fresh() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }

# libs_of FILE...: the shared libraries (resolved paths) these programs load.
libs_of() {
  ldd "$@" 2>/dev/null | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | sort -u
}

# What distroless/cc ships: glibc, libgcc and libstdc++ (programs of the host's driver
# root, such as nvidia-smi, run inside the image and load them).
CC_LIBS="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libresolv.so.2 libanl.so.1
libutil.so.1 libnss_files.so.2 libnss_dns.so.2 libgcc_s.so.1 libstdc++.so.6"

# image_base ROOT PROGRAM...: glibc and the libraries PROGRAMs need at their paths, bash,
# busybox's applets in bin/ (the image's /busybox), /etc/passwd and /etc/group of root.
image_base() {
  local root=$1; shift
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root"
  chmod 1777 "$root/tmp"
  cp -L /bin/bash "$root/bin/bash"
  local lib
  for lib in $(libs_of /bin/bash "$@") $(printf '/lib/x86_64-linux-gnu/%s ' $CC_LIBS); do
    [ -e "$lib" ] || continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  # /lib64 and /lib are links into usr/ on this machine (merged /usr): keep the loader
  # where programs look for it.
  [ -e "$root/lib64/ld-linux-x86-64.so.2" ] || { mkdir -p "$root/lib64";
    cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"; }
  cp /bin/busybox "$root/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
    > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  echo 'hosts: files dns' > "$root/etc/nsswitch.conf"
}

# --- NVIDIA -------------------------------------------------------------------------

nvidia_binaries() {
  local src=$1 out="$cache/nvidia/bin"
  local key
  key="$(cat "$cache/src/.kubernetes-sigs__dra-driver-nvidia-gpu.stamp") $(go env GOVERSION)"
  fresh "$out/.stamp" "$key" && return 0
  mkdir -p "$out"
  local version commit
  version=$(tr -d '[:space:]' < "$src/VERSION")
  commit=$(ls "$thirdparty"/kubernetes-sigs__dra-driver-nvidia-gpu-*.tar.gz | sed 's/.*-\([0-9a-f]*\)\.tar\.gz/\1/')
  log "NVIDIA's driver $version ($commit): go build (vendored, cgo)"
  (cd "$src" && CGO_ENABLED=1 GOFLAGS=-mod=vendor \
    CGO_LDFLAGS_ALLOW='-Wl,--unresolved-symbols=ignore-in-object-files' \
    go build -ldflags "-s -w -X sigs.k8s.io/dra-driver-nvidia-gpu/internal/info.gitCommit=$commit -X sigs.k8s.io/dra-driver-nvidia-gpu/internal/info.version=$version" \
      -o "$out/" ./cmd/gpu-kubelet-plugin ./cmd/compute-domain-kubelet-plugin \
      ./cmd/compute-domain-controller ./cmd/compute-domain-daemon ./cmd/webhook)
  echo "$key" > "$out/.stamp"
}

nvidia_cdi_hook() {
  local src=$1 out="$cache/nvidia/bin"
  local version
  version=$(awk '$1 == "github.com/NVIDIA/nvidia-container-toolkit" {print $2}' "$src/go.mod")
  fresh "$out/.nvidia-cdi-hook.stamp" "$version" && return 0
  log "nvidia-cdi-hook $version (the container toolkit the driver vendors; Go module proxy)"
  GOBIN="$out" CGO_ENABLED=1 GOFLAGS=-mod=mod \
    go install "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-cdi-hook@$version"
  echo "$version" > "$out/.nvidia-cdi-hook.stamp"
}

mock_nvml() {
  local src=$1 out="$cache/nvidia/mock"
  local key
  key="$(cat "$cache/src/.NVIDIA__k8s-test-infra.stamp") $(go env GOVERSION) render-pci-sysfs"
  fresh "$out/.mocknvml.stamp" "$key" && return 0
  mkdir -p "$out"
  log "NVIDIA's mock NVML (k8s-test-infra pkg/gpu/mocknvml): make"
  # Unpadded: the padding only makes the file as large as the real library.
  (cd "$src/pkg/gpu/mocknvml" && make clean >/dev/null &&
    GOFLAGS=-mod=vendor make NO_PADDING=1 LIB_VERSION=550.163.01)
  cp "$src/pkg/gpu/mocknvml/libnvidia-ml.so.550.163.01" "$out/libnvidia-ml.so"
  # The nvml-mock chart's renderer of a node's PCI sysfs from the profile
  # (deployments/nvml-mock/scripts/setup.sh step 10): pcieRoot and NUMA node.
  (cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=vendor go build -o "$out/" ./cmd/render-pci-sysfs)
  rm -rf "$out/profiles"
  cp -r "$src/pkg/gpu/mocknvml/configs" "$out/profiles"
  echo "$key" > "$out/.mocknvml.stamp"
}

nvidia_smi() {
  local out="$cache/nvidia/mock" apt="$cache/apt"
  [ -x "$out/nvidia-smi" ] && return 0
  # Debian 13's non-free nvidia-smi is 550.163.01, the driver version of the mock's
  # profiles (NVIDIA's CI takes nvidia-utils-550 from NVIDIA's Ubuntu repository);
  # bookworm's 535 lacks `--version`, which the chart's init container runs.
  log "nvidia-smi: Debian's non-free package (apt-get download, a private package list)"
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$out"
  echo "deb http://deb.debian.org/debian trixie non-free" > "$apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o Dir::Cache::archives=$apt/archives
              -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" update -q >/dev/null
  (cd "$apt" && rm -f nvidia-smi_*.deb && apt-get "${opts[@]}" download -q nvidia-smi=550.163.01-2 >/dev/null 2>&1)
  rm -rf "$apt/x" && dpkg-deb -x "$apt"/nvidia-smi_*.deb "$apt/x"
  cp "$apt/x/usr/lib/nvidia/current/nvidia-smi" "$out/nvidia-smi.tmp"
  chmod 755 "$out/nvidia-smi.tmp" && mv "$out/nvidia-smi.tmp" "$out/nvidia-smi"
}

nvidia_image() {
  local src=$1 root="$cache/nvidia/image"
  local key
  key="$(cat "$cache/nvidia/bin/.stamp") $(cat "$cache/nvidia/bin/.nvidia-cdi-hook.stamp") $(sha256sum "$0" | cut -c1-16)"
  fresh "$cache/nvidia/.image.stamp" "$key" && return 0
  log "NVIDIA's image as a folder: $root"
  rm -rf "$root"
  local bin="$cache/nvidia/bin"
  image_base "$root" "$bin/gpu-kubelet-plugin" "$bin/compute-domain-kubelet-plugin"
  mkdir -p "$root/usr/bin"
  local prog
  for prog in gpu-kubelet-plugin compute-domain-kubelet-plugin compute-domain-controller \
      compute-domain-daemon webhook nvidia-cdi-hook; do
    cp "$bin/$prog" "$root/usr/bin/$prog"
  done
  cp "$src/hack/kubelet-plugin-prestart.sh" "$root/usr/bin/kubelet-plugin-prestart.sh"
  cp -r "$src/templates" "$root/templates"
  cp "$src/LICENSE" "$root/LICENSE"
  echo "$key" > "$cache/nvidia/.image.stamp"
}

build_nvidia() {
  local driver infra
  driver=$(unpack kubernetes-sigs__dra-driver-nvidia-gpu)
  infra=$(unpack NVIDIA__k8s-test-infra)
  nvidia_binaries "$driver"
  nvidia_cdi_hook "$driver"
  mock_nvml "$infra"
  nvidia_smi
  nvidia_image "$driver"
}

# --- Intel --------------------------------------------------------------------------

build_intel() {
  local src out="$cache/intel/bin"
  src=$(unpack intel__intel-resource-drivers-for-kubernetes)
  local key
  key="$(cat "$cache/src/.intel__intel-resource-drivers-for-kubernetes.stamp") $(go env GOVERSION)"
  if ! fresh "$out/.stamp" "$key"; then
    mkdir -p "$out"
    log "Intel's GPU driver and device-faker: go build (Go module proxy)"
    (cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
      -o "$out/" ./cmd/kubelet-gpu-plugin ./cmd/device-faker)
    echo "$key" > "$out/.stamp"
  fi
  local gpu="$cache/intel/image-gpu" faker="$cache/intel/image-faker"
  key="$key $(sha256sum "$0" | cut -c1-16)"
  fresh "$cache/intel/.image.stamp" "$key" && return 0
  log "Intel's images as folders: $gpu, $faker"
  rm -rf "$gpu" "$faker"
  mkdir -p "$gpu" "$faker/opt/templates"
  cp "$out/kubelet-gpu-plugin" "$gpu/kubelet-gpu-plugin"   # FROM scratch, CMD /kubelet-gpu-plugin
  cp "$out/device-faker" "$faker/device-faker"
  # The faker image's template, made as its Dockerfile makes it (device-faker gpu -n).
  local made
  made=$(cd /tmp && "$out/device-faker" gpu -n | sed -n 's/^new template: //p')
  mv "$made" "$faker/opt/templates/gpu-template.json"
  chmod 644 "$faker/opt/templates/gpu-template.json"
  echo "$key" > "$cache/intel/.image.stamp"
}

case $what in
  nvidia) build_nvidia ;;
  intel) build_intel ;;
  all) build_nvidia; build_intel ;;
  -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0" ;;
  *) log "unknown target $what (nvidia, intel, all)"; exit 2 ;;
esac
