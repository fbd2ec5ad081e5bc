package worker

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// A port of the range that another process of the host holds (a tenant's
// process bound it itself) refuses the launch given it, 409 ports_busy,
// nothing started; the heartbeat then lists it among the busy ports, and
// stops listing it once it is free. Ports the worker gave its own
// processes are never listed.
func TestALaunchOnAHeldPortIsRefusedAndTheHeartbeatSaysSo(t *testing.T) {
	squatRange := wire.PortRange{First: 19100, Last: 19199} // below the ephemeral ports, which outgoing connections hold
	fm, w := startParallel(t, func(c *Config) { c.PortRange = squatRange })
	port := freePortIn(t, squatRange)
	squatter, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	launch := launchOf("app-squatted", 0, helperCmd(t, "sleep"), nil)
	launch.Ports = map[string]int{"http": port}
	code, body := w.call("POST", "/v1/executors", launch)
	if code != 409 || !strings.Contains(body, string(wire.CodePortsBusy)) || !strings.Contains(body, strconv.Itoa(port)) {
		t.Fatalf("a launch on a held port: %d %s, want 409 ports_busy naming it", code, body)
	}
	for _, e := range w.state().Executors {
		if e.AppID == "app-squatted" {
			t.Errorf("the refused launch left a process: %+v", e)
		}
	}
	testproc.Eventually(t, 5*time.Second, "a heartbeat listing the held port", func() bool {
		var hb wire.Heartbeat
		fm.with(func() { hb = fm.lastBeat })
		return slices.Contains(hb.BusyPorts, port)
	})

	// Freed, and a process of the worker's own on another port: neither
	// is listed.
	squatter.Close()
	own := freePortIn(t, wire.PortRange{First: port + 1, Last: squatRange.Last})
	launch = launchOf("app-own", 0, helperCmd(t, "serve"), nil)
	launch.Ports = map[string]int{"http": own}
	w.mustCall(200, "POST", "/v1/executors", launch)
	w.runningPid("app-own", 0)
	w.busy(true) // as the next probe would find it
	testproc.Eventually(t, 10*time.Second, "a heartbeat listing no port", func() bool {
		var hb wire.Heartbeat
		fm.with(func() { hb = fm.lastBeat })
		return len(hb.BusyPorts) == 0
	})
}

// A port held for UDP was taken for free (the probe bound TCP only), and
// the process given it failed binding it: the app's failure, charged to
// the app. UDP is probed as TCP is.
func TestAPortHeldForUDPIsNotFree(t *testing.T) {
	t.Parallel()
	port := freePortIn(t, wire.PortRange{First: 19200, Last: 19299})
	if !portFree(port) {
		t.Fatalf("port %d: not free before anything holds it", port)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if portFree(port) {
		t.Errorf("port %d held for UDP: said free", port)
	}
}
