#!/usr/bin/env bash
# image.sh [OUT]: what make image makes: the berth-master and berth-worker
# OCI images for each of ARCHES (default "amd64 arm64"), as one OCI image
# layout in OUT (default out/image), built by deploy/image with
# go-containerregistry: no container daemon, no base image to download.
#   skopeo copy oci:out/image:berth-master docker-daemon:berth-master:TAG
#   podman pull oci:out/image:berth-worker
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/image}
GO=${GO:-go}
ARCHES=${ARCHES:-amd64 arm64}
export VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
export BUILD_TIME=${BUILD_TIME:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(-out "$OUT" -version "$VERSION")
# The commit and its time (the images' creation time: the same commit makes
# the same images) when this is a git checkout.
if rev=$(git rev-parse HEAD 2>/dev/null); then
	args+=(-revision "$rev" -created "$(git log -1 --format=%cI)")
fi
for arch in $ARCHES; do
	scripts/build-linux.sh "$arch" "$tmp/$arch"
	args+=(-bin "$arch=$tmp/$arch")
done
"$GO" run ./deploy/image "${args[@]}"
