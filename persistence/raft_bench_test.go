package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/berth-cluster/berth/security"
)

// BenchmarkLeaderLoss times a Raft failover with and without mutual TLS,
// side by side: three masters, the leader shut down without handing over
// (as a kill -9 leaves its peers), until another leader has committed a
// write. Only that is timed; building and closing the clusters is not. The
// production master refuses Raft without TLS, so the plain TCP side exists
// only here, to show what TLS costs.
//
//	go test -run XXX -bench LeaderLoss -benchtime 10x ./persistence
func BenchmarkLeaderLoss(b *testing.B) {
	for _, mode := range []string{"tcp", "tls"} {
		b.Run(mode, func(b *testing.B) {
			var tune func(*RaftConfig)
			if mode == "tls" {
				dir := testPKI(b, security.RoleMaster, "m1", "m2", "m3")
				tune = func(cfg *RaftConfig) { cfg.TLS = loadTLS(b, dir, cfg.ID) }
			}
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := newRaftCluster(b, 3, tune)
				old := c.leader()
				if err := old.Write(context.Background(), []Command{BumpEpoch()}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				old.Close()
				for id, n := range c.nodes {
					if n == old {
						delete(c.nodes, id)
					}
				}
				committed(b, c)
				took := time.Since(start)
				b.StopTimer()
				total += took
				for id, n := range c.nodes {
					n.Close()
					delete(c.nodes, id)
				}
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/failover")
		})
	}
}

// committed waits (up to 30 s, polling every millisecond) for a node of c
// to lead and commit a write.
func committed(b *testing.B, c *raftCluster) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range c.nodes {
			if !n.IsLeader() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := n.Write(ctx, []Command{BumpEpoch()})
			cancel()
			if err == nil {
				return
			}
		}
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	b.Fatal("no leader committed within 30 s")
}
