package worker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// BenchmarkChecks is the worker's CPU (this process: the worker and its
// fake master) while n executors run on it, each with an http check every
// second against its port, as a percentage of one core, over a 10 s
// window once every executor is healthy. One helper process answers on
// all the ports; the executors are sleep(1): the checks are what costs.
// checks=0 is the same worker and executors without checks.
//
//	go test -run '^$' -bench Checks -benchtime 1x ./worker
func BenchmarkChecks(b *testing.B) {
	for _, checked := range []bool{false, true} {
		b.Run(fmt.Sprintf("executors=1000/checks=%v", checked), func(b *testing.B) {
			const n = 1000
			r := wire.PortRange{First: 31000, Last: 31000 + n - 1}
			srv := exec.Command(os.Args[0], "serve-ports", fmt.Sprint(r.First), fmt.Sprint(r.Last))
			srv.Env = append(os.Environ(), helperEnv+"=1")
			out, _ := srv.StdoutPipe()
			if err := srv.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { srv.Process.Kill(); srv.Wait() }()
			if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "listening" {
				b.Fatalf("the helper could not listen on ports %d-%d", r.First, r.Last)
			}
			fm, w := startRegistered(b, func(c *Config) { c.PortRange, c.Cores, c.MemoryMB = r, n, 16*n })
			defer w.stop()
			for i := range n {
				l := launchOf("app-bench", i, []string{"sleep", "3600"}, nil)
				l.Cores, l.MemoryMB = 1, 16
				if checked {
					l.Ports = map[string]int{"http": r.First + i}
					l.Checks = []wire.Check{{Name: "web", Type: wire.CheckHTTP, Port: "http", Interval: dur(time.Second), Timeout: dur(time.Second)}}
				}
				w.mustCall(200, "POST", "/v1/executors", l)
			}
			testproc.Eventually(b, 2*time.Minute, "every executor running (and healthy)", func() bool {
				fm.mu.Lock()
				defer fm.mu.Unlock()
				running, healthy := map[int]bool{}, map[int]bool{}
				for _, s := range fm.execStates {
					running[s.ExecutorID] = running[s.ExecutorID] || s.State == wire.ExecutorRunning
					healthy[s.ExecutorID] = healthy[s.ExecutorID] || s.Health == wire.HealthHealthy
				}
				return len(running) == n && (!checked || len(healthy) == n)
			})
			var pct float64
			for b.Loop() {
				before, t0 := cpuTime(), time.Now()
				time.Sleep(10 * time.Second) // the measured window
				pct = 100 * (cpuTime() - before).Seconds() / time.Since(t0).Seconds()
			}
			b.ReportMetric(pct, "%core")
		})
	}
}

// cpuTime is this process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChecksFloor is what BenchmarkChecks measures with nothing of
// the worker: 1,000 goroutines, each sending a GET every second on a kept
// connection to the same helper's ports (httpProbe, as a check does), as a
// percentage of one core. The difference with BenchmarkChecks is the
// worker's own part; this is the loopback TCP's.
//
//	go test -run '^$' -bench ChecksFloor -benchtime 1x ./worker
func BenchmarkChecksFloor(b *testing.B) {
	const n = 1000
	first := 31000
	srv := exec.Command(os.Args[0], "serve-ports", fmt.Sprint(first), fmt.Sprint(first+n-1))
	srv.Env = append(os.Environ(), helperEnv+"=1")
	out, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "listening" {
		b.Fatal("the helper could not listen")
	}
	stop := make(chan struct{})
	var failed atomic.Int64
	for i := range n {
		go func() {
			var web httpProbe
			defer web.close()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if ok, _ := web.probe(ctx, "127.0.0.1", first+i, "/"); !ok {
					failed.Add(1)
				}
				cancel()
			}
		}()
	}
	defer close(stop)
	time.Sleep(2 * time.Second) // every connection made: the steady state is measured
	var pct float64
	for b.Loop() {
		before, t0 := cpuTime(), time.Now()
		time.Sleep(10 * time.Second) // the measured window
		pct = 100 * (cpuTime() - before).Seconds() / time.Since(t0).Seconds()
	}
	if failed.Load() > 0 {
		b.Errorf("%d probes failed", failed.Load())
	}
	b.ReportMetric(pct, "%core")
}
