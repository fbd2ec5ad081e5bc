package e2e

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// A worker on 127.0.0.7 dialled its services' checks at 127.0.0.1: a
// service bound to the worker's address was killed as unhealthy three
// times ("dial tcp 127.0.0.1:23000: connection refused"). The check dials
// the address the worker advertises, so a service bound there only is
// healthy and stays up.
func TestChecksDialTheWorkersAdvertisedAddress(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{})
	spec := workerSpec("w7", 1, "1g")
	spec.Host = "127.0.0.7"
	if _, err := cl.AddWorker(spec); err != nil {
		t.Fatal(err)
	}
	cl.waitWorkers(20*time.Second, "w7")
	const interval, failures = 300 * time.Millisecond, 2
	app := cl.registerApp(t, checkedService("on-its-host", 1, nil, interval, 200*time.Millisecond, failures, 0))
	e := cl.healthyExecutor(app, 30*time.Second)
	port := e.Ports["http"]
	// Bound to the worker's address only: a dial of 127.0.0.1 would fail.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
		c.Close()
		t.Fatalf("the service answers on 127.0.0.1:%d too: the test would not tell the addresses apart", port)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.7", strconv.Itoa(port)), time.Second); err != nil {
		t.Fatalf("the service on 127.0.0.7:%d: %v", port, err)
	} else {
		c.Close()
	}
	// Ten intervals on, the same executor runs, healthy: never killed.
	deadline := time.Now().Add(10 * interval)
	cl.appWhen(app, 30*time.Second, "ten check intervals passed with the same executor healthy", func(a wire.AppStatus) error {
		if len(a.Executors) != 1 || a.Executors[0].ID != e.ID || a.Executors[0].State != wire.ExecutorRunning || a.Executors[0].Health != wire.HealthHealthy {
			t.Fatalf("executors %+v: want executor %d alone, RUNNING and healthy", a.Executors, e.ID)
		}
		if time.Now().Before(deadline) {
			return fmt.Errorf("not ten intervals yet")
		}
		return nil
	})
}
