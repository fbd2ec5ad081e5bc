#!/usr/bin/env bash
# Installs what the tests need beyond Go, when it is missing: the pinned
# pyspark 4.2.0 (Spark's whole distribution) and a JDK >= 17, through
# scripts/spark-deps.sh, for the Spark plugin's tests (e2e/spark); nftables, for
# the fault-injection suite's asymmetric partition (e2e/chaos), chromium,
# the real browser the web UI's tests drive (e2e/ui), firefox-esr, for
# UI.md's Firefox steps, strace, which
# shows a write synced before it is acknowledged (e2e/fsync), and
# libnss-systemd, through which glibc finds the names a --run-as dynamic
# worker serves its identities (e2e/dynamic_names_test.go, e2e/spark:
# Hadoop's login needs one). Installing
# needs root (as CI runs); without it, the suite says it cannot cut the
# network and skips that fault kind only, and the UI tests fail, naming
# the package to install.
set -euo pipefail
need=()
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v strace >/dev/null 2>&1 || need+=(strace)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd) # deploy/: the units verified
command -v mvn >/dev/null 2>&1 || need+=(maven) # spark/build.sh builds bin/berth-spark.jar
command -v certutil >/dev/null 2>&1 || need+=(libnss3-tools) # e2e/ui_tls_*_test.go: UI.md's steps (certutil, pk12util)
command -v firefox-esr >/dev/null 2>&1 || need+=(firefox-esr) # e2e/ui_tls_firefox_test.go: UI.md's Firefox steps
command -v openssl >/dev/null 2>&1 || need+=(openssl) # the same: UI.md's PKCS #12 export
# (grep reads all, not -q: under pipefail an early exit would fail ldconfig with SIGPIPE)
{ ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep 'libnss_systemd\.so\.2' >/dev/null || need+=(libnss-systemd)
install_packages() {
	if [ ${#need[@]} -eq 0 ]; then
		return
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "test-deps: ${need[*]} missing and not root: install them (the partition fault of e2e/chaos is skipped without nftables; the UI tests need chromium, firefox-esr, openssl and libnss3-tools, e2e/fsync strace, the names of --run-as dynamic identities libnss-systemd)" >&2
		return
	fi
	echo "test-deps: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}
install_packages
# Debian's libnss-systemd puts itself in /etc/nsswitch.conf as it installs;
# a host configured otherwise is left as it is, and told.
for db in passwd group; do
	grep -Eq "^$db:[^#]*[[:space:]]systemd([[:space:]]|#|\$)" /etc/nsswitch.conf 2>/dev/null ||
		echo "test-deps: /etc/nsswitch.conf lacks \"$db: files systemd\": --run-as dynamic identities get no name (e2e/dynamic_names_test.go fails)" >&2
done
# Spark and its JDK: a failure here fails the tests' setup, as no Spark
# test may skip for want of them.
"$(dirname "$0")/spark-deps.sh" >/dev/null
