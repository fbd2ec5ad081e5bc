package master

import (
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// The heartbeat interval grows with the fleet so that the master's rate
// stays at most MaxHeartbeatsPerSecond, between a quarter of the timeout
// (Spark's) and a third (one lost heartbeat is still heard in time).
func TestHeartbeatIntervalScalesWithTheFleet(t *testing.T) {
	c := Config{WorkerTimeout: 60 * time.Second, MaxHeartbeatsPerSecond: 500}
	for _, tc := range []struct {
		workers int
		want    time.Duration
	}{
		{0, 15 * time.Second},
		{1000, 15 * time.Second},   // 67 a second: Spark's interval
		{7500, 15 * time.Second},   // 500 a second exactly
		{9000, 18 * time.Second},   // 9,000 / 500
		{100000, 20 * time.Second}, // capped: 5,000 a second
	} {
		if got := c.heartbeatInterval(tc.workers); got != tc.want {
			t.Errorf("%d workers: %s, want %s", tc.workers, got, tc.want)
		}
	}
	h := newLeader(t, func(c *Config) { c.MaxHeartbeatsPerSecond = 1 })
	h.addWorker("w1", 1, 1024)
	h.addWorker("w2", 1, 1024)
	reply, err := h.c.heartbeat("w1", wire.Heartbeat{})
	if err != nil || time.Duration(reply.HeartbeatIntervalMs)*time.Millisecond != h.c.cfg.heartbeatInterval(2) {
		t.Errorf("heartbeat reply %+v, %v: want the interval for 2 workers", reply, err)
	}
}
