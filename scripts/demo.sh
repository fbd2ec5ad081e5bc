#!/usr/bin/env bash
# make demo: a local TLS cluster on 127.0.0.x (three Raft masters, two
# workers, all in a temp dir, certificates made by `berth tls`) runs the pi
# job as a supervised driver, kills the leader with SIGKILL while pi runs,
# shows pi finishing and the new leader, then stops everything it started,
# by pid.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BERTH_DEMO_BIN:-$PWD/bin} # master, worker, berth and pi (e2e/demo_test.go gives its own)
TMP=$(mktemp -d -t berth-demo-XXXXXX)
PIDS=()

cleanup() {
	# Workers first (they kill their executors and tell the master), then
	# the masters; SIGKILL whatever is still there after a grace period.
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		kill -TERM "${PIDS[i]}" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "${PIDS[i]}" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "${PIDS[i]}" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

in_use() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
free_port() { # free_port IP BASE: BASE if it is free on IP, else a random one
	local port=$2
	while in_use "$1" "$port"; do port=$((20000 + RANDOM % 20000)); done
	echo "$port"
}

echo "== certificates: berth tls ca create, then one certificate per process (in $TMP/tls)"
TLS=$TMP/tls
"$BIN/berth" tls ca create --dir "$TLS" >/dev/null
for i in 1 2 3; do
	"$BIN/berth" tls cert create --dir "$TLS" --role master --name "m$i" --host "127.0.0.$i,localhost" >/dev/null
done
for i in 1 2; do
	"$BIN/berth" tls cert create --dir "$TLS" --role worker --name "w$i" --host 127.0.0.1 >/dev/null
done
"$BIN/berth" tls cert create --dir "$TLS" --role cli --name operator >/dev/null
ls "$TLS"
tlsflags() { echo --tls-ca-file "$TLS/ca.pem" --tls-cert-file "$TLS/$1.pem" --tls-key-file "$TLS/$1-key.pem"; }

MASTERS=() PEERS=()
for i in 1 2 3; do
	API[i]=$(free_port "127.0.0.$i" 7077)
	RAFT[i]=$(free_port "127.0.0.$i" 7177)
	MASTERS+=("https://127.0.0.$i:${API[i]}")
	PEERS+=("m$i=127.0.0.$i:${RAFT[i]}")
done
MASTER_LIST=$(IFS=,; echo "${MASTERS[*]}")
PEER_LIST=$(IFS=,; echo "${PEERS[*]}")

echo "== starting three masters ($MASTER_LIST) and two workers (logs in $TMP)"
for i in 1 2 3; do
	# shellcheck disable=SC2046 # tlsflags is several words on purpose
	"$BIN/master" --node-id "m$i" --host "127.0.0.$i" --port "${API[i]}" --data-dir "$TMP/m$i" \
		--peers "$PEER_LIST" $(tlsflags "m$i") --worker-timeout 10s --min-core-unit 2 >"$TMP/master$i.log" 2>&1 &
	PIDS+=($!)
	MPID[i]=$!
done
for i in 1 2; do
	# shellcheck disable=SC2046
	"$BIN/worker" --master "$MASTER_LIST" $(tlsflags "w$i") --cores 4 --memory 2g --work-dir "$TMP/w$i" >"$TMP/worker$i.log" 2>&1 &
	PIDS+=($!)
done

# shellcheck disable=SC2046
berth() { "$BIN/berth" --master "$MASTER_LIST" $(tlsflags operator) "$@"; }
# status: the leader's status as berth prints it (nothing while no master
# answers); read with grep and awk, so that the demo needs nothing more.
status() { berth status 2>/dev/null || true; }
# leader_id: the id of the master whose line in berth status says leader
# (the line goes on with its version: the role is one of its fields).
leader_id() { status | awk '$1 ~ /^m[0-9]+$/ { for (i = 2; i <= NF; i++) if ($i == "leader") { print $1; exit } }'; }
alive_workers() { status | grep -Eo '\([0-9]+ alive' | tr -dc '0-9'; }
# pi_running: pi's app lists RUNNING executors (column EXECUTORS, RUNNING:n).
pi_running() { status | awk '$2 == "pi" && / RUNNING:[1-9]/ { found = 1 } END { exit !found }'; }
# wait_for WHAT CMD...: waits (up to 60 s) until CMD succeeds.
wait_for() {
	local what=$1
	shift
	for _ in $(seq 600); do
		"$@" && return 0
		sleep 0.1
	done
	echo "demo.sh: $what not within 60 s; the logs are in $TMP:" >&2
	tail -n 5 "$TMP"/*.log >&2
	return 1
}
two_alive() { [ "$(alive_workers)" -ge 2 ] 2>/dev/null; }

wait_for "two ALIVE workers" two_alive
LEADER=$(leader_id)
echo "leader: $LEADER"

echo "== berth submit --supervise --cores 1 --memory 256m -- bin/pi --tasks 400"
DRIVER=$(berth submit --supervise --cores 1 --memory 256m -- "$BIN/pi" --tasks 400 --samples 400000)
echo "submitted $DRIVER"

# Kill the leader only once pi's app has RUNNING executors (the driver is
# RUNNING as soon as it is launched, before it has registered its app):
# the failover must keep executors that run. Only the leader's view lists
# executors.
wait_for "RUNNING executors of pi's app" pi_running
echo "== pi is running; kill -9 the leader $LEADER (pid ${MPID[${LEADER#m}]})"
kill -KILL "${MPID[${LEADER#m}]}"
wait "${MPID[${LEADER#m}]}" 2>/dev/null || true # reaped here, quietly: not a "Killed" line from the shell later
berth wait driver "$DRIVER" --timeout 120s

echo "== the driver's output"
berth logs driver "$DRIVER"

echo "== berth status (the new leader)"
berth status
echo "new leader: $(leader_id) (was $LEADER)"
