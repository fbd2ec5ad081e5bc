package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
)

var masterBin string

func TestMain(m *testing.M) { os.Exit(testproc.MainWithBinary(m, "master", &masterBin)) }

// A bad value is reported naming its flag, and the master exits non-zero
// before it serves or writes anything. The values are checked by
// master.Config (cmd/master only parses them): this is where each of its
// rules is tried.
func TestBadFlagsAreRefusedNamingTheFlag(t *testing.T) {
	t.Parallel()
	cases := []testproc.BadFlag{
		{Args: []string{"--port", "abc"}, Flag: "port"},
		{Args: []string{"--worker-timeout", "-1s"}, Flag: "--worker-timeout"},
		{Args: []string{"--exclude-duration", "-1m"}, Flag: "--exclude-duration"},
		{Args: []string{"--gang-reserve-after", "-1m"}, Flag: "--gang-reserve-after"},
		{Args: []string{"--version", "extra"}, Flag: `master: unexpected argument "extra"`},
		{Args: []string{"--version=maybe"}, Flag: "master: invalid boolean value"},
		{Args: []string{"--preemption-grace", "11m"}, Flag: "--preemption-grace"},
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
		{Args: []string{"--max-heartbeats-per-second", "-1"}, Flag: "--max-heartbeats-per-second"},
		{Args: []string{"--app-timeout", "-1s"}, Flag: "--app-timeout"},
		{Args: []string{"--advertise", "127.0.0.1:7077"}, Flag: "--advertise \"127.0.0.1:7077\": no scheme: write http://127.0.0.1:7077"},
		{Args: []string{"--advertise", "http://127.0.0.1:7077/api"}, Flag: "--advertise"},
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

// Raft runs only over mutual TLS: a master given Raft peers, a Raft
// address or --recovery-mode raft without the three TLS files refuses to
// start, on loopback too and with a secret too, naming the files to give,
// before anything of Raft is written.
func TestRaftWithoutTLSIsRefusedNamingTheTLSFlags(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	raft := []string{"--node-id", "m1", "--host", "127.0.0.1"}
	cases := []testproc.BadFlag{
		{Args: append([]string{"--peers", "m1=127.0.0.1:7177"}, raft...)},
		{Args: append([]string{"--peers", "m1=127.0.0.1:7177,m2=127.0.0.2:7177", "--secret-file", secretFile}, raft...)},
		{Args: append([]string{"--recovery-mode", "raft", "--raft-addr", "127.0.0.1:7177"}, raft...)},
		{Args: append([]string{"--raft-addr", "127.0.0.1:7177", "--join", "https://127.0.0.2:7077"}, raft...)},
		// One TLS file is not TLS.
		{Args: append([]string{"--peers", "m1=127.0.0.1:7177", "--tls-ca-file", secretFile}, raft...)},
	}
	dataDirs := make([]string, len(cases))
	for i := range cases {
		dataDirs[i] = filepath.Join(t.TempDir(), "data")
		cases[i].Args = append([]string{"--port", "0", "--data-dir", dataDirs[i]}, cases[i].Args...)
		cases[i].Flag = "--tls-ca-file"
	}
	env := []string{"PATH=" + os.Getenv("PATH")} // no BERTH_SECRET, no BERTH_TLS_*
	for i, res := range testproc.CheckBadFlags(t, masterBin, 1, env, cases) {
		for _, flag := range []string{"--tls-cert-file", "--tls-key-file"} {
			if !strings.Contains(res.Stderr, flag) {
				t.Errorf("%v: stderr %q does not name %s", cases[i].Args, res.Stderr, flag)
			}
		}
		if strings.Contains(res.Stderr, "master serving") {
			t.Errorf("%v: the master started serving before refusing", cases[i].Args)
		}
		if _, err := os.Stat(filepath.Join(dataDirs[i], "raft")); err == nil {
			t.Errorf("%v: the master wrote Raft's files before refusing", cases[i].Args)
		}
	}
}

// A master given the operator secret through --secret-file alone enforces
// it (401 without it, 200 with it), and the secret is neither in its argv
// nor in its environment, where other users (ps) or its children could
// read it.
func TestSecretFileIsEnforcedAndStaysOutOfArgvAndEnviron(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	random := make([]byte, 16)
	rand.Read(random)
	secret := "file-only-" + hex.EncodeToString(random)
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := testcluster.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	p, err := testcluster.Start(t, "master", masterBin, filepath.Join(dir, "master.log"),
		[]string{"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--recovery-mode", "none", "--secret-file", secretFile},
		testcluster.ProcOptions{CleanEnv: true, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := testcluster.WaitHealthy(t.Context(), p, url, 15*time.Second); err != nil {
		t.Fatal(err)
	}

	// get is the status of GET /v1/cluster with the bearer secret given.
	get := func(secret string) int {
		t.Helper()
		err := httpx.NewClient(secret, 10*time.Second).Do(t.Context(), http.MethodGet, url+"/v1/cluster", nil, nil)
		var se *httpx.StatusError
		switch {
		case err == nil:
			return http.StatusOK
		case errors.As(err, &se):
			return se.Status
		}
		t.Fatal(err)
		return 0
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/cluster without the secret: %d, want 401", code)
	}
	if code := get("not-" + secret); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/cluster with a wrong secret: %d, want 401", code)
	}
	if code := get(secret); code != http.StatusOK {
		t.Errorf("GET /v1/cluster with the secret: %d, want 200", code)
	}

	procFile := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.Pid(), name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// The file's path is in argv: what is read is the master's.
	if argv := procFile("cmdline"); !bytes.Contains(argv, []byte(secretFile)) || bytes.Contains(argv, []byte(secret)) {
		t.Errorf("argv %q: want the secret file's path and not the secret", bytes.ReplaceAll(argv, []byte{0}, []byte{' '}))
	}
	if environ := procFile("environ"); !bytes.Contains(environ, []byte("PATH=")) || bytes.Contains(environ, []byte(secret)) {
		t.Errorf("environ %q: want PATH and not the secret", bytes.ReplaceAll(environ, []byte{0}, []byte{' '}))
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
