package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/internal/testproc"
)

var masterBin string

func TestMain(m *testing.M) { os.Exit(testproc.MainWithBinary(m, "master", &masterBin)) }

// A bad value is reported naming its flag, and the master exits non-zero
// before it listens or writes anything.
func TestBadFlagsAreRefusedNamingTheFlag(t *testing.T) {
	t.Parallel()
	cases := []testproc.BadFlag{
		{Args: []string{"--port", "abc"}, Flag: "port"},
		{Args: []string{"--worker-timeout", "-1s"}, Flag: "--worker-timeout"},
		{Args: []string{"--worker-timeout", "soon"}, Flag: "worker-timeout"},
		{Args: []string{"--placement", "no-such-policy"}, Flag: "--placement"},
		{Args: []string{"--worker-order", "by-mood"}, Flag: "--worker-order"},
		{Args: []string{"--min-core-unit", "-4"}, Flag: "--min-core-unit"},
		{Args: []string{"--max-active-apps", "-1"}, Flag: "--max-active-apps"},
		{Args: []string{"--max-active-drivers", "-1"}, Flag: "--max-active-drivers"},
		{Args: []string{"--max-submission-bytes", "-1"}, Flag: "--max-submission-bytes"},
		{Args: []string{"--max-streams-per-app", "-1"}, Flag: "--max-streams-per-app"},
		{Args: []string{"--max-connections", "-1"}, Flag: "--max-connections"},
		{Args: []string{"--max-drivers", "-1"}, Flag: "--max-drivers"},
		{Args: []string{"--default-cores", "-1"}, Flag: "--default-cores"},
		{Args: []string{"--recovery-mode", "zookeeper"}, Flag: "--recovery-mode"},
		{Args: []string{"--recovery-mode", "bolt", "--data-dir", ""}, Flag: "--data-dir"},
		{Args: []string{"--peers", "m1=nowhere", "--node-id", "m1"}, Flag: "--peers"},
		{Args: []string{"--peers", "m1=127.0.0.1:7177,m1=127.0.0.1:7178", "--node-id", "m1"}, Flag: "--peers"},
		{Args: []string{"--peers", "m1=127.0.0.1:7177", "--node-id", "m9"}, Flag: "--node-id"},
		{Args: []string{"--peers", "m1=127.0.0.1:7177", "--node-id", "m1", "--raft-multiplier", "0"}, Flag: "--raft-multiplier"},
		{Args: []string{"--host", "0.0.0.0"}, Flag: "--host"},
		{Args: []string{"--log-level", "loud"}, Flag: "--log-level"},
		{Args: []string{"stray-argument"}, Flag: "stray-argument"},
	}
	for i := range cases {
		// A data dir of each run's own: what one run left cannot change how
		// another ends.
		cases[i].Args = append([]string{"--port", "0", "--data-dir", filepath.Join(t.TempDir(), "data")}, cases[i].Args...)
	}
	env := []string{"PATH=" + os.Getenv("PATH")} // no BERTH_SECRET
	for i, res := range testproc.CheckBadFlags(t, masterBin, 1, env, cases) {
		if strings.Contains(res.Stderr, "master serving") {
			t.Errorf("%v: the master started serving before refusing", cases[i].Args)
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
