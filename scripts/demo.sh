#!/usr/bin/env bash
# make demo: Spark on berth. A local TLS cluster on 127.0.0.x (three Raft
# masters, two workers: scripts/lib/demo-cluster.sh) with a queue and a
# tenant; the tenant runs a PySpark job (examples/spark/pi.py: pi by
# sampling, with a shuffle) with stock Spark 4.2.0 and berth's plugin,
# berth's leader is killed with SIGKILL while the job runs, and the job
# finishes all the same: Spark's result, the new leader, then everything
# it started is stopped, by pid. The pinned Spark comes from
# scripts/spark-deps.sh (pyspark from PyPI, once). make demo-pi runs the
# Go pi example instead, without Spark.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BERTH_DEMO_BIN:-$PWD/bin} # master, worker, berth and berth-spark.jar (e2e/demo_test.go gives its own)
JAR=${BERTH_SPARK_JAR:-$BIN/berth-spark.jar}
[ -f "$JAR" ] || { echo "demo: $JAR missing (make build makes it)" >&2; exit 1; }

echo "== Spark 4.2.0 (the pinned pyspark, scripts/spark-deps.sh)"
SPARK_HOME=$(scripts/spark-deps.sh)
export SPARK_HOME
PYTHON=$(cd "$SPARK_HOME/../../../.." && pwd)/bin/python # the venv's, where pyspark is
export PYSPARK_PYTHON=$PYTHON PYSPARK_DRIVER_PYTHON=$PYTHON

# shellcheck source=scripts/lib/demo-cluster.sh
. scripts/lib/demo-cluster.sh

echo "== a queue and a tenant: berth queue set etl; berth tenant create data --queues etl"
berth queue set etl >/dev/null
TOKEN=$(berth tenant create data --queues etl 2>/dev/null | tail -n 1)
SPARK_MASTER="spark+berth://${MASTER_LIST//https:\/\//}"

echo "== spark-submit --master $SPARK_MASTER --jars berth-spark.jar examples/spark/pi.py (as tenant data)"
BERTH_TOKEN=$TOKEN "$SPARK_HOME/bin/spark-submit" --master "$SPARK_MASTER" --jars "$JAR" \
	--conf spark.berth.tls.caFile="$TLS/ca.pem" --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 \
	--conf spark.executor.memory=512m --conf spark.ui.showConsoleProgress=false \
	examples/spark/pi.py 80 100000 0.5 >"$TMP/spark.out" 2>"$TMP/spark.log" &
SUBMIT=$!
PIDS+=("$SUBMIT")

# Kill the leader once the job's executors run tasks: the failover must
# keep them, and the job must go on through it.
wait_for "RUNNING executors of the Spark job" app_running pyspark-pi
tasks_running() { grep -q "Starting task" "$TMP/spark.log"; }
wait_for "the job's tasks running" tasks_running
echo "== the job is running ($(status | awk '$2 == "pyspark-pi" { print $5 }'), its tasks started); kill -9 the leader $LEADER (pid ${MPID[${LEADER#m}]})"
kill_quietly "${MPID[${LEADER#m}]}"
if ! wait "$SUBMIT"; then
	echo "demo: spark-submit failed; its log ends:" >&2
	tail -n 30 "$TMP/spark.log" >&2
	exit 1
fi

echo "== Spark's output"
cat "$TMP/spark.out"

echo "== berth status (the new leader)"
berth status
echo "new leader: $(leader_id) (was $LEADER)"
# No executor of the job was lost to the failover: each ended with the app.
if status | awk '$2 == "pyspark-pi"' | grep -Eq 'LOST|FAILED:'; then
	echo "demo: the job lost executors to the failover" >&2
	exit 1
fi
echo "no executor of the job lost to the failover"
