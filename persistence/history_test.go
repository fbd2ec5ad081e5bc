package persistence

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// A history is what the fuzz targets replay: log entries built from fuzzed
// bytes. Most ops build one command from a few bytes, with ids drawn from
// small sets so that commands keep meeting the same records; one op embeds
// raw bytes as a log entry, for Decode to read (or refuse).

// Ops of a history program: the low 4 bits of an op byte. With the high bit
// set, the command joins the previous entry (a batch) instead of starting
// one.
const (
	opBumpEpoch      byte = iota
	opPutApp              // id, state
	opEndApp              // id, state, end minute, retain
	opDeleteApp           // id
	opPutDriver           // id, state, worker
	opEndDriver           // id, state, end minute, retain
	opDeleteDriver        // id
	opPutWorker           // id
	opDeleteWorker        // id
	opPutMaster           // id
	opDeleteMaster        // id
	opPutExecutor         // app, executor id, worker
	opDeleteExecutor      // app, executor id, end kept or placement deleted (a worker)
	opOddCommand          // type byte, payload choice: malformed or flagged
	opRawEntry            // 2-byte length, then the entry's bytes
	opPlaceExecutor       // as opPutExecutor: placements are what the invariants are about
	opJoin           byte = 0x80
)

// entry is one log entry of a history.
type entry struct {
	cmds []Command // what the entry holds; for a raw one, what Decode read
	raw  []byte    // a raw entry's bytes; nil when built from cmds
	err  error     // Decode's refusal of raw
}

// program reads the bytes of a history; past the end it reads zeros.
type program struct{ data []byte }

func (p *program) next() byte {
	if len(p.data) == 0 {
		return 0
	}
	b := p.data[0]
	p.data = p.data[1:]
	return b
}

func (p *program) take(n int) []byte {
	n = min(n, len(p.data))
	b := p.data[:n:n]
	p.data = p.data[n:]
	return b
}

// readHistory turns fuzz bytes into log entries.
func readHistory(data []byte) []entry {
	p := &program{data}
	var entries []entry
	for len(p.data) > 0 {
		op := p.next()
		if op&0x0f == opRawEntry {
			raw := p.take(int(binary.BigEndian.Uint16([]byte{p.next(), p.next()})))
			cmds, err := Decode(raw)
			entries = append(entries, entry{cmds: cmds, raw: raw, err: err})
			continue
		}
		c := p.command(op & 0x0f)
		if last := len(entries) - 1; op&opJoin != 0 && last >= 0 && entries[last].raw == nil {
			entries[last].cmds = append(entries[last].cmds, c)
		} else {
			entries = append(entries, entry{cmds: []Command{c}})
		}
	}
	return entries
}

var (
	activeApps    = []wire.AppState{wire.AppWaiting, wire.AppRunning, wire.AppUnknown}
	endedApps     = []wire.AppState{wire.AppFinished, wire.AppFailed, wire.AppKilled}
	activeDrivers = []wire.DriverState{wire.DriverSubmitted, wire.DriverRunning, wire.DriverRelaunching}
	endedDrivers  = []wire.DriverState{wire.DriverFinished, wire.DriverFailed, wire.DriverKilled, wire.DriverError}
	// oddTypes are the tags worth trying more often than chance would.
	oddTypes = []Type{0, 99, TypeEndSession, TypePutQueue, TypeDeleteQueue, TypePutTenant, TypeDeleteTenant, TypeAudit, typeBatch, 77 | IgnoreUnknownTypeFlag, TypePutApp | IgnoreUnknownTypeFlag, TypePutExecutor | IgnoreUnknownTypeFlag, TypeDeleteWorker | IgnoreUnknownTypeFlag}
)

func pick[T any](p *program, from []T) T { return from[int(p.next())%len(from)] }

func (p *program) appID() string    { return fmt.Sprintf("app-20261122100000-%04d", p.next()%4) }
func (p *program) driverID() string { return fmt.Sprintf("driver-20261122100000-%04d", p.next()%4) }
func (p *program) workerID() string { return fmt.Sprintf("w%d", p.next()%3+1) }

// endTime is one of a few minutes (so that ends tie, and the id decides),
// or none.
func (p *program) endTime() *time.Time {
	m := p.next() % 9
	if m == 8 {
		return nil
	}
	t := t0.Add(time.Duration(m) * time.Minute)
	return &t
}

func (p *program) command(op byte) Command {
	switch op {
	case opBumpEpoch:
		return BumpEpoch()
	case opPutApp:
		a := app(p.appID())
		a.State = pick(p, activeApps)
		return PutApp(a, 0)
	case opEndApp:
		a := app(p.appID())
		a.State, a.EndedAt = pick(p, endedApps), p.endTime()
		return PutApp(a, int(p.next()%4))
	case opDeleteApp:
		return Command{Type: TypeDeleteApp, ID: p.appID()}
	case opPutDriver:
		d := DriverRecord{ID: p.driverID(), SubmittedAt: t0, State: pick(p, activeDrivers), WorkerID: p.workerID()}
		return PutDriver(d, 0)
	case opEndDriver:
		d := DriverRecord{ID: p.driverID(), SubmittedAt: t0, State: pick(p, endedDrivers), EndedAt: p.endTime()}
		return PutDriver(d, int(p.next()%4))
	case opDeleteDriver:
		return Command{Type: TypeDeleteDriver, ID: p.driverID()}
	case opPutWorker:
		id := p.workerID()
		return PutWorker(WorkerRecord{ID: id, Host: "10.0.0." + id[1:], Port: 7078, Cores: 8, MemoryMB: 4096})
	case opDeleteWorker:
		return DeleteWorker(p.workerID())
	case opPutMaster:
		return PutMaster(MasterRecord{ID: fmt.Sprintf("m%d", p.next()%2+1), APIAddr: "http://10.0.1.1:6066"})
	case opDeleteMaster:
		return DeleteMaster(fmt.Sprintf("m%d", p.next()%2+1))
	case opPutExecutor, opPlaceExecutor:
		return PutExecutor(ExecutorRecord{AppID: p.appID(), ID: int(p.next() % 3), WorkerID: p.workerID(), Cores: 1, MemoryMB: 512})
	case opDeleteExecutor:
		// Half of them an executor's end kept (which the master writes
		// before the delete; joined to the next entry or not, in any order).
		appID, id := p.appID(), int(p.next()%3)
		if p.next()%2 == 0 {
			return DeleteExecutor(appID, id)
		}
		return EndExecutor(appID, wire.ExecutorStatus{ID: id, WorkerID: p.workerID(), State: wire.ExecutorFailed, Message: "exited"})[0]
	}
	return p.oddCommand()
}

// oddCommand is a command the master does not write: an unknown type (with
// or without the flag), a known one with the flag, or a missing or invalid
// payload.
func (p *program) oddCommand() Command {
	t := Type(p.next())
	if i := int(t) % (2 * len(oddTypes)); i < len(oddTypes) {
		t = oddTypes[i]
	}
	c := Command{Type: t}
	switch p.next() % 9 {
	case 0:
		c.App = &AppRecord{}
	case 1:
		a := app(p.appID())
		c.App = &a
	case 2:
		c.Executor = &ExecutorRecord{AppID: p.appID(), ID: -1, WorkerID: p.workerID()}
	case 3:
		c.Executor = &ExecutorRecord{ID: 1, WorkerID: p.workerID()}
	case 4:
		c.ID = p.workerID()
	case 5:
		// A UI session's end: its expiry and time in hours from a fixed
		// day, so that ends meet and expire each other.
		c.Session = &EndedSession{ID: p.workerID(), Expires: 1_800_000_000 + int64(p.next()%24)*3600, At: 1_800_000_000 + int64(p.next()%24)*3600}
	case 6:
		c.Queue = &QueueRecord{Name: p.workerID(), Weight: float64(1 + p.next()%4), Preempt: p.next()%2 == 0}
	case 7:
		c.Tenant = &TenantRecord{Name: p.workerID(), Queues: []string{p.workerID()}, TokenHash: "h"}
	case 8:
		// An audit entry, minutes apart, kept for an hour or for ever.
		c.Audit = &AuditRecord{Entry: wire.AuditEntry{Time: time.Date(2026, 11, 26, 0, int(p.next()%240), 0, 0, time.UTC), Principal: "secret"},
			Retain: time.Duration(p.next()%2) * time.Hour}
	}
	return c
}

// rawEntry is the program op that embeds cmds, encoded, as a raw entry.
func rawEntry(cmds ...Command) []byte {
	data, err := Encode(cmds)
	if err != nil {
		panic(err)
	}
	return rawBytes(data)
}

// rawBytes is the program op that embeds data as a raw entry.
func rawBytes(data []byte) []byte {
	return append([]byte{opRawEntry, byte(len(data) >> 8), byte(len(data))}, data...)
}

// knownTag reports whether t names a command type, by the constants alone
// (not the table under test).
func knownTag(t Type) bool {
	t &^= IgnoreUnknownTypeFlag
	return t >= TypeBumpEpoch && t <= TypeAudit
}

// refusedWhole reports whether Decode refuses an entry of cmds: one command
// of a type unknown and not marked ignorable stops the whole entry.
func refusedWhole(cmds []Command) bool {
	for _, c := range cmds {
		if !knownTag(c.Type) && c.Type&IgnoreUnknownTypeFlag == 0 {
			return true
		}
	}
	return false
}
