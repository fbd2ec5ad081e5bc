package master

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/wire"
)

// An app's name holding a character a terminal acts on, or invalid UTF-8,
// is refused with a 400 naming the field; ordinary Unicode is a name like
// any other. Commands and environments may hold such characters: programs
// take them, and berth escapes them when it shows them.
func TestValidateAppRefusesControlsInNames(t *testing.T) {
	app := func(name string) wire.AppDescription {
		return wire.AppDescription{Name: name, Command: []string{"x"}}
	}
	for _, name := range []string{
		"\x1b]0;pwned\x07\x1b[2J", // retitles the window, clears the screen
		"a\x1bb", "\x00", "line\nbreak", "tab\there", "\x7f",
		"csi\u009b2J", "\u0080", "\u009f", // C1 controls
		"admin\u202etxt.exe", "\u202a", "\u2066x\u2069", // bidirectional
		"bad\xffutf8", "\xe2\x80", // invalid UTF-8
	} {
		err := admission.App(app(name))
		if statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), `name "`) {
			t.Errorf("name %q: %v, want a 400 naming the name", name, err)
		}
	}
	for _, name := range []string{"", "pi", "nightly-etl (2026) #3", "café 漢字 👩‍💻", `C:\jobs\x1b`, "\u00a0"} {
		if err := admission.App(app(name)); err != nil {
			t.Errorf("name %q refused: %v", name, err)
		}
	}

	withControls := wire.AppDescription{Name: "ok", Command: []string{"/bin/printf", "\x1b[1m%s\x1b[0m\t\u202e\n", "x"},
		Env: map[string]string{"PS1": "\x1b[32m$ \x1b[0m"}}
	if err := admission.App(withControls); err != nil {
		t.Errorf("controls in a command and an environment refused: %v", err)
	}
	if err := admission.Driver(wire.DriverDescription{Command: withControls.Command, Env: withControls.Env}); err != nil {
		t.Errorf("controls in a driver's command and environment refused: %v", err)
	}
}

// A worker's host is a name too: shown by berth status and in the UI.
func TestValidateRegistrationRefusesControlsInHost(t *testing.T) {
	for _, host := range []string{"node\x1b[2J", "node\u202e", "node\xff"} {
		reg := wire.RegisterWorker{ID: "w1", Host: host, Port: 9001, Cores: 1, MemoryMB: 1, Address: "http://" + host + ":9001"}
		if err := validateRegistration(reg); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), `host "`) {
			t.Errorf("host %q: %v, want a 400 naming the host", host, err)
		}
	}
}

// Through the API: the refusal is a 400 whose message names the field,
// and no app is registered.
func TestRegisterAppWithControlsInNameChangesNothing(t *testing.T) {
	_, base := runMaster(t, Config{WorkerTimeout: time.Minute}, nil, nil)
	post := func(d wire.AppDescription) (int, wire.Error) {
		t.Helper()
		body, _ := json.Marshal(d)
		resp, err := http.Post(base+wire.MasterAPI.RegisterApp.Path(), "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e wire.Error
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e
	}
	if status, e := post(wire.AppDescription{Name: "\x1b]0;pwned\x07evil", Command: []string{"x"}}); status != http.StatusBadRequest ||
		!strings.HasPrefix(e.Error, `name "\x1b]0;pwned\aevil" `) {
		t.Fatalf("app named with escapes: %d %+v, want 400 naming the name", status, e)
	}

	// A good app once the master leads (it is electing itself): the only
	// app it then lists.
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, e := post(wire.AppDescription{Name: "good", Command: []string{"x"}})
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("good app: %d %+v", status, e)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline, as the master elects itself
	}
	resp, err := http.Get(base + wire.MasterAPI.Cluster.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st wire.ClusterStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.ActiveApps) != 1 || st.ActiveApps[0].Name != "good" || len(st.CompletedApps) != 0 {
		t.Fatalf("apps after the refusal: active %+v, completed %+v; want only the good one", st.ActiveApps, st.CompletedApps)
	}
}
