#!/usr/bin/env bash
# Tries berth's Spark plugin for real on a loopback cluster: one master
# (127.0.0.61:17077) and two workers (127.0.0.62, 127.0.0.63), then
#   1. BerthShuffle (Java, spark-submit in client mode),
#   2. the same with each task slower, and one executor killed with SIGKILL
#      mid-job: berth replaces it and the job still finishes,
#   3. shuffle_cache.py, PySpark from the venv's python3 (no spark-submit).
# Every process it starts is stopped by its pid at the end.
#
#   make build && spark/build.sh && examples/spark/local-cluster.sh
#
# BERTH_BIN: where master, worker and berth are (default: bin/);
# OUT: where the cluster keeps its state and logs (default: a new temp dir).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${BERTH_BIN:-$root/bin}
out=${OUT:-$(mktemp -d /tmp/berth-spark.XXXXXX)}
mkdir -p "$out"
for b in master worker berth berth-spark.jar; do
	[ -e "$bin/$b" ] || [ -e "$root/bin/$b" ] || { echo "missing $b: run make build and spark/build.sh" >&2; exit 1; }
done
export SPARK_HOME=${SPARK_HOME:-$("$root/scripts/spark-deps.sh")}
python=$(dirname "$(dirname "$(dirname "$(dirname "$SPARK_HOME")")")")/bin/python
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

master=http://127.0.0.61:17077
"$bin/master" --host 127.0.0.61 --port 17077 --data-dir "$out/m1" --app-timeout 15s >"$out/m1.log" 2>&1 &
pids+=($!)
sleep 1
for i in 2 3; do
	"$bin/worker" --master $master --host 127.0.0.6$i --port 1707$((6 + i)) --id w$i --cores 2 \
		--memory 3g --work-dir "$out/w$i" >"$out/w$i.log" 2>&1 &
	pids+=($!)
done
for _ in $(seq 50); do
	"$bin/berth" --master $master --timeout 1s status 2>/dev/null | grep -q "2 alive" && break
	sleep 0.2
done

# The driver and executors on loopback too, on ports of the same range.
cat >"$out/spark.conf" <<EOF
spark.driver.host 127.0.0.61
spark.driver.bindAddress 127.0.0.61
spark.driver.port 17090
spark.driver.blockManager.port 17091
spark.ui.port 17092
spark.blockManager.port 17093
EOF
export MASTER=spark+berth://127.0.0.61:17077 EXAMPLE_OUT=$out/example

echo "== 1. BerthShuffle"
SUBMIT_OPTS="--properties-file $out/spark.conf" "$here/run-java.sh" 4 >"$out/java.log" 2>&1
grep -E "Pi is|shuffle:|OK" "$out/java.log"

echo "== 2. BerthShuffle, one executor killed with SIGKILL mid-job"
SUBMIT_OPTS="--properties-file $out/spark.conf --conf spark.executor.instances=2 --conf spark.executor.cores=1" \
	"$here/run-java.sh" 16 1500 >"$out/kill.log" 2>&1 &
job=$!
pids+=($job)
victim=""
for _ in $(seq 100); do
	victim=$(pgrep -f "CoarseGrainedExecutorBackend.*--executor-id 0 " || true)
	[ -n "$victim" ] && grep -q "Pi is" "$out/kill.log" && break
	sleep 0.2
done
sleep 2
echo "kill -9 executor 0 (pid $victim)"
kill -9 "$victim"
wait $job
grep -E "berth: executor 0|granted executor [2-9]|OK" "$out/kill.log" | sed 's/^.*INFO /INFO /; s/^.*WARN /WARN /'

echo "== 3. PySpark from python3"
(cd "$out" && PYSPARK_SUBMIT_ARGS="--properties-file $out/spark.conf pyspark-shell" \
	"$python" "$here/shuffle_cache.py" 6 >"$out/py.log" 2>&1)
grep -aE "OK" "$out/py.log"
echo "logs in $out"
