package scheduler

import (
	"maps"

	"github.com/berth-cluster/berth/wire"
)

// Ports (docs/HEALTH.md): a process that asks for ports by label gets one
// of its worker's --port-range for each, chosen with its placement and
// written with it, so that two processes never hold one port on a worker
// and a new leader knows which are taken. The worker only checks them and
// hands them to the process.

// PortPool is a worker's ports: its range, those taken, and where the next
// search starts (round the range, so that a port just freed is the last
// to be given again: a process's clients may still be talking to it). The
// master keeps one per worker; a round takes ports from a Clone.
type PortPool struct {
	r    wire.PortRange
	used map[int]bool
	next int
	// busy: ports of the range a process of the worker's host holds that
	// the worker did not give it (its heartbeat's BusyPorts): given to no
	// process while the worker says so.
	busy map[int]bool
}

// NewPortPool is the pool of a range (nil: wire.DefaultPortRange).
func NewPortPool(r *wire.PortRange) *PortPool {
	pr := wire.DefaultPortRange
	if r != nil {
		pr = *r
	}
	return &PortPool{r: pr, next: pr.First} // used made on first use: most workers never give a port
}

// Range is the ports the pool hands out.
func (p *PortPool) Range() wire.PortRange { return p.r }

// Free counts the ports neither taken nor busy.
func (p *PortPool) Free() int {
	n := p.r.Size() - len(p.used)
	for port := range p.busy {
		if !p.used[port] {
			n--
		}
	}
	return n
}

// Clone is a copy that takes ports without changing p.
func (p *PortPool) Clone() *PortPool {
	c := *p
	c.used = maps.Clone(p.used)
	return &c
}

// Next is where the next search starts; SetNext moves it (a round's
// Plan.PortCursors).
func (p *PortPool) Next() int        { return p.next }
func (p *PortPool) SetNext(port int) { p.next = port }

// SetBusy records the ports of the range the worker says others hold.
func (p *PortPool) SetBusy(ports []int) {
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

// Take gives each label a free port, or nothing (false) if too few are.
func (p *PortPool) Take(labels []string) (map[string]int, bool) {
	if len(labels) == 0 {
		return nil, true
	}
	if p.Free() < len(labels) {
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

func (p *PortPool) advance() {
	if p.next++; p.next > p.r.Last {
		p.next = p.r.First
	}
}

// Hold marks ports taken (a placement, a recovered one, an adopted
// process): those outside the range are still held, so that none is given
// twice.
func (p *PortPool) Hold(ports map[string]int) {
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

// Release gives ports back.
func (p *PortPool) Release(ports map[string]int) {
	if p == nil {
		return
	}
	for _, port := range ports {
		delete(p.used, port)
	}
}
