package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var masterBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "berth-master-test-")
	if err != nil {
		panic(err)
	}
	masterBin = filepath.Join(dir, "master")
	if out, err := exec.Command("go", "build", "-o", masterBin, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A bad value is reported naming its flag, and the master exits non-zero
// before it listens or writes anything.
func TestBadFlagsAreRefusedNamingTheFlag(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"--port", "abc"}, "port"},
		{[]string{"--worker-timeout", "-1s"}, "--worker-timeout"},
		{[]string{"--worker-timeout", "soon"}, "worker-timeout"},
		{[]string{"--placement", "random"}, "--placement"},
		{[]string{"--worker-order", "by-mood"}, "--worker-order"},
		{[]string{"--min-core-unit", "-4"}, "--min-core-unit"},
		{[]string{"--default-cores", "-1"}, "--default-cores"},
		{[]string{"--recovery-mode", "zookeeper"}, "--recovery-mode"},
		{[]string{"--recovery-mode", "bolt", "--data-dir", ""}, "--data-dir"},
		{[]string{"--peers", "m1=nowhere", "--node-id", "m1"}, "--peers"},
		{[]string{"--peers", "m1=127.0.0.1:7177,m1=127.0.0.1:7178", "--node-id", "m1"}, "--peers"},
		{[]string{"--peers", "m1=127.0.0.1:7177", "--node-id", "m9"}, "--node-id"},
		{[]string{"--peers", "m1=127.0.0.1:7177", "--node-id", "m1", "--raft-multiplier", "0"}, "--raft-multiplier"},
		{[]string{"--host", "0.0.0.0"}, "--host"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"stray-argument"}, "stray-argument"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		args := append([]string{"--port", "0", "--data-dir", filepath.Join(dir, "data")}, c.args...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, masterBin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no BERTH_SECRET
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil {
			t.Errorf("%v: exited 0, want an error", c.args)
			continue
		}
		if !strings.Contains(string(out), c.flag) {
			t.Errorf("%v: output does not name %s:\n%s", c.args, c.flag, out)
		}
		if strings.Contains(string(out), "master serving") {
			t.Errorf("%v: the master started serving before refusing", c.args)
		}
	}
}

func TestParsePeers(t *testing.T) {
	peers, err := parsePeers(" m1=127.0.0.1:7177, m2=127.0.0.2:7177 ")
	if err != nil || len(peers) != 2 || peers["m2"] != "127.0.0.2:7177" {
		t.Fatalf("parsePeers: %v %v", peers, err)
	}
	if peers, err := parsePeers(""); err != nil || len(peers) != 0 {
		t.Fatalf("empty: %v %v", peers, err)
	}
	for _, bad := range []string{"m1", "=127.0.0.1:1", "m1=127.0.0.1", "m1=h:1,m1=h:2", "m1=h:notaport"} {
		if _, err := parsePeers(bad); err == nil {
			t.Errorf("parsePeers(%q) accepted", bad)
		}
	}
}
