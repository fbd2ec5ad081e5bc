package worker

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// The master picks a process's ports from this worker's --port-range, but
// any process of the host may bind one of them first (a tenant's process
// bound 31000-31050, and the master went on handing them to another
// tenant's executors, which failed "Address already in use"). So a launch
// first tries each of its ports; one held by a process that this worker
// did not give it to refuses the launch (409 ports_busy: neither the
// app's failure nor the worker's, and the master places it again
// elsewhere), and the heartbeat tells the master which ports of the range
// are held so (Heartbeat.BusyPorts), which it then gives no process. A
// port taken between the try and the process's own bind is the residue:
// the process fails as it would anywhere.

// busyProbeEvery bounds how often the range is probed for the heartbeats
// (each port a bind and a close: about 5 ms per 1000 ports).
const busyProbeEvery = 10 * time.Second

// busyPorts is the last probe of the range.
type busyPorts struct {
	mu    sync.Mutex
	at    time.Time
	ports []int
}

// portFree reports whether port can be bound on every address of the
// host, for TCP and for UDP: a listener or a socket on any address of the
// port holds it against this (a process given a port may serve either).
func portFree(port int) bool {
	addr := ":" + strconv.Itoa(port)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}

// heldPorts lists the ports of p that some other process holds.
func heldPorts(p map[string]int) []int {
	var held []int
	for _, port := range p {
		if !portFree(port) {
			held = append(held, port)
		}
	}
	slices.Sort(held)
	return held
}

// givenPorts is every port this worker gave a live process: those are
// held by their own processes, not by others.
func (w *Worker) givenPorts() map[int]bool {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	given := map[int]bool{}
	for p := range w.procs.liveLocked() {
		for _, port := range p.ports {
			given[port] = true
		}
	}
	return given
}

// busy is the ports of the range held by processes this worker did not
// give them to, probed at most every busyProbeEvery (now: at once),
// at most wire.MaxBusyPorts of them.
func (w *Worker) busy(now bool) []int {
	b := &w.busyPorts
	b.mu.Lock()
	defer b.mu.Unlock()
	if !now && time.Since(b.at) < busyProbeEvery {
		return b.ports
	}
	given := w.givenPorts()
	b.ports = b.ports[:0]
	for port := w.cfg.PortRange.First; port <= w.cfg.PortRange.Last && len(b.ports) < wire.MaxBusyPorts; port++ {
		if !given[port] && !portFree(port) {
			b.ports = append(b.ports, port)
		}
	}
	b.at = time.Now()
	if len(b.ports) > 0 {
		w.log.Warn("ports of --port-range held by processes the worker did not give them to: the master gives them no process", "ports", describePorts(b.ports))
	}
	return slices.Clone(b.ports)
}

// refusePortsHeld refuses a launch whose ports another process holds, and
// tells the master at once which ports of the range are held.
func (w *Worker) refusePortsHeld(held []int) error {
	w.busy(true)
	select {
	case w.beatNow <- struct{}{}:
	default:
	}
	return portsBusyError(held)
}

func describePorts(ports []int) string {
	if len(ports) > 8 {
		return fmt.Sprintf("%v and %d more", ports[:8], len(ports)-8)
	}
	return fmt.Sprint(ports)
}

// portsBusyError is the refusal of a launch whose ports are held.
func portsBusyError(held []int) error {
	return httpx.Coded(http.StatusConflict, wire.CodePortsBusy, "not started: ports %s are held by another process of this host", describePorts(held))
}
