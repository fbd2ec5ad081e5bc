package load

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A fleet that serves nothing answers the master's probes of its workers
// while it runs (without, the probes removed 281 of 100,000 simulated
// workers in two minutes), and stops answering once closed.
func TestProbeSinkAnswersForTheFleet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the probe sink needs root for nftables: the tests run as root (CI does)")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatal("nft not found: scripts/test-deps.sh installs nftables")
	}
	const first = 250 * 377 // slots of port 10377, which no other test uses
	s, err := startProbeSink(first, 500)
	if err != nil {
		t.Fatal(err)
	}
	get := func(slot int) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+slotAddr(slot)+"/healthz", nil)
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	for _, slot := range []int{first, first + 251, first + 499} {
		if body, err := get(slot); err != nil || body != "ok" {
			t.Errorf("slot %d (%s) while the sink runs: %q %v, want ok", slot, slotAddr(slot), body, err)
		}
	}
	s.close()
	if _, err := get(first + 3); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("slot %d after the sink closed: %v, want connection refused (the table removed)", first+3, err)
	}
}
