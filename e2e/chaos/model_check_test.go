package chaos

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The checker must catch the broken promises of a failover: these
// histories are the ones issue 7 reported, and each must be refused, while
// their correct counterparts pass.

type hop struct {
	client     int
	in         input
	out        output
	call, done int64
}

func checkHistory(ops ...hop) bool {
	var h []porcupine.Operation
	for _, o := range ops {
		h = append(h, porcupine.Operation{ClientId: o.client, Input: o.in, Output: o.out, Call: o.call, Return: o.done})
	}
	return porcupine.CheckOperations(model.ToModel(), h)
}

func reg(key, id string, call, done int64) hop {
	return hop{0, input{kind: opRegister, key: key}, output{id: id}, call, done}
}

// readApp is a read of app-1 (key k1) by a client.
func readApp(client int, out output, call, done int64) hop {
	return hop{client, input{kind: opRead, key: "k1", id: "app-1"}, out, call, done}
}

// readDriver is a read of driver-1 (key d1) by client 2.
func readDriver(out output, call, done int64) hop {
	return hop{2, input{kind: opReadDriver, key: "d1", id: "driver-1"}, out, call, done}
}

// probeKill is a kill of app-1 by a tenant that may not make it.
func probeKill(out output, call, done int64) hop {
	return hop{3, input{kind: opKill, key: "k1", id: "app-1", by: "tenant:beta", probe: true}, out, call, done}
}

// putQ puts queue q's settings spec; readQ reads it.
func putQ(client int, spec string, out output, call, done int64) hop {
	return hop{client, input{kind: opPutQueue, key: "queue:q", id: "q", spec: spec}, out, call, done}
}

func readQ(client int, out output, call, done int64) hop {
	return hop{client, input{kind: opReadQueue, key: "queue:q", id: "q"}, out, call, done}
}

// TestModelChecksHistories runs the checker on histories it must accept
// and on those it must refuse.
func TestModelChecksHistories(t *testing.T) {
	sub := hop{0, input{kind: opSubmitDriver, key: "d1"}, output{id: "driver-1"}, 0, 10}
	driverKill := hop{1, input{kind: opKillDriver, key: "d1", id: "driver-1"}, output{state: "RUNNING", killReq: true}, 20, 30}
	for _, c := range []struct {
		name    string
		history []hop
		ok      bool
		why     string // what the check must not get wrong
	}{
		{"AcceptsALinearizableHistory", []hop{
			reg("k1", "app-1", 0, 10),
			readApp(1, output{state: "WAITING", limit: -1}, 5, 20), // concurrent with the registration
			{0, input{kind: opLimit, key: "k1", id: "app-1", n: 3}, output{}, 21, 30},
			{1, input{kind: opKill, key: "k1", id: "app-1"}, output{unknown: true}, 31, pending}, // a 504: it may have committed
			readApp(2, output{state: "RUNNING", limit: 3}, 40, 50),
			{2, input{kind: opKill, key: "k1", id: "app-1"}, output{state: "KILLED", ended: true}, 51, 60},
			{0, input{kind: opRegister, key: "k1"}, output{id: "app-1"}, 61, 70}, // a repeat gets the same id
			readApp(0, output{state: "KILLED", ended: true, limit: 3}, 71, 80),
		}, true, "a linearizable history was refused"},
		// Issue 7, 1: a kill answered 200 KILLED by a leader handing over,
		// never committed; the new leader still has the app active.
		{"CatchesALostKill", []hop{
			reg("k1", "app-1", 0, 10),
			{1, input{kind: opKill, key: "k1", id: "app-1"}, output{state: "KILLED", ended: true}, 20, 30},
			readApp(2, output{state: "RUNNING", limit: -1}, 40, 50),
		}, false, "an acknowledged kill that was lost passed the check"},
		// Issue 7, 1 and 3: an app read as KILLED while the cluster held it
		// active (the kill's write failed), then read active again.
		{"CatchesAnUncommittedRead", []hop{
			reg("k1", "app-1", 0, 10),
			readApp(1, output{state: "KILLED", ended: true}, 20, 30),
			readApp(2, output{state: "WAITING", limit: -1}, 40, 50),
		}, false, "a read of an uncommitted end passed the check"},
		// Issue 7, 4: a woken leader answered 404 for an app registered
		// meanwhile.
		{"CatchesAStaleLeadersRead", []hop{
			reg("k1", "app-1", 0, 10),
			readApp(1, output{status: 404}, 20, 30),
		}, false, "a 404 for an acknowledged registration passed the check"},
		// A repeat of a registration must get the first one's id.
		{"CatchesADuplicateRegistration", []hop{reg("k1", "app-1", 0, 10), reg("k1", "app-2", 20, 30)},
			false, "a second app for one key passed the check"},
		// A driver kill that was accepted must stay accepted: read later as
		// running without it, it was lost.
		{"CatchesALostDriverKill", []hop{sub, driverKill, readDriver(output{state: "RUNNING"}, 40, 50)},
			false, "a lost driver kill passed the check"},
		{"AcceptsADriverKilledByItsWorker", []hop{sub, driverKill,
			readDriver(output{state: "RUNNING", killReq: true}, 40, 50),
			readDriver(output{state: "KILLED", ended: true}, 60, 70),
		}, true, "a driver killed by its worker after an accepted kill was refused"},
		{"CatchesADriverEndedWithoutAKill", []hop{sub, readDriver(output{state: "ERROR", ended: true}, 40, 50)},
			false, "a driver that ended without a kill passed the check"},
		// A driver whose worker was lost ends in ERROR (verify checks that
		// a fault took that worker out), and stays so.
		{"AcceptsADriverLostWithItsWorker", []hop{sub,
			readDriver(output{state: "ERROR", ended: true, lost: true, worker: "w2"}, 40, 50),
			{1, input{kind: opKillDriver, key: "d1", id: "driver-1"}, output{state: "ERROR", ended: true, lost: true, worker: "w2"}, 60, 70},
			readDriver(output{state: "ERROR", ended: true, lost: true, worker: "w2"}, 80, 90),
		}, true, "a driver ended with its worker was refused"},
		{"CatchesADriverLostAfterAnAcceptedKill", []hop{sub, driverKill,
			readDriver(output{state: "ERROR", ended: true, lost: true, worker: "w2"}, 40, 50),
		}, false, "a driver whose kill was accepted passed as ended with its worker, not KILLED"},
		// Tenants: a request a tenant may not make changes nothing.
		{"AcceptsAForbiddenKill", []hop{reg("k1", "app-1", 0, 10), probeKill(output{status: 403}, 20, 30),
			readApp(2, output{state: "WAITING", limit: -1}, 40, 50)}, true, "a forbidden kill that changed nothing was refused"},
		{"CatchesAForbiddenKillThatTookEffect", []hop{reg("k1", "app-1", 0, 10), probeKill(output{unknown: true}, 20, pending),
			readApp(2, output{state: "KILLED", ended: true}, 40, 50)}, false, "a kill a tenant may not make took effect and passed"},
		// Queues: a register per queue.
		{"AcceptsAQueueHistory", []hop{
			putQ(0, "w1", output{spec: "w1"}, 0, 10),
			readQ(1, output{spec: "w1"}, 11, 20),
			putQ(0, "w2", output{unknown: true}, 21, pending), // may commit at any time
			readQ(1, output{spec: "w1"}, 30, 40),
			readQ(2, output{spec: "w2"}, 41, 50),
			{0, input{kind: opDeleteQueue, key: "queue:q", id: "q"}, output{}, 51, 60},
			readQ(1, output{status: 404}, 61, 70),
			{2, input{kind: opDeleteQueue, key: "queue:q", id: "q"}, output{status: 404}, 71, 80},
		}, true, "a linearizable queue history was refused"},
		{"CatchesALostQueueWrite", []hop{putQ(0, "w1", output{spec: "w1"}, 0, 10), putQ(1, "w2", output{spec: "w2"}, 11, 20), readQ(2, output{spec: "w1"}, 21, 30)},
			false, "a queue write overwritten by an older one passed the check"},
		{"CatchesAPutAnsweredWithOtherSettings", []hop{putQ(0, "w1", output{spec: "w1"}, 0, 10), putQ(1, "w2", output{spec: "w1"}, 11, 20)},
			false, "a put answered with settings other than those put passed the check"},
		{"CatchesATenantCreatedTwice", []hop{
			{0, input{kind: opCreateTenant, key: "tenant:t", id: "t", spec: "q"}, output{}, 0, 10},
			{1, input{kind: opCreateTenant, key: "tenant:t", id: "t", spec: "q"}, output{}, 11, 20},
		}, false, "a tenant created twice without a delete passed the check"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if checkHistory(c.history...) != c.ok {
				t.Fatal(c.why)
			}
		})
	}
}
