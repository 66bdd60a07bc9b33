#!/usr/bin/env bash
# Builds etcd at the version Kubernetes pins (go.etcd.io/etcd/server/v3 in the go.mod of
# k8s.io/kubernetes, default v1.37.2: etcd v3.7.0) from the Go module proxy, into
# ${DRAEMU_REALK8S_CACHE:-~/.cache/draemu/realk8s}/bin/etcd, for bench/realk8s.py.
# Modules are shared with the other Go builds (GOMODCACHE under DRAEMU_GO_CACHE).
# Skips the build when that version is there already. Cold: ~3 minutes on 2 busy cores.
set -euo pipefail

VER=${1:-${DRAEMU_REALK8S_VERSION:-v1.37.2}}
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
root=${DRAEMU_REALK8S_CACHE:-$HOME/.cache/draemu/realk8s}
gocache=${DRAEMU_GO_CACHE:-$HOME/.cache/draemu/go}
export GOMODCACHE="$gocache/mod" GOCACHE="$root/gobuild" GOPATH="$gocache/path"
export GOFLAGS="-trimpath -mod=mod" CGO_ENABLED=0 GOTOOLCHAIN=local

dir=$(go mod download -json "k8s.io/kubernetes@$VER" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
gover=$(sed -n 's/^go \(.*\)/\1/p' "$dir/go.mod")
etcd=${ETCD_VER:-$(sed -n 's#^[[:space:]]*go.etcd.io/etcd/server/v3 \(v[^[:space:]]*\).*#\1#p' "$dir/go.mod")}
bin=$root/bin
if [ -x "$bin/etcd" ] && [ "$(cat "$bin/.etcd.version" 2>/dev/null)" = "$etcd" ]; then
  echo "etcd $etcd: already built in $bin"; exit 0
fi
wrap=$root/etcd-$etcd
mkdir -p "$bin" "$wrap"
cd "$wrap"
printf 'module draemu-realk8s/etcd\n\ngo %s\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$gover" "$etcd" > go.mod
printf '//go:build tools\n\npackage wrapper\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
go mod tidy -e 2>&1 | tail -5
echo "== building etcd $etcd ($(date +%T))"
go build -ldflags "-s -w" -o "$bin/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$bin/etcd.tmp" "$bin/etcd"
echo "$etcd" > "$bin/.etcd.version"
echo "== etcd $etcd done ($(date +%T))"
