package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/internal/testproc"
	"github.com/berth-cluster/berth/security"
)

// The contract of `berth tls`: the files it writes, the role and hosts in
// the certificate, and bad flags named.
func TestTLSCommandsWriteTheCAAndRoleCertificates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	run := func(args ...string) testproc.Result {
		t.Helper()
		return testproc.RunBinary(t, berthBin, nil, args...)
	}
	if r := run("tls", "ca", "create", "--dir", dir); r.Code != 0 || !strings.Contains(r.Stdout, "ca.pem") {
		t.Fatalf("ca create: %+v", r)
	}
	if r := run("tls", "cert", "create", "--dir", dir, "--role", "worker", "--name", "w7", "--host", "10.0.1.7, w7.example"); r.Code != 0 {
		t.Fatalf("cert create: %+v", r)
	}
	m, err := security.Load(security.Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "w7.pem"), Key: filepath.Join(dir, "w7-key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	if m.Identity() != (security.Identity{Role: security.RoleWorker, Name: "w7"}) {
		t.Errorf("identity %+v", m.Identity())
	}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"tls", "ca", "create", "--dir", dir}, "exists"},
		{[]string{"tls", "cert", "create", "--dir", dir, "--role", "root", "--name", "x", "--host", "h"}, "--role"},
		{[]string{"tls", "cert", "create", "--dir", dir, "--role", "master", "--name", "m1"}, "--host"},
		{[]string{"tls", "cert", "create", "--dir", dir, "--role", "cli", "--name", "../up"}, "--name"},
		{[]string{"tls", "cert", "create", "--dir", dir, "--role", "worker", "--name", "w7", "--host", "h"}, "exists"},
		{[]string{"tls", "cert", "create", "--dir", t.TempDir(), "--role", "cli", "--name", "x"}, "berth tls ca create"},
	} {
		if r := run(c.args...); r.Code == 0 || !strings.Contains(r.Stderr, c.flag) {
			t.Errorf("%q: exit %d, stderr %q; want an error naming %s", c.args, r.Code, r.Stderr, c.flag)
		}
	}
}
