#!/usr/bin/env bash
# Installs what the tests need beyond Go, when it is missing: nftables, for
# the fault-injection suite's asymmetric partition (e2e/chaos), chromium,
# the real browser the web UI's tests drive (e2e/ui), and strace, which
# shows a write synced before it is acknowledged (e2e/fsync). Installing
# needs root (as CI runs); without it, the suite says it cannot cut the
# network and skips that fault kind only, and the UI tests fail, naming
# the package to install.
set -euo pipefail
need=()
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v strace >/dev/null 2>&1 || need+=(strace)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd) # deploy/: the units verified
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "test-deps: ${need[*]} missing and not root: install them (the partition fault of e2e/chaos is skipped without nftables; the UI tests need chromium, e2e/fsync strace)" >&2
	exit 0
fi
echo "test-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
