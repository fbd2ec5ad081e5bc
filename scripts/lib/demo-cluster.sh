# scripts/lib/demo-cluster.sh, sourced by make demo (scripts/demo.sh) and
# make demo-pi: a local TLS cluster on 127.0.0.x, three Raft masters and
# two workers, all in a temp dir, certificates made by `berth tls`, and
# what the demos need to watch it (berth, status, leader_id, wait_for).
# Whatever it starts is stopped, by pid, when the sourcing script exits.
# BIN: master, worker and berth (e2e/demo_test.go gives its own).
: "${BIN:?BIN: the directory of master, worker and berth}"
TMP=$(mktemp -d -t berth-demo-XXXXXX)
PIDS=()

cleanup() {
	# Workers first (they kill their executors and tell the master), then
	# the masters; SIGKILL whatever is still there after a grace period.
	# The loop's stderr goes nowhere: the shell reports a child it finds
	# killed between two commands, on its own stderr, wherever it is.
	{
		for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
			kill -TERM "${PIDS[i]}" || true
			for _ in $(seq 50); do kill -0 "${PIDS[i]}" || break; sleep 0.1; done
			kill -KILL "${PIDS[i]}" || true
		done
		wait || true
	} 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# kill_quietly PID: SIGKILL a process this shell started and reap it,
# with no "Killed" line: the shell prints one for a child it finds killed
# between two commands (before a later `wait` runs), so the kill and the
# wait share one redirected group.
kill_quietly() { { kill -KILL "$1"; wait "$1"; } 2>/dev/null || true; }

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
echo "   $(cd "$TLS" && echo *.pem)"
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
	"$BIN/worker" --master "$MASTER_LIST" $(tlsflags "w$i") --cores 4 --memory "${DEMO_WORKER_MEMORY:-2g}" --work-dir "$TMP/w$i" \
		--host-dir "$TMP/host" >"$TMP/worker$i.log" 2>&1 &
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
# app_running NAME: the app of that name lists RUNNING executors (column
# EXECUTORS, RUNNING:n).
app_running() { status | awk -v name="$1" '$2 == name && / RUNNING:[1-9]/ { found = 1 } END { exit !found }'; }
# wait_for WHAT CMD...: waits (up to 60 s by the clock, not by tries: a
# try of berth status against masters that do not answer takes seconds)
# until CMD succeeds.
wait_for() {
	local what=$1 deadline=$((SECONDS + 60))
	shift
	while [ "$SECONDS" -lt "$deadline" ]; do
		"$@" && return 0
		sleep 0.1
	done
	echo "demo: $what not within 60 s; the logs are in $TMP:" >&2
	tail -n 5 "$TMP"/*.log >&2
	return 1
}
two_alive() { [ "$(alive_workers)" -ge 2 ] 2>/dev/null; }

wait_for "two ALIVE workers" two_alive
LEADER=$(leader_id)
echo "leader: $LEADER"

