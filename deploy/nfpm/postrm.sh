#!/bin/sh
# berth-master's and berth-worker's postremove. A purge removes the
# configuration files (dpkg does) but keeps the state, /var/lib/berth-master
# or /var/lib/berth-worker, and the berth user, who owns it: a master's state
# is the cluster's, and a purge by mistake must not lose it (remove them by
# hand: docs/OPERATIONS.md).
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
if [ "$1" = purge ]; then
	case "$DPKG_MAINTSCRIPT_PACKAGE" in
	berth-master) state=/var/lib/berth-master ;;
	*) state=/var/lib/berth-worker ;;
	esac
	if [ -d "$state" ]; then
		echo "$DPKG_MAINTSCRIPT_PACKAGE: kept $state (the state); remove it by hand if it is no longer needed" >&2
	fi
fi
