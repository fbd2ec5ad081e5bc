package testcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// healthClient asks /healthz; a daemon that does not answer within its
// timeout is asked again at the next poll.
// A liveness probe sends no credential, so it need not verify the server
// (a TLS daemon's certificate is of the test's own CA).
var healthClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
}}

// health is the liveness probe of a master and of a worker: the two APIs
// declare it alike (wire.MasterAPI.Health, wire.WorkerAPI.Health), open to
// anyone.
var health = wire.WorkerAPI.Health

// WaitHealthy polls url/healthz every 20 ms until it answers 200, p exits,
// ctx ends or timeout passes.
func WaitHealthy(ctx context.Context, p *Proc, url string, timeout time.Duration) error {
	healthy := false
	poll.Within(ctx, timeout, 20*time.Millisecond, func() bool {
		if p.Exited() {
			return true
		}
		req, err := http.NewRequestWithContext(ctx, health.Method, url+health.Path(), nil)
		if err != nil {
			return false
		}
		if resp, err := healthClient.Do(req); err == nil {
			resp.Body.Close()
			healthy = resp.StatusCode == http.StatusOK
		}
		return healthy
	})
	switch {
	case healthy:
		return nil
	case p.Exited():
		return fmt.Errorf("%s exited at start: %v; its log %s ends:\n%s", p.Name, p.Err(), p.Log, p.LogTail(3000))
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%s: %s/healthz did not answer within %s; its log: %s", p.Name, url, timeout, p.Log)
}
