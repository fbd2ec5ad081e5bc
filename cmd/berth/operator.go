package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/regularfile"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/persistence"

	"github.com/berth-cluster/berth/wire"
)

// operatorCommand is `berth operator snapshot save|inspect|restore` and
// `berth operator raft list-peers|remove-peer` (docs/OPERATIONS.md,
// docs/HA.md).
func operatorCommand() *cli.Command {
	return &cli.Command{
		Name:  "operator",
		Usage: "back up and restore the cluster's state, and manage the masters' Raft membership",
		Subcommands: []*cli.Command{
			{
				Name:  "snapshot",
				Usage: "save, inspect and restore snapshots of the cluster's state",
				Subcommands: []*cli.Command{
					{
						Name: "save", Usage: "save the leader's state to a file", ArgsUsage: "FILE",
						Description: `The leader takes it once every write committed before the command
is applied: apps, drivers, workers, executors' placements, queues,
tenants (their tokens' hashes), the audit log. The file (mode 0600: it
holds the apps' environments) carries its index, term, time, the master's
version and a checksum, and is checked before it replaces FILE.
--timeout bounds each attempt too.`,
						Action: saveSnapshot,
					},
					{
						Name: "inspect", Usage: "check a snapshot file and print what it holds", ArgsUsage: "FILE",
						Flags:  []cli.Flag{jsonFlag("operator-snapshot-inspect", "the snapshot's SnapshotInfo")},
						Action: inspectSnapshot,
					},
					{
						Name: "restore", Usage: "replace the cluster's state with a snapshot's", ArgsUsage: "FILE",
						Description: `Without --force, prints what restoring would do (the executors and
drivers running now that the snapshot does not know, which their workers
will kill; those it holds that no longer run, which will be LOST) and
changes nothing. With --force, the leader replaces the state through the
Raft log; every master applies it; the leader starts its leadership over
on it, and the workers reconcile: what the restored state does not know
is killed. The masters' addresses, the audit log, the epoch and the id
counters stay this cluster's. A file that is not a snapshot, truncated,
corrupt or of a newer format is refused, and nothing changes.`,
						Flags: []cli.Flag{
							// No environment variable: a restore is asked for each time.
							&cli.BoolFlag{Name: "force", Usage: "restore, rather than print what restoring would do"},
							jsonFlag("operator-snapshot-restore", "the master's Restore"),
						},
						Action: restoreSnapshot,
					},
				},
			},
			{
				Name:  "raft",
				Usage: "list the masters of the Raft configuration, or remove one",
				Subcommands: []*cli.Command{
					{
						Name: "list-peers", Usage: "the masters of the Raft configuration, each asked for its state",
						Description: `The first master that answers (a follower too, so that it works
without a quorum) lists the configuration as it knows it, and asks every
other master for its Raft figures: REACHABLE says whether it answered,
LAST CONTACT how long since it heard from the leader.`,
						Flags: []cli.Flag{jsonFlag("operator-raft-list-peers", "the master's RaftPeers")},
						Action: func(c *cli.Context) error {
							return show(c, "berth operator raft list-peers [--json]", (*client.Client).RaftPeers, printPeers)
						},
					},
					{
						Name: "remove-peer", Usage: "remove a master, not the leader, from the Raft configuration", ArgsUsage: "ID",
						Description: `For a master that is gone for good (stop it first). The leader
itself is refused: stop it (SIGTERM hands leadership over), then remove
it through the new leader. Masters join with master --join.`,
						Action: func(c *cli.Context) error {
							return onID(c, "berth operator raft remove-peer ID", (*client.Client).RemoveRaftPeer, func(id string, p wire.RaftPeers) error {
								fmt.Fprintf(c.App.Writer, "removed master %s from the Raft configuration\n\n", termtext.Escape(id))
								return printPeers(c.App.Writer, p)
							})
						},
					},
				},
			},
		},
	}
}

// operatorClient is the client of the snapshot commands: a snapshot may
// take the whole --timeout to move, not only the usual request timeout.
func operatorClient(c *cli.Context) (*client.Client, error) {
	return newClient(c, client.WithRequestTimeout(globalTimeout(c)))
}

func saveSnapshot(c *cli.Context) error {
	args, err := positional(c, "berth operator snapshot save FILE", 1)
	if err != nil {
		return err
	}
	path := args[0]
	cl, err := operatorClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(c)
	defer cancel()
	data, err := cl.SaveSnapshot(ctx)
	if err != nil {
		return err
	}
	info, err := readSnapshot(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the snapshot the leader sent does not check out, nothing written: %w", err)
	}
	if err := writeFileAtomic(path, data); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "saved %s: %s\n", termtext.Escape(path), describeSnapshot(info))
	return nil
}

// readSnapshot reads a snapshot file and checks it as a master would
// before restoring it: its envelope, the state's shape
// (persistence.DecodeSnapshotFile), and each record as the API would have
// checked it (admission.RestoredState); it counts its state.
func readSnapshot(r io.Reader) (wire.SnapshotInfo, error) {
	meta, counts, s, err := persistence.DecodeSnapshotFile(r, wire.MaxSnapshotBytes)
	if err != nil {
		return wire.SnapshotInfo{}, err
	}
	info := wire.SnapshotInfo{Format: meta.Format, Index: meta.Index, Term: meta.Term, Time: meta.Time, Version: meta.Version,
		Commit: meta.Commit, Master: meta.Master, Size: meta.Size, SHA256: meta.SHA256, Counts: counts}
	if err := admission.RestoredState(s); err != nil {
		return info, fmt.Errorf("a master would refuse to restore it: %w", err)
	}
	return info, nil
}

// readSnapshotFile is readSnapshot of a file, with the file's bytes.
func readSnapshotFile(path string) ([]byte, wire.SnapshotInfo, error) {
	data, err := regularfile.Read(path, wire.MaxSnapshotBytes+1<<20)
	if err != nil {
		return nil, wire.SnapshotInfo{}, err
	}
	info, err := readSnapshot(bytes.NewReader(data))
	if err != nil {
		return nil, info, fmt.Errorf("%s: %w", path, err)
	}
	return data, info, nil
}

// writeFileAtomic writes data to path (0600) through a temporary file in
// its directory, synced and renamed over it: path holds the old file or
// the new one, whole.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// describeSnapshot is a snapshot's summary on one line.
func describeSnapshot(i wire.SnapshotInfo) string {
	return fmt.Sprintf("index %d, term %d, taken %s by master %s (version %s), %d bytes, sha256 %s",
		i.Index, i.Term, i.Time.Local().Format(time.RFC3339), termtext.Escape(i.Master), termtext.Escape(i.Version), i.Size, i.SHA256)
}

func inspectSnapshot(c *cli.Context) error {
	args, err := positional(c, "berth operator snapshot inspect FILE [--json]", 1)
	if err != nil {
		return err
	}
	_, info, err := readSnapshotFile(args[0])
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, info)
	}
	return printSnapshotInfo(c.App.Writer, info)
}

func printSnapshotInfo(out io.Writer, i wire.SnapshotInfo) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	}
	n := i.Counts
	for _, kv := range [][2]string{
		{"format", strconv.Itoa(i.Format)},
		{"index", strconv.FormatUint(i.Index, 10)},
		{"term", strconv.FormatUint(i.Term, 10)},
		{"taken", i.Time.Local().Format(time.RFC3339)},
		{"by master", i.Master},
		{"version", i.Version},
		{"commit", commit},
		{"size", fmt.Sprintf("%d bytes of state", i.Size)},
		{"sha256", i.SHA256 + " (checked)"},
		{"epoch", strconv.FormatUint(n.Epoch, 10)},
		{"apps", fmt.Sprintf("%d active, %d finished", n.ActiveApps, n.FinishedApps)},
		{"drivers", fmt.Sprintf("%d active, %d finished", n.ActiveDrivers, n.FinishedDrivers)},
		{"workers", strconv.Itoa(n.Workers)},
		{"executors", strconv.Itoa(n.Executors)},
		{"queues", strconv.Itoa(n.Queues)},
		{"tenants", strconv.Itoa(n.Tenants)},
		{"masters", strconv.Itoa(n.Masters)},
		{"audit entries", strconv.Itoa(n.AuditEntries)},
	} {
		row(w, kv[0]+":", kv[1])
	}
	return w.Flush()
}

// errNotRestored ends a restore without --force, after its plan.
var errNotRestored = errors.New("not restored: nothing changed; run again with --force to replace the cluster's state")

func restoreSnapshot(c *cli.Context) error {
	args, err := positional(c, "berth operator snapshot restore FILE [--force] [--json]", 1)
	if err != nil {
		return err
	}
	// Checked here first: a bad file is refused without asking a master.
	data, _, err := readSnapshotFile(args[0])
	if err != nil {
		return err
	}
	cl, err := operatorClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(c)
	defer cancel()
	if !c.Bool("force") {
		plan, err := cl.RestoreSnapshot(ctx, data, true)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if err := printJSON(c.App.Writer, plan); err != nil {
				return err
			}
		} else if err := printRestore(c.App.Writer, plan); err != nil {
			return err
		}
		return errNotRestored
	}
	done, err := cl.RestoreSnapshot(ctx, data, false)
	if errors.Is(err, client.ErrUnknownOutcome) {
		return hinted{err, "the state may or may not have been replaced: look with berth status, and restore again if it was not"}
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, done)
	}
	return printRestore(c.App.Writer, done)
}

// printRestore writes a restore's plan, or what it did.
func printRestore(out io.Writer, r wire.Restore) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if r.Restored {
		fmt.Fprintf(w, "Restored the snapshot of %s.\n", describeSnapshot(r.Snapshot))
		fmt.Fprintln(w, "The leader is starting over on the restored state; workers kill what it does not know.")
	} else {
		fmt.Fprintf(w, "Restoring would replace the cluster's state with the snapshot of %s.\n", describeSnapshot(r.Snapshot))
	}
	n := r.Snapshot.Counts
	fmt.Fprintf(w, "It holds %d active apps, %d active drivers, %d workers, %d executors, %d queues, %d tenants.\n",
		n.ActiveApps, n.ActiveDrivers, n.Workers, n.Executors, n.Queues, n.Tenants)
	verb := "would be"
	if r.Restored {
		verb = "are being"
	}
	section(w, fmt.Sprintf("Executors running now, unknown to the snapshot: %s killed (%d)", verb, len(r.KillExecutors)), "APP\tEXECUTOR\tWORKER")
	for _, e := range r.KillExecutors {
		row(w, e.AppID, strconv.Itoa(e.ExecutorID), e.WorkerID)
	}
	section(w, fmt.Sprintf("Drivers running now, unknown to the snapshot or ended in it: %s killed (%d)", verb, len(r.KillDrivers)), "DRIVER\tWORKER")
	for _, d := range r.KillDrivers {
		row(w, d.DriverID, d.WorkerID)
	}
	section(w, fmt.Sprintf("Executors of the snapshot that do not run now: LOST once their workers answer, and replaced (%d)", len(r.LostExecutors)), "APP\tEXECUTOR\tWORKER")
	for _, e := range r.LostExecutors {
		row(w, e.AppID, strconv.Itoa(e.ExecutorID), e.WorkerID)
	}
	if len(r.GoneApps) > 0 || len(r.GoneDrivers) > 0 {
		fmt.Fprintf(w, "\nActive now, absent from the snapshot (or ended in it): apps %s; drivers %s\n",
			termtext.Escape(orDash(strings.Join(r.GoneApps, ", "))), termtext.Escape(orDash(strings.Join(r.GoneDrivers, ", "))))
	}
	return w.Flush()
}

func printPeers(out io.Writer, p wire.RaftPeers) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "As master %s sees it (leader %s):\n", termtext.Escape(p.MasterID), termtext.Escape(orDash(p.LeaderID)))
	fmt.Fprintln(w, "ID\tRAFT ADDRESS\tAPI\tVOTER\tLEADER\tSTATE\tTERM\tCOMMIT\tAPPLIED\tLAST CONTACT\tREACHABLE\tVERSION")
	var unreachable []string
	for _, s := range p.Peers {
		term, commit, applied := "-", "-", "-"
		if s.Reachable {
			term, commit, applied = strconv.FormatUint(s.Term, 10), strconv.FormatUint(s.CommitIndex, 10), strconv.FormatUint(s.AppliedIndex, 10)
		} else {
			unreachable = append(unreachable, fmt.Sprintf("  %s: %s", termtext.Escape(s.ID), termtext.Escape(s.Error)))
		}
		row(w, s.ID, s.RaftAddr, orDash(s.APIAddr), yesNo(s.Voter), yesNo(s.Leader), orDash(s.State), term, commit, applied,
			orDash(s.LastContact), yesNo(s.Reachable), orDash(s.Version))
	}
	if len(unreachable) > 0 {
		fmt.Fprintf(w, "Unreachable:\n%s\n", strings.Join(unreachable, "\n"))
	}
	return w.Flush()
}

// mixedVersions reports whether masters that said their version differ.
func mixedVersions(ms []wire.MasterNode) bool {
	seen := ""
	for _, m := range ms {
		if m.Version != "" && seen != "" && m.Version != seen {
			return true
		}
		if m.Version != "" {
			seen = m.Version
		}
	}
	return false
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
