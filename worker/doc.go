// Package worker is berth's worker daemon: it registers with the leading
// master, heartbeats, and runs the executors and drivers the master asks for
// as child processes, reporting their states back (Spark standalone's
// Worker, ExecutorRunner and DriverRunner).
//
// # Processes
//
// A child is started from its argv, in its own process group, with a
// directory of its own (procdir.go):
//
//	<work-dir>/<appId>/<executorId>/{stdout,stderr,...}   executors
//	<work-dir>/drivers/<driverId>/{stdout,stderr,...}     drivers
//
// holding what the worker writes for it (logs, the resources file), and
// below it home/, the child's own: its working directory (and, with
// --run-as, its HOME and TMPDIR). The child cannot change the directory
// above its home, and the worker, root or not, opens nothing there but
// through descriptors that follow no link (dirfd.go). Log files are opened
// for appending, so a restarted supervised driver keeps the output of its
// earlier runs. The directory of an app or a driver that no longer runs
// here is removed once nothing in it changed for the cleanup TTL
// (cleanup.go). A bare command name is looked up in the child's PATH
// (absolute entries only; with --run-as, by /bin/sh as the child); a
// relative path containing a slash is resolved against its home. Where the
// child has a cgroup, or runs as a tenant (--run-as), /bin/sh execs the
// program for it (gate.go).
//
// Children are started from one goroutine locked to its OS thread for the
// life of the process, with Pdeathsig = SIGKILL: Linux sends the signal when
// the creating thread exits (golang/go#27505), so this thread must never
// exit. A worker killed with SIGKILL thus takes its direct children with it.
//
// # Environment
//
// Children do NOT inherit the worker's environment (it may hold the secret
// and whatever the operator's shell had). A child's environment is built in
// three layers, each overriding the one before: PATH, HOME, TMPDIR and LANG
// from the worker; the env of the launch request (the app's or driver's);
// the BERTH_* variables of package wire (executors: app id, executor id,
// cores, memory, worker id and host, master list; drivers: driver id, cores,
// memory, worker id and host, master list and the driver's own credential,
// BERTH_TOKEN, minted by the master for that driver alone, so that they can
// register and manage their apps; never the cluster secret). The BERTH_* variables come last because they
// are facts about the launch that an app's env must not falsify.
//
// The argv placeholders {{APP_ID}}, {{EXECUTOR_ID}}, {{CORES}},
// {{HOSTNAME}} (the worker's advertised host) and {{RESOURCES}} (the path
// of the process's resources file) are substituted in one pass.
//
// # Kills and exit codes
//
// A kill sends SIGTERM to the process group and SIGKILL after the grace
// period if the process is still there; once the killed process has exited
// the group gets a SIGKILL too, to sweep up grandchildren that ignored
// SIGTERM. A death by signal is reported as 128+signal, as shells do, with
// Spark's explanations (137: killed by SIGKILL, possibly out of memory).
//
// # Supervised drivers
//
// A supervised driver that exits non-zero is restarted after a backoff that
// starts at 1 s and doubles up to 60 s; a run that lasted longer than the
// maximum backoff (60 s) counts as healthy and resets the backoff to 1 s.
// Exit 0 is FINISHED; a kill is KILLED, also while waiting to restart.
//
// # Master
//
// State changes are queued and delivered in order, one at a time, to the
// master the worker is registered with, retrying until the master takes
// them (at least once: a retried request may arrive twice). A master that
// fails (no answer, 5xx, redirect) makes the worker look for the leader again
// across the --master list; the worker id stays the same and no child is
// ever killed because of a master's failure.
package worker
