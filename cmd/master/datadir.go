package main

import (
	"log/slog"
	"os"
	"path/filepath"
)

// warnUnusedState says so when --data-dir holds the state of another
// recovery mode than the one this master runs: the README's single-master
// state.db under a Raft master, or a Raft log under a single master. The
// master does not use it, and an operator who reused the directory would
// otherwise wonder where the apps, queues and tenants went.
func warnUnusedState(dir, mode string, log *slog.Logger) {
	if dir == "" {
		return
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case mode != "bolt" && exists("state.db"):
		log.Warn("--data-dir holds a single master's state (state.db) that this master does not use: start it with --recovery-mode bolt to use it, or give a fresh --data-dir", "data-dir", dir, "recovery-mode", mode)
	case mode != "raft" && exists("raft"):
		log.Warn("--data-dir holds a Raft cluster's state (raft/) that this master does not use: start it with --recovery-mode raft and its --peers to use it, or give a fresh --data-dir", "data-dir", dir, "recovery-mode", mode)
	}
}
