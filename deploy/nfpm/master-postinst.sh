#!/bin/sh
# berth-master's postinstall: the master's user, its state directory, and
# its configuration readable by it and root alone. The service is neither
# enabled nor started: a master needs its settings (peers, TLS) first, and
# an upgrade restarts no master, so that a cluster is upgraded one master
# at a time (docs/OPERATIONS.md).
set -e
if ! getent passwd berth >/dev/null; then
	useradd --system --user-group --home-dir /var/lib/berth-master --no-create-home \
		--shell /usr/sbin/nologin --comment "berth master" berth
fi
# systemd makes it too (StateDirectory=); made here for a master run by hand.
install -d -o berth -g berth -m 0700 /var/lib/berth-master
if [ -f /etc/berth/master.toml ]; then
	chgrp berth /etc/berth/master.toml
	chmod 0640 /etc/berth/master.toml
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
