#!/usr/bin/env bash
# Builds the Go programs of the end-to-end suite into <repo>/.cache/go/bin:
#   conformance, minidriver            (this module, ./cmd/...)
#   dra-example-kubeletplugin          (sigs.k8s.io/dra-example-driver, pinned in exampledriver/go.mod)
# Every Go cache (modules, build cache, binaries) lives under <repo>/.cache/go, which git
# ignores, so a second run only checks that everything is up to date.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${DRAEMU_GO_CACHE:-$(cd "$here/../../.." && pwd)/.cache/go}
export GOMODCACHE="$cache/mod" GOCACHE="$cache/build" GOBIN="$cache/bin" GOPATH="$cache/path"
# -mod=mod: resolve from go.mod/go.sum without a vendor folder; GOTOOLCHAIN=local: build
# with the machine's Go (1.26), never download another toolchain.
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
mkdir -p "$GOBIN"

cd "$here"
go install ./cmd/...
# The upstream example driver, built from its released module with the dependency
# versions its own go.mod pins (the exampledriver module requires nothing else).
cd "$here/exampledriver"
go install tool
