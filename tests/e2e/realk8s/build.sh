#!/usr/bin/env bash
# Builds the real, unmodified Kubernetes programs that draemu's tests and benchmarks run
# against it, from the Go module proxy, into ${DRAEMU_REALK8S_BIN:-~/.cache/draemu/realk8s/bin}.
#
#   build.sh [--version vX.Y.Z] [COMPONENT|GROUP ...]
#
# Components (default: $DRAEMU_REALK8S_COMPONENTS, else the group realk8s):
#   from k8s.io/kubernetes, one wrapper module and one build cache, so that the packages
#   they share compile once: kube-scheduler kube-controller-manager kube-proxy
#   kube-apiserver e2e.test (go test -c k8s.io/kubernetes/test/e2e) ginkgo (the version
#   Kubernetes pins) agnhost (test/images/agnhost) sample-apiserver (k8s.io/sample-apiserver
#   of the same release: the aggregator spec's extension apiserver);
#   etcd (the version Kubernetes pins), coredns (the version kubeadm of that release
#   installs), hostpathplugin (kubernetes-csi/csi-driver-host-path from
#   ../shared/thirdparty/, vendored: the module proxy does not serve it).
# Groups: realk8s = kube-scheduler kube-controller-manager (tests/e2e/realk8s, make test);
#   conformance = e2e.test ginkgo agnhost sample-apiserver etcd hostpathplugin
#   (tests/e2e/conformance);
#   network = kube-proxy coredns (the pod network); all = the three groups.
#   kube-apiserver (bench/realk8s.py) is built only when named.
#
# k8s.io/kubernetes's go.mod requires its staging modules (k8s.io/api, k8s.io/client-go,
# ...) at v0.0.0 and replaces them with ./staging/src/..., which the module zip lacks. A
# wrapper module requires k8s.io/kubernetes vX.Y.Z and replaces every staging module with
# its published tag v0.Y.Z (v1.38.0-beta.0 -> v0.38.0-beta.0); only the main module's
# replace directives count. etcd and CoreDNS build from their own go.mod's versions.
#
# Caches, all outside the clone: modules in $DRAEMU_GO_CACHE/mod (shared with the other
# Go builds), compiled packages in $DRAEMU_REALK8S_CACHE/gobuild (kept: a component added
# later reuses them; `go clean -cache` with that GOCACHE or deleting the folder frees
# ~6 GB), binaries in bin/ with a .NAME.version stamp each: a second run takes seconds.
# Another version builds into the same bin/ unless DRAEMU_REALK8S_BIN names another one.
# Cold figures (2 busy cores) are in tests/e2e/conformance/README.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
VER=${DRAEMU_REALK8S_VERSION:-v1.37.2}
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --version) VER=$2; shift 2 ;;
    --version=*) VER=${1#--version=}; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    v1.*) VER=$1; shift ;;  # the former positional version argument
    *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -gt 0 ] || read -r -a args <<< "${DRAEMU_REALK8S_COMPONENTS:-realk8s}"

K8S_CMDS="kube-scheduler kube-controller-manager kube-proxy kube-apiserver"
wanted=()
for a in "${args[@]}"; do
  case $a in
    realk8s) wanted+=(kube-scheduler kube-controller-manager) ;;
    conformance) wanted+=(e2e.test ginkgo agnhost sample-apiserver etcd hostpathplugin) ;;
    network) wanted+=(kube-proxy coredns) ;;
    all) wanted+=(kube-scheduler kube-controller-manager kube-proxy e2e.test ginkgo agnhost
                  sample-apiserver etcd coredns hostpathplugin) ;;
    kube-scheduler|kube-controller-manager|kube-proxy|kube-apiserver|e2e.test|ginkgo|agnhost\
|sample-apiserver|etcd|coredns|hostpathplugin) wanted+=("$a") ;;
    *) echo "build.sh: unknown component $a" >&2; exit 2 ;;
  esac
done

command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
root=${DRAEMU_REALK8S_CACHE:-$HOME/.cache/draemu/realk8s}
gocache=${DRAEMU_GO_CACHE:-$HOME/.cache/draemu/go}
bin=${DRAEMU_REALK8S_BIN:-$root/bin}
thirdparty=${DRAEMU_THIRDPARTY:-$repo/../shared/thirdparty}
export GOMODCACHE="$gocache/mod" GOCACHE="$root/gobuild" GOPATH="$gocache/path"
export CGO_ENABLED=0 GOTOOLCHAIN=local
GOFLAGS_MOD="-trimpath -mod=mod"
export GOFLAGS=$GOFLAGS_MOD
mkdir -p "$bin"

# The machine's Go builds every release it can. A release whose go.mod asks for a newer
# Go (v1.38 wants 1.27) is built with exactly that Go, which the go command fetches once
# from the module proxy as the module golang.org/toolchain (into $GOMODCACHE).
needs=$(go mod download -json "k8s.io/kubernetes@$VER" 2>/dev/null |
  sed -n 's/.*requires go \\u003e= \([0-9][0-9.]*\).*/\1/p' | head -1 || true)
if [ -n "$needs" ]; then
  echo "== k8s.io/kubernetes@$VER requires Go $needs: building with go$needs"
  export GOTOOLCHAIN=go$needs
fi

# Versions of the other programs, read from the Kubernetes release itself.
kdir=$(go mod download -json "k8s.io/kubernetes@$VER" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -n "$kdir" ] || { echo "build.sh: k8s.io/kubernetes@$VER not found" >&2; exit 1; }
gover=$(sed -n 's/^go \(.*\)/\1/p' "$kdir/go.mod")
etcd_ver=${ETCD_VER:-$(sed -n 's#^[[:space:]]*go.etcd.io/etcd/server/v3 \(v[^[:space:]]*\).*#\1#p' "$kdir/go.mod")}
coredns_ver=${COREDNS_VER:-$(sed -n 's/^[[:space:]]*CoreDNSVersion = "\(v[^"]*\)".*/\1/p' \
  "$kdir/cmd/kubeadm/app/constants/constants.go")}
hostpath_tar=$(ls "$thirdparty"/kubernetes-csi__csi-driver-host-path-*.tar.gz 2>/dev/null | head -1 || true)
hostpath_ver=$(basename "${hostpath_tar:-none}" .tar.gz | sed 's/.*-//')

version_of() {
  case $1 in
    etcd) echo "$etcd_ver" ;;
    coredns) echo "$coredns_ver" ;;
    hostpathplugin) echo "$hostpath_ver" ;;
    *) echo "$VER" ;;
  esac
}
built() { [ -x "$bin/$1" ] && [ "$(cat "$bin/.$1.version" 2>/dev/null)" = "$(version_of "$1")" ]; }

todo=()
for c in "${wanted[@]}"; do
  if built "$c"; then echo "== $c $(version_of "$c"): already built in $bin"
  elif [[ " ${todo[*]-} " != *" $c "* ]]; then todo+=("$c"); fi
done
[ ${#todo[@]} -gt 0 ] || exit 0

quiet() { grep -v '^go: downloading' || true; }
# Installs $bin/$1 from the file $2, with its version stamp.
install_bin() {
  mv "$2" "$bin/$1"
  version_of "$1" > "$bin/.$1.version"
}
timed() {  # timed NAME COMMAND...: runs the build, says how long it took
  local name=$1 start; shift
  echo "== building $name $(version_of "$name") ($(date +%T))"
  start=$(date +%s)
  "$@"
  echo "== $name done in $(( $(date +%s) - start ))s"
}

k8s_wrapper() {
  local wrap=$root/wrapper-$VER staging_ver="v0.${VER#v1.}" staging
  staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/src/.*#\1#p' "$kdir/go.mod")
  mkdir -p "$wrap"
  {
    echo "//go:build tools"
    echo
    echo "// Every program this wrapper builds, so that go.mod and go.sum cover them all."
    echo "package wrapper"
    echo
    echo "import ("
    for c in $K8S_CMDS; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
    echo "	_ \"k8s.io/kubernetes/test/e2e\""
    echo "	_ \"k8s.io/kubernetes/test/images/agnhost\""
    echo "	_ \"k8s.io/sample-apiserver\""
    echo "	_ \"github.com/onsi/ginkgo/v2/ginkgo\""
    echo ")"
  } > "$wrap/tools.go.new"
  if [ -f "$wrap/go.sum" ] && cmp -s "$wrap/tools.go.new" "$wrap/tools.go"; then
    rm "$wrap/tools.go.new"; echo "$wrap"; return
  fi
  mv "$wrap/tools.go.new" "$wrap/tools.go"
  {
    echo "module draemu-realk8s/wrapper"
    echo
    echo "go $gover"
    echo
    echo "require k8s.io/kubernetes $VER"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m $staging_ver"; done
    echo ")"
  } > "$wrap/go.mod"
  (cd "$wrap" && go mod tidy -e 2>&1 | quiet | tail -20 >&2)
  echo "$wrap"
}

build_k8s() {  # one program of the k8s.io/kubernetes wrapper
  local c=$1 wrap=$2 minor ldflags
  minor=$(echo "$VER" | sed -E 's/^v1\.([0-9]+)\..*/\1/')
  ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$VER \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$VER \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  cd "$wrap"
  case $c in
    e2e.test) go test -c -ldflags "$ldflags" -o "$bin/$c.tmp" k8s.io/kubernetes/test/e2e ;;
    ginkgo) go build -ldflags "-s -w" -o "$bin/$c.tmp" github.com/onsi/ginkgo/v2/ginkgo ;;
    agnhost) go build -ldflags "-s -w" -o "$bin/$c.tmp" k8s.io/kubernetes/test/images/agnhost ;;
    sample-apiserver) go build -ldflags "$ldflags" -o "$bin/$c.tmp" k8s.io/sample-apiserver ;;
    *) go build -ldflags "$ldflags" -o "$bin/$c.tmp" "k8s.io/kubernetes/cmd/$c" ;;
  esac
  install_bin "$c" "$bin/$c.tmp"
}

build_etcd() {  # etcd's server module in a wrapper of its own (its go.mod has replaces)
  local wrap=$root/etcd-$etcd_ver
  mkdir -p "$wrap"
  cd "$wrap"
  printf 'module draemu-realk8s/etcd\n\ngo %s\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
    "$gover" "$etcd_ver" > go.mod
  printf '//go:build tools\n\npackage wrapper\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
  [ -f go.sum ] || go mod tidy -e 2>&1 | quiet | tail -5
  go build -ldflags "-s -w" -o "$bin/etcd.tmp" go.etcd.io/etcd/server/v3
  install_bin etcd "$bin/etcd.tmp"
}

build_coredns() {  # CoreDNS's release module as it is (no replace directives)
  local tmp=$root/coredns-$coredns_ver
  mkdir -p "$tmp"
  GOFLAGS=-trimpath GOBIN=$tmp go install -ldflags "-s -w" "github.com/coredns/coredns@$coredns_ver"
  install_bin coredns "$tmp/coredns"
}

build_hostpathplugin() {  # the CSI hostpath driver from its vendored snapshot
  [ -n "$hostpath_tar" ] || { echo "build.sh: no csi-driver-host-path snapshot in $thirdparty" >&2; return 1; }
  local src=$root/src
  mkdir -p "$src"
  local dir=$src/$(basename "$hostpath_tar" .tar.gz | sed 's/-[0-9a-f]*$//')
  [ -d "$dir" ] || tar -xzf "$hostpath_tar" -C "$src"
  cd "$dir"
  GOFLAGS="-trimpath -mod=vendor" go build -ldflags "-s -w -X main.version=$hostpath_ver" \
    -o "$bin/hostpathplugin.tmp" ./cmd/hostpathplugin
  install_bin hostpathplugin "$bin/hostpathplugin.tmp"
}

total=$(date +%s)
wrap=
for c in "${todo[@]}"; do
  case $c in
    etcd) timed etcd build_etcd ;;
    coredns) timed coredns build_coredns ;;
    hostpathplugin) timed hostpathplugin build_hostpathplugin ;;
    *) [ -n "$wrap" ] || wrap=$(k8s_wrapper)
       timed "$c" build_k8s "$c" "$wrap" ;;
  esac
done
echo "== built ${todo[*]} in $(( $(date +%s) - total ))s; build cache $(du -sh "$GOCACHE" 2>/dev/null | cut -f1)"
