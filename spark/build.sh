#!/usr/bin/env bash
# Builds berth's Spark cluster-manager plugin (spark/pom.xml, against the pinned
# Spark 4.2.0) and copies it to bin/berth-spark.jar. Maven runs offline when
# its local repository already holds everything, else online (Maven Central):
# the first build downloads Spark's jars into ~/.m2, later ones take seconds.
#   spark/build.sh             build, run the unit tests, copy the jar
#   SKIP_TESTS=1 spark/build.sh
# A Makefile can call it:  spark: ; spark/build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
command -v mvn >/dev/null || { echo "spark/build.sh: mvn not found (install maven, and Java 17)" >&2; exit 1; }
args=(-q -B -f "$here/pom.xml" package)
[ "${SKIP_TESTS:-}" = 1 ] && args+=(-DskipTests)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! mvn -o "${args[@]}" >"$log" 2>&1; then
	if grep -q "offline mode" "$log"; then
		echo "spark/build.sh: fetching the build's dependencies (first build)" >&2
		mvn "${args[@]}" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
	else
		cat "$log" >&2
		exit 1
	fi
fi
if [ "${SKIP_TESTS:-}" != 1 ]; then
	# Surefire's reports, summed: "N passed, M failed".
	cat "$here"/target/surefire-reports/*.txt 2>/dev/null | awk -F'[:,]' '/^Tests run/ {
		run += $2; bad += $4 + $6 } END { printf "spark/build.sh: %d passed, %d failed\n", run - bad, bad }' >&2
fi
mkdir -p "$root/bin"
cp "$here/target/berth-spark.jar" "$root/bin/berth-spark.jar"
echo "$root/bin/berth-spark.jar"
