package master

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/persistence/snapfile"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// apiCall sends body (JSON, if not nil) to base+path with client and
// returns the status and the body.
func apiCall(t *testing.T, client *http.Client, method, url, bearer string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func errorCode(body []byte) wire.ErrorCode {
	var e wire.Error
	json.Unmarshal(body, &e)
	return e.Code
}

// waitAlive polls /readyz until the master is an ALIVE leader.
func waitAlive(t *testing.T, client *http.Client, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if status, _ := apiCall(t, client, "GET", base+"/readyz", "", nil); status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the master is not ALIVE within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Save, inspect and restore through the real API of a master that runs
// alone: a bad file is refused with 400 bad_snapshot and changes nothing;
// a dry run changes nothing; a restore replaces the state.
func TestSnapshotSaveAndRestoreOverHTTP(t *testing.T) {
	m, base := runMaster(t, Config{WorkerTimeout: time.Minute}, nil, nil)
	c := http.DefaultClient
	waitAlive(t, c, base)
	api := wire.MasterAPI
	put := func(name string) {
		if status, body := apiCall(t, c, "PUT", base+api.PutQueue.Path(name), "", wire.QueueSpec{}); status != http.StatusOK {
			t.Fatalf("queue %s: %d %s", name, status, body)
		}
	}
	queues := func() []string {
		s, _ := m.engine.Load(context.Background())
		return keysOf(s.Queues)
	}
	put("etl")
	put("adhoc")
	status, file := apiCall(t, c, "GET", base+api.SnapshotSave.Path(), "", nil)
	if status != http.StatusOK {
		t.Fatalf("save: %d %s", status, file)
	}
	meta, counts, s, err := persistence.DecodeSnapshotFile(bytes.NewReader(file), wire.MaxSnapshotBytes)
	if err != nil || counts.Queues != 3 || s.Queues["etl"] == nil || meta.Master != "m1" || meta.Version == "" || meta.Time.IsZero() {
		t.Fatalf("saved %+v %+v: %v", meta, counts, err)
	}
	put("later")

	restore := func(file []byte, dryRun bool) (int, []byte) {
		return apiCall(t, c, "POST", base+api.SnapshotRestore.Path(), "", wire.RestoreRequest{Snapshot: file, DryRun: dryRun})
	}
	newer := bytes.Replace(file, []byte(fmt.Sprintf("berth-snapshot %d", snapfile.Format)), []byte(fmt.Sprintf("berth-snapshot %d", snapfile.Format+1)), 1)
	corrupt := bytes.Clone(file)
	corrupt[len(corrupt)/2] ^= 1
	// A sound file whose active app no submission could make (a gang
	// without coresPerExecutor divided by zero in every leader).
	crafted := s.Clone()
	crafted.Apps["app-20261127000000-0900"] = &persistence.AppRecord{ID: "app-20261127000000-0900", State: wire.AppWaiting,
		Desc: wire.AppDescription{Name: "g0", Command: []string{"/bin/sleep", "300"}, Gang: 10, Detached: true}}
	craftedFile, _, err := persistence.EncodeSnapshotFile(crafted, meta)
	if err != nil {
		t.Fatal(err)
	}
	// Issue 30's crafted file, sent to the route itself (the CLI refuses
	// it before sending): a tenant of a queue that does not exist, whose
	// token hash is 00 and whose Unix user is root.
	tenants := s.Clone()
	tenants.Tenants["mallory"] = &persistence.TenantRecord{Name: "mallory", Queues: []string{"nowhere"}, TokenHash: "00", UnixUser: "root"}
	tenantsFile, _, err := persistence.EncodeSnapshotFile(tenants, meta)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"truncated": file[:len(file)-40], "corrupt": corrupt, "foreign": []byte("PK\x03\x04 a zip file"), "newer": newer, "empty": nil,
		"crafted": craftedFile, "crafted tenant": tenantsFile,
	} {
		status, body := restore(bad, false)
		if status != http.StatusBadRequest || errorCode(body) != wire.CodeBadSnapshot || !strings.Contains(string(body), "nothing changed") {
			t.Errorf("restore of a %s file: %d %s", name, status, body)
		}
	}
	if status, body := apiCall(t, c, "POST", base+api.SnapshotRestore.Path(), "", map[string]any{"snapshot": file, "force": true}); status != http.StatusBadRequest {
		t.Errorf("a request with an unknown field: %d %s", status, body)
	}
	if got := queues(); strings.Join(got, ",") != "adhoc,etl,later" {
		t.Fatalf("queues after the refusals: %v", got)
	}

	status, body := restore(file, true)
	var plan wire.Restore
	if err := json.Unmarshal(body, &plan); status != http.StatusOK || err != nil || plan.Restored || plan.Snapshot.SHA256 != meta.SHA256 || plan.Snapshot.Counts.Queues != 3 {
		t.Fatalf("dry run: %d %s", status, body)
	}
	if got := queues(); len(got) != 3 {
		t.Fatalf("queues after the dry run: %v", got)
	}
	status, body = restore(file, false)
	if err := json.Unmarshal(body, &plan); status != http.StatusOK || err != nil || !plan.Restored {
		t.Fatalf("restore: %d %s", status, body)
	}
	if got := queues(); strings.Join(got, ",") != "adhoc,etl" {
		t.Errorf("queues after the restore: %v", got)
	}
	// The master serves at once, as the restored state's leader.
	waitAlive(t, c, base)
	status, body = apiCall(t, c, "GET", base+api.Queues.Path(), "", nil)
	if status != http.StatusOK || strings.Contains(string(body), "later") || !strings.Contains(string(body), "etl") {
		t.Errorf("queues answered after the restore: %d %s", status, body)
	}
	// The audit log names the restore.
	status, body = apiCall(t, c, "GET", base+api.AuditLog.Path(), "", nil)
	if status != http.StatusOK || !strings.Contains(string(body), api.SnapshotRestore.Mux()) {
		t.Errorf("audit log: %d %s", status, body)
	}

	// A master that runs alone has no Raft peers.
	if status, body := apiCall(t, c, "GET", base+api.RaftPeers.Path(), "", nil); status != http.StatusConflict || errorCode(body) != wire.CodeNotReplicated {
		t.Errorf("peers of a lone master: %d %s", status, body)
	}
	if status, body := apiCall(t, c, "DELETE", base+api.RemoveRaftPeer.Path("m2"), "", nil); status != http.StatusConflict || errorCode(body) != wire.CodeNotReplicated {
		t.Errorf("remove-peer on a lone master: %d %s", status, body)
	}
	var cs wire.ClusterStatus
	if status, body := apiCall(t, c, "GET", base+api.Cluster.Path(), "", nil); status != http.StatusOK || json.Unmarshal(body, &cs) != nil || cs.Version == "" {
		t.Errorf("/v1/cluster of a lone master: %d, version %q", status, cs.Version)
	}
}

// A Raft master lists its peers, itself the reachable leader with its
// version, and refuses to remove itself (409) or a master it does not
// have (404); /v1/cluster gives each master's version.
func TestRaftPeersOverHTTP(t *testing.T) {
	addr := freeTCPAddr(t)
	r, err := persistence.OpenRaft(persistence.RaftConfig{ID: "m1", Addr: addr, Dir: t.TempDir(), Peers: map[string]string{"m1": addr}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	_, base := runMaster(t, Config{WorkerTimeout: time.Minute}, r, election.NewRaft(r, discardLogger()))
	c := http.DefaultClient
	waitAlive(t, c, base)
	api := wire.MasterAPI
	status, body := apiCall(t, c, "GET", base+api.RaftPeers.Path(), "", nil)
	var peers wire.RaftPeers
	if err := json.Unmarshal(body, &peers); status != http.StatusOK || err != nil || len(peers.Peers) != 1 {
		t.Fatalf("peers: %d %s", status, body)
	}
	p := peers.Peers[0]
	if p.ID != "m1" || p.RaftAddr != addr || !p.Leader || !p.Voter || !p.Reachable || p.State != "Leader" || p.Version != buildVersion() || p.Term == 0 || peers.LeaderID != "m1" {
		t.Errorf("peer %+v of %+v", p, peers)
	}
	status, body = apiCall(t, c, "DELETE", base+api.RemoveRaftPeer.Path("m1"), "", nil)
	if status != http.StatusConflict || errorCode(body) != wire.CodeWrongState || !strings.Contains(string(body), "leader") {
		t.Errorf("removing the leader: %d %s", status, body)
	}
	status, body = apiCall(t, c, "DELETE", base+api.RemoveRaftPeer.Path("m7"), "", nil)
	if status != http.StatusNotFound || errorCode(body) != wire.CodeUnknownMaster || !strings.Contains(string(body), "m1") {
		t.Errorf("removing an unknown master: %d %s", status, body)
	}
	status, body = apiCall(t, c, "DELETE", base+api.RemoveRaftPeer.Path("bad id!"), "", nil)
	if status != http.StatusBadRequest {
		t.Errorf("removing a malformed id: %d %s", status, body)
	}
	servers, _ := r.Servers(context.Background())
	if len(servers) != 1 {
		t.Errorf("configuration after the refusals: %+v", servers)
	}
	var cs wire.ClusterStatus
	status, body = apiCall(t, c, "GET", base+api.Cluster.Path(), "", nil)
	if status != http.StatusOK || json.Unmarshal(body, &cs) != nil || len(cs.Masters) != 1 || cs.Masters[0].Version != buildVersion() || cs.Version != buildVersion() {
		t.Errorf("/v1/cluster: %d %s", status, body)
	}
}

func freeTCPAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The operator's routes admit operators only: a tenant's token, a
// driver's credential, a worker's and another master's certificates are
// refused (403) on each, and nothing changes; an operator's certificate is
// admitted.
func TestOperatorRoutesAreOperatorsOnly(t *testing.T) {
	dir := t.TempDir()
	if err := security.CreateCA(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		role security.Role
		name string
	}{{security.RoleMaster, "m1"}, {security.RoleMaster, "m2"}, {security.RoleWorker, "w1"}, {security.RoleCLI, "ops"}} {
		if err := security.CreateCert(dir, c.role, c.name, []string{"127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	load := func(name string) *security.TLS {
		tl, err := security.Load(security.Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	// The committed state a tenant and a running driver of it, whose
	// credentials the master checks against their hashes.
	tenantToken, driverToken := wire.TenantTokenPrefix+"alpha.secret", wire.DriverTokenPrefix+"driver-20261126120000-0001.secret"
	engine := persistence.NewMemory()
	if err := engine.Write(context.Background(), []persistence.Command{
		persistence.PutTenant(persistence.TenantRecord{Name: "alpha", Queues: []string{wire.DefaultQueue}, TokenHash: tokenHash(tenantToken)}),
		persistence.PutWorker(persistence.WorkerRecord{ID: "w1", Host: "127.0.0.1", Port: 1, Address: "https://127.0.0.1:1", Cores: 1, MemoryMB: 64}),
		persistence.PutDriver(persistence.DriverRecord{ID: "driver-20261126120000-0001", State: wire.DriverRunning, WorkerID: "w1",
			Tenant: "alpha", CredentialHash: tokenHash(driverToken), Desc: wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64}}, 0),
		persistence.PutApp(persistence.AppRecord{ID: "app-20261126120000-0001", State: wire.AppWaiting, Owner: "driver-20261126120000-0001",
			Tenant: "alpha", Desc: wire.AppDescription{Name: "a", Command: []string{"x"}}}, 0),
	}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ID: "m1", Advertise: "https://" + ln.Addr().String(), WorkerTimeout: time.Minute, RecoveryTimeout: time.Minute, TLS: load("m1")}
	m, err := New(cfg, engine, nil, election.NewSingle("m1"), discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	go m.Run(t.Context(), tls.NewListener(ln, cfg.TLS.ServerConfig(tls.VerifyClientCertIfGiven)))
	base := cfg.Advertise
	as := func(name string) *http.Client {
		cc := load("m1").ClientConfig()
		if name != "" {
			cc = load(name).ClientConfig()
		} else {
			cc.Certificates = nil
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cc}, Timeout: 10 * time.Second}
	}
	operator := as("ops")
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _ := apiCall(t, operator, "GET", base+"/v1/queues", "", nil)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the master does not serve: %d", status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The credentials work where they are admitted.
	if status, body := apiCall(t, as(""), "GET", base+"/v1/cluster", tenantToken, nil); status != http.StatusOK {
		t.Fatalf("the tenant's token on its view: %d %s", status, body)
	}
	if status, body := apiCall(t, as(""), "GET", base+wire.MasterAPI.App.Path("app-20261126120000-0001"), driverToken, nil); status != http.StatusOK {
		t.Fatalf("the driver's credential on its app: %d %s", status, body)
	}

	status, file := apiCall(t, operator, "GET", base+wire.MasterAPI.SnapshotSave.Path(), "", nil)
	if status != http.StatusOK {
		t.Fatalf("an operator's save: %d %s", status, file)
	}
	api := wire.MasterAPI
	routes := []struct {
		e    wire.Endpoint
		path string
		body any
	}{
		{api.SnapshotSave.Endpoint, api.SnapshotSave.Path(), nil},
		{api.SnapshotRestore.Endpoint, api.SnapshotRestore.Path(), wire.RestoreRequest{Snapshot: file}},
		{api.SnapshotRestore.Endpoint, api.SnapshotRestore.Path(), wire.RestoreRequest{Snapshot: file, DryRun: true}},
		{api.RaftPeers.Endpoint, api.RaftPeers.Path(), nil},
		{api.RemoveRaftPeer.Endpoint, api.RemoveRaftPeer.Path("m2"), nil},
	}
	for _, r := range routes {
		if r.e.Access != wire.AccessOperator {
			t.Errorf("%s is declared %s, want operators only", r.e.Mux(), r.e.Access)
		}
		for _, who := range []struct {
			name   string
			client *http.Client
			bearer string
		}{
			{"a tenant", as(""), tenantToken},
			{"a driver", as(""), driverToken},
			{"a worker", as("w1"), ""},
			{"another master", as("m2"), ""},
		} {
			status, body := apiCall(t, who.client, r.e.Method, base+r.path, who.bearer, r.body)
			if status != http.StatusForbidden || errorCode(body) != wire.CodeForbidden {
				t.Errorf("%s as %s: %d %s, want 403", r.e.Mux(), who.name, status, body)
			}
		}
		if status, body := apiCall(t, as(""), r.e.Method, base+r.path, "", r.body); status != http.StatusUnauthorized {
			t.Errorf("%s without a credential: %d %s, want 401", r.e.Mux(), status, body)
		}
	}
	// Nothing changed: the tenant's token still works.
	if status, body := apiCall(t, as(""), "GET", base+"/v1/cluster", tenantToken, nil); status != http.StatusOK {
		t.Errorf("the tenant's token after the refusals: %d %s", status, body)
	}
	_ = m
}
