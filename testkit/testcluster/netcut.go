package testcluster

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// NetCut cuts masters' Raft traffic with nftables while their APIs stay
// reachable: an asymmetric partition on one machine. Loopback connections
// all leave from 127.0.0.1, so a master's outgoing Raft connections are
// told apart by their socket's owner: each master must run as its own user
// (Options.UIDs). Its Raft listener is matched by address.
//
// A socket's owner is known only while a process holds it: a connection
// the process closed with data still unsent (a request that timed out)
// lives on in the kernel, owned by nobody, and its retransmissions would
// slip through a rule on the owner. So the first packet a cut drops by its
// owner also marks its connection (conntrack), and every later packet of
// a marked connection is dropped too. Each cut has a mark of its own: a
// connection marked by an earlier cut, healed since, is not cut again.
type NetCut struct {
	table string
	cuts  int // cuts made so far: the next one's mark
}

// mark is the conntrack mark of a new cut.
func (n *NetCut) mark() string {
	n.cuts++
	return fmt.Sprintf("0x%08x", 0x62650000+n.cuts)
}

// dropOwned returns the rules that drop uid's packets to ports, and every
// later packet of a connection so dropped (see NetCut).
func (n *NetCut) dropOwned(uid uint32, ports []string) [][]string {
	set, mark := "{ "+strings.Join(ports, ", ")+" }", n.mark()
	return [][]string{
		{"meta", "skuid", fmt.Sprint(uid), "tcp", "dport", set, "ct", "mark", "set", mark, "drop"},
		{"ct", "mark", mark, "tcp", "dport", set, "drop"},
	}
}

// ErrNoNetCut says why a cut cannot be made here.
var ErrNoNetCut = errors.New("an asymmetric partition needs root and nft (Debian's nftables)")

// NewNetCut creates this run's nftables table; the host deletes it at
// cleanup.
func NewNetCut(h Host) (*NetCut, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: not root", ErrNoNetCut)
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoNetCut, err)
	}
	dropStaleCuts()
	n := &NetCut{table: fmt.Sprintf("%s%d", cutTablePrefix, os.Getpid())}
	if err := nft("add", "table", "inet", n.table); err != nil {
		return nil, err
	}
	h.Cleanup(func() { _ = nft("delete", "table", "inet", n.table) })
	if err := nft("add", "chain", "inet", n.table, "out", "{ type filter hook output priority 0 ; policy accept ; }"); err != nil {
		return nil, err
	}
	// Connection tracking, on from now, before the cluster connects: a
	// connection made while nothing used it would be untracked, and the
	// mark of a cut would not stay on it (see NetCut). A rule that reads a
	// connection's state turns it on for this network namespace; it lives
	// in a chain of its own, which Heal leaves alone.
	if err := nft("add", "chain", "inet", n.table, "track", "{ type filter hook output priority 0 ; policy accept ; }"); err != nil {
		return nil, err
	}
	if err := nft("add", "rule", "inet", n.table, "track", "ct", "state", "invalid", "counter"); err != nil {
		return nil, err
	}
	return n, nil
}

// CutRaft drops every Raft packet to and from m: its connections to the
// other masters' Raft ports, and everything to or from its own.
func (n *NetCut) CutRaft(m *Master, all []*Master) error {
	if m.UID == 0 {
		return fmt.Errorf("master %s runs as root: its sockets cannot be told apart", m.ID)
	}
	host, port, err := net.SplitHostPort(m.RaftAddr)
	if err != nil {
		return err
	}
	var others []string
	for _, o := range all {
		if o != m {
			_, p, err := net.SplitHostPort(o.RaftAddr)
			if err != nil {
				return err
			}
			others = append(others, p)
		}
	}
	rules := append(n.dropOwned(m.UID, others),
		[]string{"ip", "daddr", host, "tcp", "dport", port, "drop"},
		[]string{"ip", "saddr", host, "tcp", "sport", port, "drop"},
	)
	for _, r := range rules {
		if err := nft(append([]string{"add", "rule", "inet", n.table, "out"}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

// CutWorker cuts w off from the masters, while everything else reaches
// both: w's connections to the masters' APIs (told apart by their
// owner: w must run as its own user, WorkerSpec.UID) and every
// connection to w's API (only masters make them) are dropped. Its
// processes, which run as w's user too, cannot reach the masters either.
func (n *NetCut) CutWorker(w *Worker, masters []*Master) error {
	if w.UID == 0 {
		return fmt.Errorf("worker %s runs as root: its sockets cannot be told apart", w.ID)
	}
	u, err := url.Parse(w.URL)
	if err != nil {
		return err
	}
	var apis []string
	for _, m := range masters {
		mu, err := url.Parse(m.URL)
		if err != nil {
			return err
		}
		apis = append(apis, mu.Port())
	}
	rules := append(n.dropOwned(w.UID, apis), []string{"tcp", "dport", u.Port(), "drop"})
	for _, r := range rules {
		if err := nft(append([]string{"add", "rule", "inet", n.table, "out"}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

// Heal removes every cut.
func (n *NetCut) Heal() error { return nft("flush", "chain", "inet", n.table, "out") }

// cutTablePrefix starts every run's table name; the run's pid ends it.
const cutTablePrefix = "berth_cut_"

// dropStaleCuts deletes the tables of runs that are gone: a run killed
// before its cleanup (a -timeout panic, SIGKILL) leaves its table behind,
// and a cut left in it would drop the Raft traffic of the next run's
// masters, which run as the same users.
func dropStaleCuts() {
	out, err := exec.Command("nft", "list", "tables", "inet").Output()
	if err != nil {
		return
	}
	for _, table := range staleCutTables(string(out), processExists) {
		_ = nft("delete", "table", "inet", table)
	}
}

// processExists: a signal 0 reaches pid, or is refused (EPERM: it exists,
// as another user's). A run in another pid namespace sharing this network
// namespace would look gone: runs are not meant to share one.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// staleCutTables names the tables in nft's listing ("table inet NAME" a
// line) that a run whose pid is no longer alive made.
func staleCutTables(listing string, alive func(pid int) bool) []string {
	var stale []string
	for _, line := range strings.Split(listing, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "table inet "+cutTablePrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		stale = append(stale, cutTablePrefix+name)
	}
	return stale
}

func nft(args ...string) error {
	out, err := exec.Command("nft", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
