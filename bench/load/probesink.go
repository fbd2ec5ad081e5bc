package load

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// A fleet that serves nothing (NoListen: 100,000 workers, more than the
// file descriptors allow a listener each) must still look alive to the
// master's probe of a worker whose heartbeat connection closed
// (master/worker_probe.go): the probe dials the worker's address, and a
// refusal there, twice, removes the worker at once, as it should for a
// worker that died. So while the fleet runs, an nftables table of its own
// sends every connection to the fleet's slot addresses (127.0.0.2-251,
// its ports) to one listener that answers GET /healthz, as a live worker
// does. Without nft (or root) the fleet runs as before and says that the
// probes will remove workers whose connection closes. The table is named
// after the tool's pid and removed when the fleet closes (a SIGKILLed tool
// leaves it: nft delete table ip berthbench_PID).

// probeSink is that listener and its table.
type probeSink struct {
	srv   *http.Server
	table string // "" when none was made
}

// startProbeSink serves the probes of the slots first..first+n-1.
func startProbeSink(first, n int) (*probeSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &probeSink{srv: &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})}}
	go func() { _ = s.srv.Serve(ln) }()
	table := fmt.Sprintf("berthbench_%d", os.Getpid())
	lo, hi := slotPort(first), slotPort(first+n-1)
	rules := fmt.Sprintf(`table ip %s {
	chain out {
		type nat hook output priority -100; policy accept;
		ip daddr 127.0.0.2-127.0.0.251 tcp dport %d-%d dnat to %s
	}
}
`, table, lo, hi, ln.Addr())
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = bytes.NewBufferString(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		s.srv.Close()
		return nil, fmt.Errorf("nft: %w: %s", err, bytes.TrimSpace(out))
	}
	s.table = table
	return s, nil
}

// close removes the table, then the listener.
func (s *probeSink) close() {
	if s == nil {
		return
	}
	if s.table != "" {
		_ = exec.Command("nft", "delete", "table", "ip", s.table).Run()
	}
	s.srv.Close()
}
