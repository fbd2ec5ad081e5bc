package worker

import (
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// A worker on 127.0.0.7 checks its services there: a service bound to the
// worker's address was killed as unhealthy three times ("dial tcp
// 127.0.0.1:23000: connection refused"). A check may name another address.
func TestChecksDialTheWorkersAddress(t *testing.T) {
	fm, w := startParallel(t, func(c *Config) { c.Host, c.PortRange = "127.0.0.7", wire.PortRange{First: 19200, Last: 19299} })
	check := func(address string) []wire.Check {
		return []wire.Check{{Name: "web", Type: wire.CheckHTTP, Port: "http", Path: "/health", Address: address,
			Interval: dur(200 * time.Millisecond), Timeout: dur(100 * time.Millisecond), Failures: num(2)}}
	}
	launch := launchOf("app-on-host", 0, helperCmd(t, "serve-host"), nil)
	launch.Ports, launch.Checks = map[string]int{"http": freePortIn(t, wire.PortRange{First: 19200, Last: 19249})}, check("")
	w.mustCall(200, "POST", "/v1/executors", launch)
	testproc.Eventually(t, 10*time.Second, "the service on the worker's address healthy", func() bool {
		for _, r := range fm.execReports("app-on-host", 0) {
			if r.Health == wire.HealthHealthy {
				return true
			}
		}
		return false
	})
	// A tcp check of the same service dials the worker's address too.
	tcp := launchOf("app-on-host-tcp", 0, helperCmd(t, "serve-host"), nil)
	tcp.Ports, tcp.Checks = map[string]int{"http": freePortIn(t, wire.PortRange{First: 19250, Last: 19274})}, check("")
	tcp.Checks[0].Type, tcp.Checks[0].Path = wire.CheckTCP, ""
	w.mustCall(200, "POST", "/v1/executors", tcp)
	testproc.Eventually(t, 10*time.Second, "the service on the worker's address healthy by its tcp check", func() bool {
		for _, r := range fm.execReports("app-on-host-tcp", 0) {
			if r.Health == wire.HealthHealthy {
				return true
			}
		}
		return false
	})
	// The same service checked on 127.0.0.1, where it does not listen:
	// unhealthy, the address named in the reason.
	launch = launchOf("app-elsewhere", 0, helperCmd(t, "serve-host"), nil)
	launch.Ports, launch.Checks = map[string]int{"http": freePortIn(t, wire.PortRange{First: 19275, Last: 19299})}, check("127.0.0.1")
	w.mustCall(200, "POST", "/v1/executors", launch)
	reps := fm.waitFinal(t, "app-elsewhere", 0)
	if last := reps[len(reps)-1]; last.Health != wire.HealthUnhealthy {
		t.Errorf("a check dialing 127.0.0.1 for a service on 127.0.0.7: %s %s (%s), want unhealthy", last.State, last.Health, last.Message)
	}
}
