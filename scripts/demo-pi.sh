#!/usr/bin/env bash
# make demo-pi: a local TLS cluster on 127.0.0.x (three Raft masters, two
# workers, all in a temp dir, certificates made by `berth tls`) runs the pi
# job as a supervised driver, kills the leader with SIGKILL while pi runs,
# shows pi finishing and the new leader, then stops everything it started,
# by pid.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BERTH_DEMO_BIN:-$PWD/bin} # master, worker, berth and pi (e2e/demo_test.go gives its own)
# shellcheck source=scripts/lib/demo-cluster.sh
. scripts/lib/demo-cluster.sh

echo "== berth submit --supervise --cores 1 --memory 256m -- bin/pi --tasks 400"
DRIVER=$(berth submit --supervise --cores 1 --memory 256m -- "$BIN/pi" --tasks 400 --samples 400000)
echo "submitted $DRIVER"

# Kill the leader only once pi's app has RUNNING executors (the driver is
# RUNNING as soon as it is launched, before it has registered its app):
# the failover must keep executors that run. Only the leader's view lists
# executors.
wait_for "RUNNING executors of pi's app" app_running pi
echo "== pi is running; kill -9 the leader $LEADER (pid ${MPID[${LEADER#m}]})"
kill_quietly "${MPID[${LEADER#m}]}"
berth wait driver "$DRIVER" --timeout 120s

echo "== the driver's output"
berth logs driver "$DRIVER"

echo "== berth status (the new leader)"
berth status
echo "new leader: $(leader_id) (was $LEADER)"
