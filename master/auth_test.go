package master

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// A launched driver gets a credential of its own. Any leader knows it
// from the committed record (only its hash is written), it names that
// driver alone, and it dies with the driver.
func TestDriverCredentialIsItsOwnAndEndsWithIt(t *testing.T) {
	h := newLeader(t, nil, "w1")
	id := h.addDriver(wire.DriverDescription{Command: []string{"d"}})
	sent := h.takeSent("/v1/drivers")
	if len(sent) != 1 {
		t.Fatalf("launches: %d", len(sent))
	}
	token := sent[0].cmd.body.(wire.LaunchDriver).Token
	if !strings.HasPrefix(token, wire.DriverTokenPrefix+id+".") || len(token) < 40 {
		t.Fatalf("credential %q", token)
	}
	rec := h.c.drivers[id].rec
	if rec.CredentialHash == "" || strings.Contains(rec.CredentialHash, token) {
		t.Fatalf("record holds %q", rec.CredentialHash)
	}
	if got, err := h.c.driverOfToken(token); got != id || err != nil {
		t.Fatalf("own credential: %q %v", got, err)
	}
	for _, forged := range []string{token + "x", wire.DriverTokenPrefix + id + ".guess", wire.DriverTokenPrefix + "driver-other." + token[len(wire.DriverTokenPrefix+id+"."):]} {
		if _, err := h.c.driverOfToken(forged); statusOf(err) != http.StatusUnauthorized {
			t.Errorf("forged %q: %v", forged, err)
		}
	}

	// A new leader checks it against the committed record.
	h.failover()
	h.lead(nil)
	if got, err := h.c.driverOfToken(token); got != id || err != nil {
		t.Fatalf("after a failover: %q %v", got, err)
	}

	// An app it registers is its own.
	idem := keyed{owner: id}
	app, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.registerApp(wire.AppDescription{Name: "mine", Command: []string{"x"}}, idem, reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	if owner := h.c.apps[app.ID].rec.Owner; owner != id {
		t.Errorf("app owner %q, want %q", owner, id)
	}

	// Once the driver ends, its credential is worth nothing.
	run(h, func(reply reply[wire.DriverStatus]) { h.c.killDriver(id, reply) })
	run(h, func(reply reply[wire.None]) {
		h.c.driverStateChanged("w1", wire.DriverStateChanged{DriverID: id, State: wire.DriverKilled}, reply)
	})
	if _, err := h.c.driverOfToken(token); statusOf(err) != http.StatusUnauthorized {
		t.Errorf("credential of an ended driver: %v", err)
	}
}
