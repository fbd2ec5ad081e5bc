package master

import (
	"fmt"
	"maps"
	"slices"

	"github.com/berth-cluster/berth/wire"
)

// Ports (docs/HEALTH.md): a process that asks for ports by label gets one
// of its worker's --port-range for each, chosen here with its placement
// and written with it, so that two processes never hold one port on a
// worker and a new leader knows which are taken. The worker only checks
// them and hands them to the process.

// portPool is a worker's ports: its range, those taken, and where the next
// search starts (round the range, so that a port just freed is the last
// to be given again: a process's clients may still be talking to it).
type portPool struct {
	r    wire.PortRange
	used map[int]bool
	next int
	// busy: ports of the range a process of the worker's host holds that
	// the worker did not give it (its heartbeat's BusyPorts): given to no
	// process while the worker says so.
	busy map[int]bool
}

func newPortPool(r *wire.PortRange) *portPool {
	pr := wire.DefaultPortRange
	if r != nil {
		pr = *r
	}
	return &portPool{r: pr, next: pr.First} // used made on first use: most workers never give a port
}

// free counts the ports neither taken nor busy.
func (p *portPool) free() int {
	n := p.r.Size() - len(p.used)
	for port := range p.busy {
		if !p.used[port] {
			n--
		}
	}
	return n
}

// setBusy records the ports of the range the worker says others hold.
func (p *portPool) setBusy(ports []int) {
	if len(ports) == 0 && len(p.busy) == 0 {
		return // the common heartbeat: nothing held, nothing was
	}
	clear(p.busy)
	for _, port := range ports {
		if p.r.Contains(port) {
			if p.busy == nil {
				p.busy = map[int]bool{}
			}
			p.busy[port] = true
		}
	}
}

// take gives each label a free port, or nothing (false) if too few are.
func (p *portPool) take(labels []string) (map[string]int, bool) {
	if len(labels) == 0 {
		return nil, true
	}
	if p.free() < len(labels) {
		return nil, false
	}
	if p.used == nil {
		p.used = map[int]bool{}
	}
	out := make(map[string]int, len(labels))
	for _, l := range labels {
		for p.used[p.next] || p.busy[p.next] {
			p.advance()
		}
		out[l] = p.next
		p.used[p.next] = true
		p.advance()
	}
	return out, true
}

func (p *portPool) advance() {
	if p.next++; p.next > p.r.Last {
		p.next = p.r.First
	}
}

// hold marks ports taken (a recovered placement, an adopted process):
// those outside the range are still held, so that none is given twice.
func (p *portPool) hold(ports map[string]int) {
	if p == nil {
		return
	}
	if p.used == nil && len(ports) > 0 {
		p.used = map[int]bool{}
	}
	for _, port := range ports {
		p.used[port] = true
	}
}

// release gives ports back.
func (p *portPool) release(ports map[string]int) {
	if p == nil {
		return
	}
	for _, port := range ports {
		delete(p.used, port)
	}
}

// portsReason says why an app asking for labels cannot be placed for want
// of ports on any live worker, or "" when one has enough.
func (c *core) portsReason(what string, labels []string) string {
	if len(labels) == 0 {
		return ""
	}
	most := 0
	for _, w := range c.aliveWorkers() {
		most = max(most, w.ports.free())
		if most >= len(labels) {
			return ""
		}
	}
	return fmt.Sprintf("waiting: no worker has %d free ports in its --port-range for %s (most free: %d)", len(labels), what, most)
}

// sortedPorts lists ports' labels in order, for logs.
func sortedPorts(ports map[string]int) []string { return slices.Sorted(maps.Keys(ports)) }
