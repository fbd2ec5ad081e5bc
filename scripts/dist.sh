#!/usr/bin/env bash
# dist.sh [OUT]: what make dist makes, in OUT (default out/dist): for each
# of ARCHES (default "amd64 arm64"), a tarball berth-VERSION-linux-ARCH.tar.gz
# (the binaries and the pi example the quick start runs, the systemd
# units, the example configurations, README, docs/ whole and LICENSE) and
# the .deb packages
# berth-master, berth-worker and berth-cli. nfpm, which makes the packages,
# is a Go module built at a pinned version through the Go module proxy:
# nothing is downloaded from anywhere else.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/dist}
GO=${GO:-go}
ARCHES=${ARCHES:-amd64 arm64}
NFPM_VERSION=v2.45.2
export VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
export BUILD_TIME=${BUILD_TIME:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}

# Debian wants a version that starts with a digit and has no hyphen but
# before its revision: v0.4.0-3-g4c89b34 becomes 0.4.0+3+g4c89b34 (after
# 0.4.0), and one that is no release (devel, a bare commit such as 8e08528,
# which would otherwise pass for version 8) 0~devel, 0~8e08528: before any.
deb_version=${VERSION#v}
deb_version=${deb_version//-/+}
if ! [[ $deb_version =~ ^[0-9]+\.[0-9] ]]; then
	deb_version="0~$deb_version"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$OUT"
GOBIN="$tmp/tools" "$GO" install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"

for arch in $ARCHES; do
	name="berth-$VERSION-linux-$arch"
	stage="$tmp/$name"
	scripts/build-linux.sh "$arch" "$stage/bin"
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath -ldflags "-s -w" -o "$stage/bin/pi" ./examples/pi
	mkdir -p "$stage/systemd" "$stage/config"
	cp deploy/systemd/berth-master.service deploy/systemd/berth-worker.service "$stage/systemd/"
	cp deploy/master.toml deploy/worker.toml deploy/berth.toml "$stage/config/"
	cp README.md LICENSE "$stage/"
	cp -R docs "$stage/docs"
	tar -C "$tmp" --sort=name --owner=0 --group=0 --numeric-owner -czf "$OUT/$name.tar.gz" "$name"
	echo "dist: $OUT/$name.tar.gz"
	for pkg in berth-master berth-worker berth-cli; do
		ARCH=$arch DEB_VERSION=$deb_version BIN_DIR="$stage/bin" \
			"$tmp/tools/nfpm" package --config "deploy/nfpm/$pkg.yaml" --packager deb --target "$OUT/" >/dev/null
		echo "dist: $OUT/${pkg}_${deb_version}_$arch.deb"
	done
done
