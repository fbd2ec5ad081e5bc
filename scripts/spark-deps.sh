#!/usr/bin/env bash
# Installs what berth's Spark plugin (spark/) needs to be tried: a JDK >= 17
# and the pinned Spark distribution, which is the pyspark wheel from PyPI
# (it carries jars/, bin/spark-submit, bin/spark-class). Spark goes into a
# project-local venv, .deps/spark/venv, with a stamp file so a second run
# only prints the path. Prints SPARK_HOME on stdout, all else on stderr:
#   export SPARK_HOME=$(scripts/spark-deps.sh)
# Building the plugin needs Maven besides: scripts/demo-deps.sh and
# scripts/test-deps.sh install it. What is missing is installed with
# apt-get as root (Debian's packages); without root the script says what
# to install.
#
# SPARK_DEPS_DIR moves the venv; PYSPARK_SDIST names a local copy of
# pyspark-4.2.0.tar.gz to install from instead of PyPI.
set -euo pipefail
PYSPARK_VERSION=4.2.0
root=$(cd "$(dirname "$0")/.." && pwd)
deps=${SPARK_DEPS_DIR:-$root/.deps/spark}
venv=$deps/venv
stamp=$venv/.berth-pyspark-$PYSPARK_VERSION
say() { echo "spark-deps: $*" >&2; }
apt_install() {
	say "installing $*"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

java_major() {
	# `java -version` prints e.g. openjdk version "17.0.15" (or "1.8.0_x").
	java -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\.\{0,1\}\([0-9]*\).*/\1 \2/p' | head -1 |
		awk '{ print ($1 == 1 ? $2 : $1) }'
}
# A JDK, not a JRE alone: the Spark tests compile Java jobs with javac,
# and Maven's Debian package brings only a JRE 17 (default-jre-headless),
# which must not pass for one.
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		say "Java 17 or later is needed (found: $(java -version 2>&1 | head -1)); install a JDK" && exit 1
	fi
	apt_install openjdk-17-jdk-headless
elif ! command -v javac >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		say "java but no javac (a JRE): Spark runs, the Spark tests (which compile Java jobs) do not; install a JDK >= 17"
	else
		apt_install openjdk-17-jdk-headless
	fi
fi

site() { "$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'; }
if [ -f "$stamp" ] && home=$(site 2>/dev/null) && [ -x "$home/bin/spark-submit" ]; then
	echo "$home"
	exit 0
fi

# The venv needs Python 3's venv module with ensurepip (Debian: python3-venv).
if [ ! -x "$venv/bin/python" ] && ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		say "Python 3 with its venv module is needed for the pyspark venv (Debian: python3-venv); install it" && exit 1
	fi
	apt_install python3 python3-venv
fi
mkdir -p "$deps"
# Keep the venv out of git without touching the repository's .gitignore.
[ -f "$root/.deps/.gitignore" ] || { mkdir -p "$root/.deps" && echo '*' >"$root/.deps/.gitignore"; }
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
sdist=${PYSPARK_SDIST:-}
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
if [ -n "$sdist" ] && [ -f "$sdist" ]; then
	say "installing pyspark $PYSPARK_VERSION from $sdist"
	"${pip[@]}" "$sdist"
else
	say "installing pyspark==$PYSPARK_VERSION from PyPI (about 450 MB)"
	"${pip[@]}" "pyspark==$PYSPARK_VERSION"
fi
got=$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')
[ "$got" = "$PYSPARK_VERSION" ] || { say "installed pyspark $got, want $PYSPARK_VERSION" && exit 1; }
home=$(site)
[ -x "$home/bin/spark-submit" ] || { say "$home/bin/spark-submit missing" && exit 1; }
touch "$stamp"
echo "$home"
