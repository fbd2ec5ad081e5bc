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

func TestModelAcceptsALinearizableHistory(t *testing.T) {
	ok := checkHistory(
		reg("k1", "app-1", 0, 10),
		hop{1, input{kind: opRead, key: "k1", id: "app-1"}, output{state: "WAITING", limit: -1}, 5, 20}, // concurrent with the registration
		hop{0, input{kind: opLimit, key: "k1", id: "app-1", n: 3}, output{}, 21, 30},
		hop{1, input{kind: opKill, key: "k1", id: "app-1"}, output{unknown: true}, 31, pending}, // a 504: it may have committed
		hop{2, input{kind: opRead, key: "k1", id: "app-1"}, output{state: "RUNNING", limit: 3}, 40, 50},
		hop{2, input{kind: opKill, key: "k1", id: "app-1"}, output{state: "KILLED", ended: true}, 51, 60},
		hop{0, input{kind: opRegister, key: "k1"}, output{id: "app-1"}, 61, 70}, // a repeat gets the same id
		hop{0, input{kind: opRead, key: "k1", id: "app-1"}, output{state: "KILLED", ended: true, limit: 3}, 71, 80},
	)
	if !ok {
		t.Fatal("a linearizable history was refused")
	}
}

// Issue 7, 1: a kill answered 200 KILLED by a leader handing over, never
// committed; the new leader still has the app active.
func TestModelCatchesALostKill(t *testing.T) {
	if checkHistory(
		reg("k1", "app-1", 0, 10),
		hop{1, input{kind: opKill, key: "k1", id: "app-1"}, output{state: "KILLED", ended: true}, 20, 30},
		hop{2, input{kind: opRead, key: "k1", id: "app-1"}, output{state: "RUNNING", limit: -1}, 40, 50},
	) {
		t.Fatal("an acknowledged kill that was lost passed the check")
	}
}

// Issue 7, 1 and 3: an app read as KILLED while the cluster held it
// active (the kill's write failed), then read active again.
func TestModelCatchesAnUncommittedRead(t *testing.T) {
	if checkHistory(
		reg("k1", "app-1", 0, 10),
		hop{1, input{kind: opRead, key: "k1", id: "app-1"}, output{state: "KILLED", ended: true}, 20, 30},
		hop{2, input{kind: opRead, key: "k1", id: "app-1"}, output{state: "WAITING", limit: -1}, 40, 50},
	) {
		t.Fatal("a read of an uncommitted end passed the check")
	}
}

// Issue 7, 4: a woken leader answered 404 for an app registered meanwhile.
func TestModelCatchesAStaleLeadersRead(t *testing.T) {
	if checkHistory(
		reg("k1", "app-1", 0, 10),
		hop{1, input{kind: opRead, key: "k1", id: "app-1"}, output{status: 404}, 20, 30},
	) {
		t.Fatal("a 404 for an acknowledged registration passed the check")
	}
}

// A repeat of a registration must get the first one's id.
func TestModelCatchesADuplicateRegistration(t *testing.T) {
	if checkHistory(reg("k1", "app-1", 0, 10), reg("k1", "app-2", 20, 30)) {
		t.Fatal("a second app for one key passed the check")
	}
}

// A driver kill that was accepted must stay accepted: read later as
// running without it, it was lost.
func TestModelCatchesALostDriverKill(t *testing.T) {
	sub := hop{0, input{kind: opSubmitDriver, key: "d1"}, output{id: "driver-1"}, 0, 10}
	kill := hop{1, input{kind: opKillDriver, key: "d1", id: "driver-1"}, output{state: "RUNNING", killReq: true}, 20, 30}
	if checkHistory(sub, kill, hop{2, input{kind: opReadDriver, key: "d1", id: "driver-1"}, output{state: "RUNNING"}, 40, 50}) {
		t.Fatal("a lost driver kill passed the check")
	}
	if !checkHistory(sub, kill,
		hop{2, input{kind: opReadDriver, key: "d1", id: "driver-1"}, output{state: "RUNNING", killReq: true}, 40, 50},
		hop{2, input{kind: opReadDriver, key: "d1", id: "driver-1"}, output{state: "KILLED", ended: true}, 60, 70}) {
		t.Fatal("a driver killed by its worker after an accepted kill was refused")
	}
	if checkHistory(sub, hop{2, input{kind: opReadDriver, key: "d1", id: "driver-1"}, output{state: "ERROR", ended: true}, 40, 50}) {
		t.Fatal("a driver that ended without a kill passed the check")
	}
}
