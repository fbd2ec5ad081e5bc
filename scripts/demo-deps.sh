#!/usr/bin/env bash
# Installs what make demo needs beyond Go and GNU make, when it is missing:
# a JDK >= 17 and the pinned Spark (scripts/spark-deps.sh: the pyspark wheel
# in .deps/spark), then Maven, with which spark/build.sh builds
# bin/berth-spark.jar. Installing needs root (apt-get, Debian's packages);
# without it the script names what to install and fails, before the build
# would fail on it. A second run installs nothing (under a second).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "demo-deps: $*" >&2; }
# The JDK first: Maven's Debian package would bring a JRE alone.
"$here/spark-deps.sh" >/dev/null
if ! command -v mvn >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		say "Maven is needed to build bin/berth-spark.jar (spark/build.sh) and is missing: install it (Debian: apt-get install maven), or run make demo as root"
		exit 1
	fi
	say "installing maven"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends maven >/dev/null
fi
