package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
)

// recoverFlag is --recover: the lost-quorum recovery (docs/HA.md).
func recoverFlag() cli.Flag {
	return &cli.BoolFlag{Name: "recover",
		Usage: "lost quorum: rewrite --data-dir's Raft state into a cluster of this master alone (--node-id, at --raft-addr or its address in --peers), with every entry of its log applied, and exit; then start it without --recover, and grow the cluster back with masters started with --join (docs/HA.md). The master must be stopped"}
}

// recoverData runs --recover: persistence.RecoverRaft on this master's data
// directory, and says what it did and what to do next.
func recoverData(cx *cli.Context, log *slog.Logger) error {
	id, dir := cx.String("node-id"), cx.String("data-dir")
	switch {
	case id == "":
		return fmt.Errorf("--recover needs --node-id: the id this master has in the cluster")
	case dir == "":
		return fmt.Errorf("--recover needs --data-dir: the surviving master's data directory")
	case cx.String("recovery-mode") != "" && cx.String("recovery-mode") != "raft":
		return fmt.Errorf("--recover recovers a Raft cluster, not --recovery-mode %s", cx.String("recovery-mode"))
	}
	peers, err := parsePeers(cx.String("peers"))
	if err != nil {
		return fmt.Errorf("--peers: %w", err)
	}
	raftAddr := cx.String("raft-addr")
	if raftAddr == "" {
		raftAddr = peers[id]
	}
	if _, _, err := httpx.SplitHostPort(raftAddr); err != nil {
		return fmt.Errorf("--raft-addr %q: %w (give --raft-addr, or list this --node-id in --peers)", raftAddr, err)
	}
	rec, err := persistence.RecoverRaft(persistence.RaftConfig{ID: id, Addr: raftAddr, Dir: filepath.Join(dir, "raft"), Logger: log})
	if err != nil {
		return fmt.Errorf("--recover: %w", err)
	}
	return printRecovered(cx.App.Writer, id, dir, rec)
}

func printRecovered(w io.Writer, id, dir string, rec persistence.Recovered) error {
	list := func(ss []persistence.RaftServer) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID+" at "+s.RaftAddr)
		}
		return strings.Join(out, ", ")
	}
	s := rec.State
	active := 0
	for _, a := range s.Apps {
		if !a.Finished() {
			active++
		}
	}
	_, err := fmt.Fprintf(w, `recovered %s: master %s alone is now its Raft configuration
  before: %s
  after:  %s
  state:  index %d, term %d, epoch %d: %d apps (%d active), %d drivers, %d workers, %d queues, %d tenants
next: start this master without --recover (it elects itself); then start each new master
with an empty data directory and --join pointing at this one, without --peers
`, dir, id, list(rec.Before), list(rec.After), rec.Index, rec.Term, s.Epoch, len(s.Apps), active, len(s.Drivers), len(s.Workers), len(s.Queues), len(s.Tenants))
	return err
}
