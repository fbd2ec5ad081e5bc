#!/bin/sh
# berth-master's and berth-worker's preremove: a daemon whose package is
# removed is stopped first. Not on an upgrade: the running daemon keeps its
# old binary until the operator restarts it, one machine at a time.
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl stop "${DPKG_MAINTSCRIPT_PACKAGE}.service" || true
fi
