#!/usr/bin/env bash
# build-linux.sh ARCH DIR: the product's three binaries for linux/ARCH in
# DIR, named as they are installed (berth-master, berth-worker, berth),
# static (no cgo), stripped, and stamped with the version --version prints: VERSION
# (default: git describe, or devel) and BUILD_TIME (default: now), plus
# the commit from the build information (-buildvcs=auto overrides a
# GOFLAGS=-buildvcs=false). Used by make dist and make image.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: build-linux.sh ARCH DIR}
dir=${2:?usage: build-linux.sh ARCH DIR}
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
BUILD_TIME=${BUILD_TIME:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
pkg=github.com/berth-cluster/berth/internal/version
# -s -w: no symbol table nor DWARF (a third of the size); panics still
# name their functions.
ldflags="-s -w -X $pkg.version=$VERSION -X $pkg.buildTime=$BUILD_TIME"
mkdir -p "$dir"
for cmd in master worker berth; do
	out=berth-$cmd
	[ "$cmd" = berth ] && out=berth
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath -buildvcs=auto -ldflags "$ldflags" -o "$dir/$out" "./cmd/$cmd"
done
