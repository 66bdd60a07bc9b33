#!/usr/bin/env bash
# Builds the real, unmodified kube-scheduler and kube-controller-manager (default v1.37.2)
# from the Go module proxy into ${DRAEMU_REALK8S_CACHE:-~/.cache/draemu/realk8s}/bin, for
# tests/e2e/realk8s (they run against draemu's apiserver).
#
# k8s.io/kubernetes's go.mod requires its staging modules (k8s.io/api, k8s.io/client-go,
# ...) at v0.0.0 and replaces them with ./staging/src/..., which the module zip lacks. A
# wrapper module here requires k8s.io/kubernetes vX.Y.Z and replaces every staging module
# with its published tag v0.Y.Z; only the main module's replace directives count.
#
# Modules are shared with the other Go builds (GOMODCACHE under DRAEMU_GO_CACHE); the
# binaries and the build cache live outside the clone, so a second run takes seconds: it
# skips a binary already built for the same version.  Cold: 10-30 min on 2 busy cores.
set -euo pipefail

VER=${1:-${DRAEMU_REALK8S_VERSION:-v1.37.2}}
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
root=${DRAEMU_REALK8S_CACHE:-$HOME/.cache/draemu/realk8s}
gocache=${DRAEMU_GO_CACHE:-$HOME/.cache/draemu/go}
bin=$root/bin
wrap=$root/wrapper-$VER
export GOMODCACHE="$gocache/mod" GOCACHE="$root/gobuild" GOPATH="$gocache/path"
export GOFLAGS="-trimpath -mod=mod" CGO_ENABLED=0 GOTOOLCHAIN=local
COMPONENTS=${DRAEMU_REALK8S_COMPONENTS:-kube-scheduler kube-controller-manager}

done_all=1
for c in $COMPONENTS; do
  [ -x "$bin/$c" ] && [ "$(cat "$bin/.$c.version" 2>/dev/null)" = "$VER" ] || done_all=0
done
if [ "$done_all" = 1 ]; then echo "real $COMPONENTS $VER: already built in $bin"; exit 0; fi

mkdir -p "$bin" "$wrap"
minor=$(echo "$VER" | sed -E 's/^v1\.([0-9]+)\.([0-9]+).*/\1/')
patch=$(echo "$VER" | sed -E 's/^v1\.([0-9]+)\.([0-9]+).*/\2/')
staging_ver=v0.$minor.$patch

dir=$(go mod download -json "k8s.io/kubernetes@$VER" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
gomod=$dir/go.mod
gover=$(sed -n 's/^go \(.*\)/\1/p' "$gomod")
staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/src/.*#\1#p' "$gomod")

cd "$wrap"
if [ ! -f go.sum ] || [ "$(cat .tidy-ok 2>/dev/null)" != "$COMPONENTS" ]; then
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
  } > go.mod
  {
    echo "//go:build tools"
    echo
    echo "package wrapper"
    echo
    echo "import ("
    for c in $COMPONENTS; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
    echo ")"
  } > tools.go
  go mod tidy -e 2>&1 | tail -20
  echo "$COMPONENTS" > .tidy-ok
fi

ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$VER \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$VER \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

for c in $COMPONENTS; do
  if [ -x "$bin/$c" ] && [ "$(cat "$bin/.$c.version" 2>/dev/null)" = "$VER" ]; then
    echo "== $c $VER already built"; continue
  fi
  echo "== building $c $VER ($(date +%T))"
  start=$(date +%s)
  go build -tags tools -ldflags "$ldflags" -o "$bin/$c.tmp" "k8s.io/kubernetes/cmd/$c"
  mv "$bin/$c.tmp" "$bin/$c"
  echo "$VER" > "$bin/.$c.version"
  echo "== $c done in $(( $(date +%s) - start ))s"
done
# The compiled packages (~3.5 GB) serve only this build: a new version recompiles anyway.
rm -rf "$GOCACHE"
