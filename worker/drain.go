package worker

import (
	"context"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// drainBeforeStopping is SIGTERM with --drain-deadline (Nomad's drain on
// shutdown): the worker asks its master to drain it, then keeps serving,
// heartbeating and reporting while what runs here ends on its own, or the
// master kills it at the deadline and places it elsewhere. It returns once
// nothing runs, or the deadline (and the kill grace) passed; the ordinary
// shutdown then kills what is left.
func (w *Worker) drainBeforeStopping(deadline time.Duration) {
	master := w.sess.masterURL()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := httpx.Call(ctx, w.client, master, wire.MasterAPI.Drain, wire.DrainRequest{DeadlineSeconds: int((deadline + time.Second - 1) / time.Second)}, w.id)
	cancel()
	if err != nil {
		w.log.Warn("could not ask the master to drain this worker; stopping without a drain", "master", master, "err", err)
		return
	}
	w.log.Info("draining before stopping: nothing new is placed here", "deadline", deadline, "running", len(w.procs.live("", false)))
	end := time.Now().Add(deadline + w.cfg.KillGrace + 2*time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(w.procs.live("", false)) > 0 && time.Now().Before(end) {
		<-tick.C
	}
	w.log.Info("drained", "left", len(w.procs.live("", false)))
}
