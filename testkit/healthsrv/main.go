// Command healthsrv is a test process for the health checks' end-to-end
// tests: it answers GET /health on $BERTH_HOST:$BERTH_PORT_HTTP (the
// worker's advertised host; 127.0.0.1 without it), as a service an
// executor runs would.
//
//	healthsrv [--fail-on WORKER] [--slow D]
//	healthsrv --squat FIRST-LAST
//
// --fail-on: exit 1 at once when run on that worker ($BERTH_WORKER_ID);
// --slow: listen only after D (a slow starter). SIGUSR1 makes it stop
// answering (its handler hangs, the process runs on). --squat: bind every
// port FIRST to LAST on 127.0.0.1 and hold them, as a tenant's process
// squatting the ports others will be given would.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/wire"
)

func main() {
	failOn := flag.String("fail-on", "", "exit 1 when run on this worker")
	slow := flag.Duration("slow", 0, "listen only after this long")
	squat := flag.String("squat", "", "hold the ports FIRST-LAST")
	flag.Parse()
	if *squat != "" {
		var first, last int
		if _, err := fmt.Sscanf(*squat, "%d-%d", &first, &last); err != nil {
			fmt.Fprintln(os.Stderr, "healthsrv: --squat:", err)
			os.Exit(2)
		}
		for p := first; p <= last; p++ {
			if _, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err != nil {
				fmt.Fprintln(os.Stderr, "healthsrv:", err)
				os.Exit(1)
			}
		}
		fmt.Printf("healthsrv pid %d holds ports %d-%d\n", os.Getpid(), first, last)
		select {}
	}
	if *failOn != "" && os.Getenv("BERTH_WORKER_ID") == *failOn {
		fmt.Fprintln(os.Stderr, "healthsrv: failing on", *failOn)
		os.Exit(1)
	}
	var hung atomic.Bool
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		hung.Store(true)
	}()
	time.Sleep(*slow)
	// Where the worker says to bind (its advertised host), as a service
	// should: a worker on 127.0.0.7 checks it there.
	host := cmp.Or(os.Getenv(wire.EnvWorkerHost), "127.0.0.1")
	ln, err := net.Listen("tcp", net.JoinHostPort(host, os.Getenv("BERTH_PORT_HTTP")))
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthsrv:", err)
		os.Exit(1)
	}
	fmt.Printf("healthsrv pid %d on %s\n", os.Getpid(), ln.Addr())
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hung.Load() {
			select {} // a deadlock, as far as its callers can tell
		}
		fmt.Fprintln(w, "ok")
	}))
	fmt.Fprintln(os.Stderr, "healthsrv:", err)
	os.Exit(1)
}
