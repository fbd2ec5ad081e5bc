#!/bin/sh
# berth-worker's postinstall: its work directory (0755: the processes of
# run-as = "dynamic" reach their own directories below it). The service is
# neither enabled nor started: a worker needs its masters first, and an
# upgrade restarts no worker, whose restart kills what it runs.
set -e
install -d -o root -g root -m 0755 /var/lib/berth-worker
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
