#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v3, the newest release the Go module proxy served when this
# was written; override with HELM_VERSION) into the Go cache of the end-to-end suite,
# beside the programs tests/e2e/go/build.sh builds:  <cache>/bin/helm
# `go install pkg@version` builds with the dependency versions helm's own go.mod pins.
# A second run only checks that the binary is up to date.
set -euo pipefail

command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${DRAEMU_GO_CACHE:-$(cd "$here/../../.." && pwd)/.cache/go}
version=${HELM_VERSION:-v3.22.0}
export GOMODCACHE="$cache/mod" GOCACHE="$cache/build" GOBIN="$cache/bin" GOPATH="$cache/path"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
mkdir -p "$GOBIN"
if [ -x "$GOBIN/helm" ] && "$GOBIN/helm" version --template '{{.Version}}' 2>/dev/null \
        | grep -qx "$version"; then
    exit 0
fi
# helm prints its version from these variables (its Makefile sets them the same way).
go install -ldflags "-X helm.sh/helm/v3/internal/version.version=$version" \
    "helm.sh/helm/v3/cmd/helm@$version"
