// Package e2e runs berth's real binaries as processes on 127.0.0.x, kills
// them with real signals and checks what a user would see through the API.
//
// The binaries are built once per test run (without the race detector; the
// tests themselves run under it). Every process a test starts is killed by
// pid when the test ends, whatever happened; if the test failed, the ends
// of their logs are in its log.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/berth-cluster/berth/testkit/testcluster"
)

// bin holds the paths of the built master, worker and berth; piBin that of
// the example job, examples/pi; healthBin that of testkit/healthsrv, a
// checked service.
var (
	bin       testcluster.Binaries
	piBin     string
	healthBin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "berth-e2e-bin-")
	if err == nil {
		bin, err = testcluster.Build("..", dir)
	}
	piBin, healthBin = filepath.Join(dir, "pi"), filepath.Join(dir, "healthsrv")
	for out, pkg := range map[string]string{piBin: "../examples/pi", healthBin: "../testkit/healthsrv"} {
		if err == nil {
			build := exec.Command("go", "build", "-o", out, pkg)
			build.Stdout, build.Stderr = os.Stderr, os.Stderr
			err = build.Run()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "building binaries:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The clusters are TLS (Raft runs only over it): raw calls trust the
	// test CA and prove themselves with the secret, as their requests say.
	tr, err := bin.PKI.Transport()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test CA:", err)
		os.Exit(1)
	}
	httpClient.Transport = tr
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// secret is the cluster secret every test cluster uses.
const secret = "e2e-secret"
