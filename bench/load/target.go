package load

import (
	"context"
	"fmt"
	"time"
)

// target is the master one step of a scenario measures.
type target struct {
	URL  string
	proc *masterProc // nil when not started by this tool
	Info MasterInfo
}

// openReported opens the scenario's master (see openMaster), records and
// prints which master it is, and returns a client for it: the start every
// scenario shares but heartbeats, which reports per cluster size.
func (cm *common) openReported(ctx context.Context, r *Report, name string, workerTimeout time.Duration, minCoreUnit int) (*target, *masterClient, error) {
	tgt, err := cm.openMaster(ctx, name, workerTimeout, minCoreUnit)
	if err != nil {
		return nil, nil, err
	}
	r.Masters = append(r.Masters, tgt.Info)
	printMaster(cm.out, tgt.Info)
	r.Problems = append(r.Problems, tgt.warnings()...)
	return tgt, newMasterClient(tgt.URL, cm.secret, cm.inFlight, cm.reqTimeout), nil
}

// openMaster starts a master (--master-bin) or checks the one at --master.
func (cm *common) openMaster(ctx context.Context, name string, workerTimeout time.Duration, minCoreUnit int) (*target, error) {
	if cm.masterURL != "" {
		mc := newMasterClient(cm.masterURL, cm.secret, 1, cm.reqTimeout)
		cs, err := mc.cluster(ctx)
		if err != nil {
			return nil, fmt.Errorf("--master %s: %w", cm.masterURL, err)
		}
		return &target{URL: cm.masterURL, Info: MasterInfo{URL: cm.masterURL, MasterID: cs.MasterID, Epoch: cs.Epoch, OtherWorkers: cs.WorkerSummary.Alive}}, nil
	}
	p, err := startMaster(ctx, cm.host, masterOpts{
		Bin: cm.masterBin, RecoveryMode: cm.recoveryMode, Secret: cm.secret,
		WorkerTimeout: workerTimeout, MinCoreUnit: minCoreUnit, Extra: cm.masterArgs, Dir: cm.workDir,
	}, name)
	if err != nil {
		return nil, err
	}
	info := binaryInfo(cm.masterBin)
	info.URL, info.Args = p.URL, p.Args
	return &target{URL: p.URL, proc: p, Info: info}, nil
}

// warnings are what the report should say about the target.
func (t *target) warnings() []string {
	if t.Info.OtherWorkers > 0 {
		return []string{fmt.Sprintf("the master had %d other ALIVE workers at the start: it may place executors there, and they compete for its time", t.Info.OtherWorkers)}
	}
	return nil
}

// shutdown stops the master, then the simulated workers (f, nil if none
// started): the master must not see the workers go silent.
func (t *target) shutdown(mc *masterClient, f *fleet) *MasterLog {
	ml := t.close(mc)
	if f != nil {
		f.close()
	}
	return ml
}

// close stops a master this tool started and summarizes its log. The
// client's idle connections are closed first: the master's graceful
// shutdown would wait for any it has not seen a request on yet.
func (t *target) close(mc *masterClient) *MasterLog {
	if t.proc == nil {
		return nil
	}
	if mc != nil {
		mc.closeIdle()
	}
	exit := t.proc.stop()
	ml := scanMasterLog(t.proc.LogPath)
	ml.Exit = exit
	return &ml
}

// fleetOutcome is what the results of every scenario say of its simulated
// workers and its master.
type fleetOutcome struct {
	Fleet     map[string]int64 `json:"fleet,omitempty"` // the simulated workers' counters
	MasterLog *MasterLog       `json:"masterLog,omitempty"`
}

// fleetSpec is the master and the simulated workers a scenario opens.
type fleetSpec struct {
	master        string        // the name of the master's log and data
	workerTimeout time.Duration // the master's --worker-timeout
	minCoreUnit   int           // the master's --min-core-unit
	workers       fleetParams
	// expected are the master's warnings the scenario causes, beyond the
	// one every master without a secret logs: they are no problem.
	expected []string
}

// withFleet is the run of launches and worker-loss: it opens their master
// (see openReported) and a fleet of simulated workers on it, not registered
// yet, runs fn with them, and shuts both down (see shutdown), also after an
// error. The summary of the master's log, when the tool started the
// master, goes to out, and its unexpected entries to the report's problems.
func (cm *common) withFleet(ctx context.Context, r *Report, spec fleetSpec, out *fleetOutcome, fn func(tgt *target, f *fleet) error) error {
	tgt, mc, err := cm.openReported(ctx, r, spec.master, spec.workerTimeout, spec.minCoreUnit)
	if err != nil {
		return err
	}
	var f *fleet
	defer func() {
		if out.MasterLog = tgt.shutdown(mc, f); out.MasterLog != nil {
			expected := append([]string{noSecretWarning}, spec.expected...)
			r.Problems = append(r.Problems, out.MasterLog.problems(expected...)...)
		}
	}()
	f, err = newFleet(fleetConfig{
		Workers: spec.workers.Workers, Cores: spec.workers.WorkerCores, MemoryMB: spec.workers.WorkerMemMB,
		IDPrefix: cm.idPrefix, PortBase: cm.portBase, Secret: cm.secret, Seed: cm.seed,
	}, mc)
	if err != nil {
		return err
	}
	return fn(tgt, f)
}
