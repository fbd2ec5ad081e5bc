package worker

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/ui"
	"github.com/berth-cluster/berth/wire"
)

// uiSessions are the sessions of this run of this worker alone
// (httpx.UISessions): valid nowhere else, signed out here, and all ended
// when the worker restarts. The cookie is named after the worker, as
// workers (and a master) on one host share its cookies.
func (w *Worker) uiSessions() *httpx.UISessions {
	s := httpx.NewUISessions("berth_session_"+w.id, w.cfg.Secret, "worker "+w.id+" "+w.incarnation, nil)
	ended := httpx.NewEndedSet(nil)
	s.Ended, s.End = ended.Ended, ended.End
	return s
}

// mountUI serves the worker's page (package ui) on mux: / goes to it.
func (w *Worker) mountUI(mux *http.ServeMux, sessions *httpx.UISessions) {
	h := ui.WorkerHandler(ui.WorkerOptions{
		View: w.uiView, Secret: w.cfg.Secret, Sessions: sessions, Secure: w.cfg.TLS != nil,
		SignInNeeded: w.cfg.Secret != "" || w.cfg.TLS != nil, Log: w.log,
	})
	ui.Mount(mux, wire.WorkerAPI.UI, h)
}

// uiView is what the worker's page shows: itself and its live processes.
func (w *Worker) uiView(context.Context) ui.WorkerView {
	master, _, _, _ := w.sess.current()
	v := ui.WorkerView{ID: w.id, Address: w.url, Cores: w.cfg.Cores, MemoryMB: w.cfg.MemoryMB, Resources: w.cfg.Resources,
		Limits: w.limits, Masters: w.cfg.Masters, Leader: master}
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	add := func(p *proc, kind, id string) {
		pid := 0
		if p.process != nil {
			pid = p.process.Pid
		}
		v.Procs = append(v.Procs, ui.Proc{Kind: kind, ID: id, Cores: p.cores, MemoryMB: p.memoryMB, Resources: p.resources.String(), State: p.state, PID: pid})
	}
	for _, p := range w.procs.executors {
		if !p.ended {
			add(p, "executor", fmt.Sprintf("%s/%d", p.appID, p.execID))
		}
	}
	for _, p := range w.procs.drivers {
		if !p.ended {
			add(p, "driver", p.driverID)
		}
	}
	slices.SortFunc(v.Procs, func(a, b ui.Proc) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID)) })
	return v
}
