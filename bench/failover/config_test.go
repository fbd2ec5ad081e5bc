package failover

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"master", "worker"} {
		os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755)
	}
	good := func() *config {
		return &config{bin: dir, scenarios: []string{"kill", "submit"}, masters: 3, workers: 10, workerCores: 2, executors: 10,
			rounds: 20, handoverRounds: 20, submitCount: 10, submitConcurrency: []int{1}, raftMultiplier: 1,
			poll: time.Millisecond, roundTimeout: time.Minute, maxTime: time.Minute}
	}
	if err := good().check(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, mut := range map[string]func(*config){
		"even masters":    func(c *config) { c.masters = 4 },
		"one master":      func(c *config) { c.masters = 1 },
		"scenario":        func(c *config) { c.scenarios = []string{"explode"} },
		"executors":       func(c *config) { c.executors = 21 },
		"no binaries":     func(c *config) { c.bin = t.TempDir() },
		"zero poll":       func(c *config) { c.poll = 0 },
		"concurrency":     func(c *config) { c.submitConcurrency = []int{0} },
		"submit workers":  func(c *config) { c.submitWorkers = 201 },
		"raft multiplier": func(c *config) { c.raftMultiplier = 11 },
	} {
		c := good()
		mut(c)
		if c.check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Each subcommand's config is checked on its own flags only.
	submissions := &config{bin: dir, scenarios: []string{"submit"}, masters: 3, workerCores: 2,
		submitCount: 10, submitConcurrency: []int{1}, raftMultiplier: 1, maxTime: time.Minute}
	if err := submissions.check(); err != nil {
		t.Errorf("submissions config: %v", err)
	}
}
