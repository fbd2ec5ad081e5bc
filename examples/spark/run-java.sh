#!/usr/bin/env bash
# Compiles BerthShuffle.java against the pinned Spark and submits it in client
# mode to berth: examples/spark/run-java.sh [TASKS] [TASK_SLEEP_MS]
#   MASTER   (default spark+berth://127.0.0.61:17077)
#   SPARK_HOME (default: scripts/spark-deps.sh's)
#   extra spark-submit options in SUBMIT_OPTS, e.g. "--conf spark.executor.instances=2"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SPARK_HOME=${SPARK_HOME:-$("$root/scripts/spark-deps.sh")}
export SPARK_HOME
out=${EXAMPLE_OUT:-/tmp/berth-spark-example}
mkdir -p "$out/classes"
if [ ! -f "$out/berth-shuffle.jar" ] || [ "$here/BerthShuffle.java" -nt "$out/berth-shuffle.jar" ]; then
	javac -nowarn -d "$out/classes" -cp "$SPARK_HOME/jars/*" "$here/BerthShuffle.java"
	jar cf "$out/berth-shuffle.jar" -C "$out/classes" .
fi
# shellcheck disable=SC2086
exec "$SPARK_HOME/bin/spark-submit" --master "${MASTER:-spark+berth://127.0.0.61:17077}" \
	--deploy-mode client --jars "$root/bin/berth-spark.jar" \
	--executor-memory "${EXECUTOR_MEMORY:-512m}" ${SUBMIT_OPTS:-} \
	--class BerthShuffle "$out/berth-shuffle.jar" "$@"
