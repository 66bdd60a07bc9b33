#!/usr/bin/env bash
# Builds the Go programs of the end-to-end suite into <repo>/.cache/go/bin:
#   conformance, minidriver, allocoracle (this module, ./cmd/...)
#   dra-example-kubeletplugin          (sigs.k8s.io/dra-example-driver, pinned in exampledriver/go.mod)
#   celcost                            (celcost/: cel-go and Kubernetes' CEL cost, its own module)
# Every Go cache (modules, build cache, binaries) lives under <repo>/.cache/go, which git
# ignores, so a second run only checks that everything is up to date.
set -euo pipefail

# Go's own installer puts it in /usr/local/go; a non-login shell may lack it on PATH.
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${DRAEMU_GO_CACHE:-$(cd "$here/../../.." && pwd)/.cache/go}
export GOMODCACHE="$cache/mod" GOCACHE="$cache/build" GOBIN="$cache/bin" GOPATH="$cache/path"
# -mod=mod: resolve from go.mod/go.sum without a vendor folder; GOTOOLCHAIN=local: build
# with the machine's Go (1.26), never download another toolchain.
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
mkdir -p "$GOBIN"

# The upstream example driver is built from its released module with the dependency
# versions its own go.mod pins (the exampledriver module requires nothing else). Both
# builds run at once: on a cold cache one downloads while the other compiles.
# `build.sh example-driver` builds only that one (`make chart-tools`).
(cd "$here/exampledriver" && go install tool) &
example=$!
if [ "${1:-}" != example-driver ]; then
    (cd "$here/celcost" && go build -o "$GOBIN/celcost" .) &
    celcost=$!
    (cd "$here" && go install ./cmd/...)
    wait "$celcost"
fi
wait "$example"
