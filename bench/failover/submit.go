package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// Setups of the submit scenario.
const (
	setupRaft         = "raft-3"              // the Go client, all masters listed: it finds the leader once
	setupRaftFollower = "raft-3 via follower" // plain HTTP to a follower, every request redirected
	setupBolt         = "bolt-1"              // one master, state in bbolt
	setupBoltPlain    = "bolt-1 without TLS"  // the same with the secret alone: what TLS costs
)

// SubmitResult is one batch of registrations at one concurrency.
type SubmitResult struct {
	Setup       string  `json:"setup"`
	Concurrency int     `json:"concurrency"`
	Count       int     `json:"count"`  // registrations timed (each client's first is a warm-up, not timed)
	Errors      int     `json:"errors"` // registrations that failed
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"perSecond"` // acknowledged (committed) registrations per second
	Latency     Summary `json:"latency"`
	Redirects   int     `json:"redirects,omitempty"`
	// The apps are then killed (DELETE, also a committed write) at the same
	// concurrency, which keeps the state small between batches.
	KillPerSecond float64 `json:"killPerSecond"`
	KillLatency   Summary `json:"killLatency"`
	KillErrors    int     `json:"killErrors"`
	FirstError    string  `json:"firstError,omitempty"`
}

func (r SubmitResult) line() string {
	s := fmt.Sprintf("%-20s c=%-3d %5d registrations in %6.2f s: %7.1f/s, p50 %6.1f ms, p99 %6.1f ms; kills %7.1f/s",
		r.Setup, r.Concurrency, r.Count, r.Seconds, r.PerSecond, r.Latency.P50, r.Latency.P99, r.KillPerSecond)
	if r.Errors+r.KillErrors > 0 {
		s += fmt.Sprintf("; ERRORS %d+%d: %s", r.Errors, r.KillErrors, r.FirstError)
	}
	return s
}

// submitApp is what every registration asks for: one core and more memory
// than any worker has, so it is never placed; nothing else is started.
func submitApp(name string) wire.AppDescription {
	return wire.AppDescription{Name: name, Command: []string{"true"}, MaxCores: 1, MemoryPerExecutorMB: 1 << 20}
}

// register sends one registration the way a setup does; it returns the id
// and the redirects followed.
type register func(ctx context.Context, desc wire.AppDescription) (string, int, error)

// clientRegister registers through the Go client, which follows a redirect
// once and then stays with the leader.
func clientRegister(c *client.Client) register {
	return func(ctx context.Context, desc wire.AppDescription) (string, int, error) {
		id, err := c.RegisterApp(ctx, desc)
		return id, 0, err
	}
}

// followerRegister sends every registration to a follower as a plain HTTP
// client would and follows its 307 to the leader (what curl -L does).
func followerRegister(follower, secret string, pki *testcluster.PKI) register {
	hc := pki.TLSClient(secret, 30*time.Second) // never follows a redirect itself
	return func(ctx context.Context, desc wire.AppDescription) (string, int, error) {
		route := wire.MasterAPI.RegisterApp
		url := follower + route.Path()
		// The key the Go client sends; the same on every hop.
		header := http.Header{wire.IdempotencyKeyHeader: {client.NewIdempotencyKey()}}
		for redirects := 0; redirects < 5; redirects++ {
			resp, err := hc.OpenWith(ctx, route.Method, url, desc, header)
			var redirect *httpx.StatusError
			switch {
			case err == nil:
				var sub wire.Submitted
				err = json.NewDecoder(resp.Body).Decode(&sub)
				resp.Body.Close()
				return sub.ID, redirects, err
			case errors.As(err, &redirect) && redirect.Status == http.StatusTemporaryRedirect:
				if url = redirect.Location; url == "" {
					return "", redirects, fmt.Errorf("307 without Location: %s", redirect.Message)
				}
			default:
				return "", redirects, err
			}
		}
		return "", 5, fmt.Errorf("more than 5 redirects")
	}
}

// submitBatch registers count apps from conc concurrent clients (after one
// untimed warm-up registration each), then kills them all.
func submitBatch(ctx context.Context, setup string, conc, count int, newRegister func() register, killer *client.Client) SubmitResult {
	res := SubmitResult{Setup: setup, Concurrency: conc}
	var (
		mu        sync.Mutex
		lat       []time.Duration
		ids       []string
		errs      int
		firstErr  string
		redirects int
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs++
		if firstErr == "" {
			firstErr = err.Error()
		}
	}
	regs := make([]register, conc)
	for i := range regs {
		regs[i] = newRegister()
	}
	var warm sync.WaitGroup
	for i, reg := range regs {
		warm.Add(1)
		go func() {
			defer warm.Done()
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			id, _, err := reg(rctx, submitApp(fmt.Sprintf("warmup-%d", i)))
			if err != nil {
				fail(fmt.Errorf("warm-up: %w", err))
				return
			}
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		}()
	}
	warm.Wait()

	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, reg := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1))
				if i > count {
					return
				}
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				t := time.Now()
				id, red, err := reg(rctx, submitApp(fmt.Sprintf("submit-%d", i)))
				d := time.Since(t)
				cancel()
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				lat, ids, redirects = append(lat, d), append(ids, id), redirects+red
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	res.Count, res.Errors, res.Redirects = len(lat), errs, redirects
	res.Seconds = float64(wall.Milliseconds()) / 1000
	res.PerSecond, res.Latency = rate(len(lat), wall), benchstat.Summarize(lat)

	// Kill them all at the same concurrency.
	var klat []time.Duration
	kerrs := 0
	var knext atomic.Int64
	kstart := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(knext.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				t := time.Now()
				_, err := killer.KillApp(rctx, ids[i])
				d := time.Since(t)
				cancel()
				mu.Lock()
				if err != nil {
					kerrs++
					if firstErr == "" {
						firstErr = "kill: " + err.Error()
					}
				} else {
					klat = append(klat, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.KillPerSecond, res.KillLatency, res.KillErrors = rate(len(klat), time.Since(kstart)), benchstat.Summarize(klat), kerrs
	res.FirstError = firstErr
	return res
}

// runSubmit measures registrations through a fresh 3-master Raft cluster
// (through the Go client, then through a follower), then through one bolt
// master, at each concurrency.
func runSubmit(ctx context.Context, cfg *config, ps *procs, progress func(string)) ([]SubmitResult, []ClusterInfo, []string, error) {
	var (
		out   []SubmitResult
		infos []ClusterInfo
		notes []string
	)
	batches := func(cl *cluster, setup string, newRegister func() register) error {
		killer, err := client.New(cl.urls(), cfg.secret, cl.pki.ClientOption())
		if err != nil {
			return err
		}
		for _, conc := range cfg.submitConcurrency {
			if err := ctx.Err(); err != nil {
				return err
			}
			r := submitBatch(ctx, setup, conc, cfg.submitCount, newRegister, killer)
			out = append(out, r)
			progress(r.line())
			if r.Count == 0 {
				return fmt.Errorf("%s at concurrency %d: no registration succeeded: %s", setup, conc, r.FirstError)
			}
		}
		return nil
	}

	raft, err := newCluster("submit-raft", cfg, ps, cfg.dir)
	if err != nil {
		return out, infos, notes, err
	}
	err = raft.startRaftMasters(ctx, cfg.masters)
	if err == nil {
		err = raft.startWorkers(ctx, cfg.submitWorkers)
	}
	var leader *masterNode
	if err == nil {
		leader, _, err = raft.steady(ctx, 60*time.Second, false)
	}
	if err == nil {
		infos = append(infos, raft.info())
		err = batches(raft, setupRaft, func() register {
			c, err := client.New(raft.urls(), cfg.secret, raft.pki.ClientOption())
			if err != nil {
				panic(err) // the URLs were checked when the killer was made
			}
			return clientRegister(c)
		})
	}
	if err == nil && cfg.submitViaFollower {
		var follower *masterNode
		for _, m := range raft.masters {
			if m != leader {
				follower = m
				break
			}
		}
		if follower != nil {
			err = batches(raft, setupRaftFollower, func() register { return followerRegister(follower.url, cfg.secret, raft.pki) })
		}
	}
	notes = append(notes, raft.stop()...)
	if err != nil {
		return out, infos, notes, err
	}

	if !cfg.submitBolt {
		return out, infos, notes, nil
	}
	// One bolt master with TLS, then one without (Raft runs only over TLS,
	// so this is where TLS's cost shows on its own).
	for _, plain := range []bool{false, true} {
		name, setup := "submit-bolt", setupBolt
		if plain {
			name, setup = "submit-bolt-plain", setupBoltPlain
		}
		bolt, err := newCluster(name, cfg, ps, cfg.dir)
		if err != nil {
			return out, infos, notes, err
		}
		bolt.plain = plain
		err = bolt.startBoltMaster(ctx)
		if err == nil {
			err = bolt.startWorkers(ctx, cfg.submitWorkers)
		}
		if err == nil {
			infos = append(infos, bolt.info())
			err = batches(bolt, setup, func() register {
				c, err := client.New(bolt.urls(), cfg.secret, bolt.pki.ClientOption())
				if err != nil {
					panic(err)
				}
				return clientRegister(c)
			})
		}
		notes = append(notes, bolt.stop()...)
		if err != nil {
			return out, infos, notes, err
		}
	}
	return out, infos, notes, nil
}
