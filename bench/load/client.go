package load

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// masterClient speaks to the master for every simulated worker and app. All
// requests but event streams share one transport whose idle pool is as large
// as the number of requests allowed in flight, so that thousands of
// heartbeats a second reuse a few hundred connections instead of opening
// (and leaving in TIME_WAIT) one each.
//
// With several masters (a Raft cluster: newClusterClient) it sends to the
// one it takes for the leader: a 307 names the leader, tried at once (the
// follower did nothing), and a master that fails a request (refused, timed
// out, no leader) hands over to the next one in the list.
type masterClient struct {
	bases  []string
	cur    atomic.Int64  // index in bases of the master taken for the leader
	api    *httpx.Client // bounded by sem, with a timeout
	stream *httpx.Client // event streams: no timeout, own connections
	sem    chan struct{}
}

func newMasterClient(base, secret string, inFlight int, timeout time.Duration) *masterClient {
	return newClusterClient([]string{base}, secret, nil, inFlight, timeout)
}

// newClusterClient speaks to the masters at bases, over TLS with tlsConf
// when it is not nil.
func newClusterClient(bases []string, secret string, tlsConf *tls.Config, inFlight int, timeout time.Duration) *masterClient {
	inFlight = max(inFlight, 1)
	newTransport := func(idle int) *http.Transport {
		return &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:       tlsConf,
			MaxIdleConns:          idle,
			MaxIdleConnsPerHost:   idle,
			IdleConnTimeout:       90 * time.Second,
			DisableCompression:    true,
			ResponseHeaderTimeout: 0,
		}
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &masterClient{
		bases:  bases,
		api:    &httpx.Client{Secret: secret, HTTP: &http.Client{Transport: newTransport(inFlight), Timeout: timeout, CheckRedirect: noRedirect}},
		stream: &httpx.Client{Secret: secret, HTTP: &http.Client{Transport: newTransport(16), CheckRedirect: noRedirect}},
		sem:    make(chan struct{}, inFlight),
	}
}

// base is the master taken for the leader.
func (m *masterClient) base() string { return m.bases[m.cur.Load()] }

// request is one call of a route of wire.MasterAPI, built by on from the
// route's declaration.
type request struct {
	method, path string // the path with its parameters filled, and a query if any
	in           any    // nil: no body
}

// on is the request of route r with body in (a wire.None is sent as no
// body) and the route's path parameters: the compiler checks in against the
// route's request type.
func on[Req, Resp any](r wire.Route[Req, Resp], in Req, params ...string) request {
	var body any = in
	if _, none := body.(wire.None); none {
		body = nil
	}
	return request{method: r.Method, path: r.Path(params...), in: body}
}

// summaryQuery asks GET /v1/cluster for the worker summary alone, without
// the workers' list and the finished apps and drivers: what a fleet of
// thousands can be polled with.
const summaryQuery = "?" + wire.ClusterWorkersParam + "=false&" + wire.ClusterCompletedParam + "=false"

// summaryRequest is GET /v1/cluster with summaryQuery.
func summaryRequest() request {
	r := on(wire.MasterAPI.Cluster, wire.None{})
	r.path += summaryQuery
	return r
}

// doOnLeader sends one request to the master taken for the leader (see
// masterClient).
func (m *masterClient) doOnLeader(ctx context.Context, r request, out any) error {
	i := m.cur.Load()
	err := m.api.Do(ctx, r.method, m.bases[i]+r.path, r.in, out)
	if err == nil || len(m.bases) == 1 {
		return err
	}
	var se *httpx.StatusError
	errors.As(err, &se)
	switch {
	case se != nil && se.Status == http.StatusTemporaryRedirect:
		if j := slices.Index(m.bases, strings.TrimSuffix(se.Leader, "/")); j >= 0 {
			m.cur.CompareAndSwap(i, int64(j))
			return m.api.Do(ctx, r.method, m.bases[j]+r.path, r.in, out)
		}
	case se == nil || se.Status == http.StatusServiceUnavailable:
		m.cur.CompareAndSwap(i, (i+1)%int64(len(m.bases)))
	}
	return err
}

// closeIdle closes the connections not in use.
func (m *masterClient) closeIdle() {
	m.api.HTTP.CloseIdleConnections()
	m.stream.HTTP.CloseIdleConnections()
}

// timed sends one request once a slot is free. queued is the wait for the
// slot, rtt the request itself.
func (m *masterClient) timed(ctx context.Context, r request, out any) (queued, rtt time.Duration, err error) {
	t0 := time.Now()
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return time.Since(t0), 0, ctx.Err()
	}
	t1 := time.Now()
	err = m.doOnLeader(ctx, r, out)
	rtt = time.Since(t1)
	<-m.sem
	return t1.Sub(t0), rtt, err
}

func (m *masterClient) do(ctx context.Context, r request, out any) error {
	_, _, err := m.timed(ctx, r, out)
	return err
}

// unbounded sends a request outside the in-flight bound (status reads, which
// must not wait behind the load).
func (m *masterClient) unbounded(ctx context.Context, r request, out any) error {
	return m.doOnLeader(ctx, r, out)
}

// cluster reads GET /v1/cluster with its own deadline.
func (m *masterClient) cluster(ctx context.Context) (*wire.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var cs wire.ClusterStatus
	if err := m.unbounded(ctx, on(wire.MasterAPI.Cluster, wire.None{}), &cs); err != nil {
		return nil, err
	}
	return &cs, nil
}

// timedEvent is one line of an app's event stream and when it was read.
type timedEvent struct {
	At time.Time
	wire.AppEvent
}

// streamEvents reads GET /v1/apps/{id}/events until ctx ends or the stream
// does, calling fn for each event. The open stream is the app's lease.
func (m *masterClient) streamEvents(ctx context.Context, appID string, fn func(timedEvent)) error {
	r := on(wire.MasterAPI.AppEvents, wire.None{}, appID)
	resp, err := m.stream.Open(ctx, r.method, m.base()+r.path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		now := time.Now()
		var ev wire.AppEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return err
		}
		fn(timedEvent{At: now, AppEvent: ev})
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}
