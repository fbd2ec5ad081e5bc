#!/usr/bin/env bash
# make demo: a local cluster on 127.0.0.1 (one master, two workers, all in
# temp dirs) runs the pi job as a supervised driver, prints Pi and the
# cluster status, then stops everything it started, by pid.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/bin
TMP=$(mktemp -d -t berth-demo-XXXXXX)
PIDS=()

cleanup() {
	# Workers first (they kill their executors and tell the master), then
	# the master; SIGKILL whatever is still there after a grace period.
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		kill -TERM "${PIDS[i]}" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "${PIDS[i]}" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "${PIDS[i]}" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# A free port for the master: 7077 as documented, or another if it is taken.
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=7077
while in_use "$PORT"; do PORT=$((20000 + RANDOM % 20000)); done
[ "$PORT" = 7077 ] || echo "port 7077 is in use; the demo master uses $PORT"
MASTER=http://127.0.0.1:$PORT
export BERTH_SECRET=demo-$RANDOM$RANDOM

echo "== starting a master on $MASTER and two workers (logs in $TMP)"
"$BIN/master" --port "$PORT" --data-dir "$TMP/m1" --worker-timeout 10s --min-core-unit 2 >"$TMP/master.log" 2>&1 &
PIDS+=($!)
for i in 1 2; do
	"$BIN/worker" --master "$MASTER" --cores 4 --memory 2g --work-dir "$TMP/w$i" >"$TMP/worker$i.log" 2>&1 &
	PIDS+=($!)
done

berth() { "$BIN/berth" --master "$MASTER" "$@"; }

# Wait (up to 20 s) until both workers are ALIVE.
for _ in $(seq 200); do
	if [ "$(berth status --json 2>/dev/null | grep -Eo '"state": *"ALIVE"' | wc -l)" -ge 2 ]; then break; fi
	sleep 0.1
done

echo "== berth submit --supervise --cores 1 --memory 256m -- bin/pi --tasks 200"
DRIVER=$(berth submit --supervise --cores 1 --memory 256m -- "$BIN/pi" --tasks 200)
echo "submitted $DRIVER; waiting for it to finish"
berth wait driver "$DRIVER" --timeout 120s

echo "== the driver's output"
berth logs driver "$DRIVER"

echo "== berth status"
berth status
