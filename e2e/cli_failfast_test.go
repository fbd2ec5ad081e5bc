package e2e

// berth fails at once on what retrying cannot fix (issue 24), naming the
// cause and the flag to change, instead of retrying for its 30 s budget:
// a CA that did not sign the masters' certificates, a client certificate
// the master refuses, a host that does not resolve, a URL that does not
// parse, an http URL to a TLS master, an https URL to a plain-HTTP one, a
// master whose certificate is for another host name, and no credential
// at all. When no
// master answers at all it gives up within a few seconds, unless
// --wait-for-master asks it to wait longer; a --master without a scheme
// is taken as https with TLS flags.

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCLIFailsFastOnWhatRetryingCannotFix(t *testing.T) {
	t.Parallel()
	cl := daemonCluster(t, nil, 1)
	url := cl.URLs()[0]
	other := t.TempDir() // another CA, and a cli certificate of it
	for _, args := range [][]string{{"tls", "ca", "create", "--dir", other}, {"tls", "cert", "create", "--dir", other, "--role", "cli", "--name", "stranger"}} {
		if r := runBerth(t, args...); r.code != 0 {
			t.Fatalf("berth %v: %s", args, r)
		}
	}
	// A CA file trusting both CAs: berth then takes the stranger's
	// certificate, and the master refuses it.
	both := filepath.Join(other, "both.pem")
	var pems []byte
	for _, f := range []string{bin.PKI.CAFile(), filepath.Join(other, "ca.pem")} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pems = append(pems, data...)
	}
	if err := os.WriteFile(both, pems, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "https://" + ln.Addr().String() // nobody listens there once closed
	ln.Close()
	hostPort := strings.TrimPrefix(url, "https://")
	misnamed := misnamedMaster(t)
	plain := httptest.NewServer(http.NotFoundHandler()) // as a master started without TLS answers a TLS hello: not at all
	t.Cleanup(plain.Close)

	cases := []struct {
		name string
		args []string
		// want: in stderr (the cause, the flag to fix); exit: the code.
		want []string
		exit int
		// within: the most it may take.
		within time.Duration
	}{
		{"no CA given", []string{"--master", url, "--secret", secret, "status"},
			[]string{"not signed by the CA this client trusts", "--tls-ca-file"}, 1, 2 * time.Second},
		{"another CA", []string{"--master", url, "--secret", secret, "--tls-ca-file", filepath.Join(other, "ca.pem"), "status"},
			[]string{"not signed by the CA this client trusts", "--tls-ca-file"}, 1, 2 * time.Second},
		{"a client certificate of another CA", []string{"--master", url, "--tls-ca-file", bin.PKI.CAFile(),
			"--tls-cert-file", filepath.Join(other, "stranger.pem"), "--tls-key-file", filepath.Join(other, "stranger-key.pem"), "status"},
			[]string{"--tls-cert-file", "is not of the CA in --tls-ca-file"}, 1, 2 * time.Second},
		{"a client certificate the master refuses", []string{"--master", url, "--tls-ca-file", both,
			"--tls-cert-file", filepath.Join(other, "stranger.pem"), "--tls-key-file", filepath.Join(other, "stranger-key.pem"), "status"},
			[]string{"refused this client's certificate", "--tls-cert-file"}, 1, 2 * time.Second},
		{"a host that does not resolve", []string{"--master", "https://no-such-master.invalid:7077", "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "status"},
			[]string{"does not resolve", `--master: no host "no-such-master.invalid"`}, 1, 2 * time.Second},
		{"a URL that does not parse", []string{"--master", "https://127.0.0.1:port", "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "status"},
			[]string{"--master"}, 1, 2 * time.Second},
		{"http to a TLS master", []string{"--master", "http://" + hostPort, "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "status"},
			[]string{"--master", "write https://"}, 1, 2 * time.Second},
		{"a certificate for another host name", []string{"--master", misnamed, "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "status"},
			[]string{"--master: call the master by a name its certificate holds (master.example)", "--host 127.0.0.1"}, 1, 2 * time.Second},
		{"https to a plain-HTTP master", []string{"--master", strings.Replace(plain.URL, "http://", "https://", 1), "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "status"},
			[]string{"--master: that master speaks plain HTTP: write http://"}, 1, 2 * time.Second},
		{"a submission without a certificate or the secret", []string{"--master", url, "--tls-ca-file", bin.PKI.CAFile(), "submit", "--", "/bin/true"},
			[]string{"no client certificate (--tls-cert-file and --tls-key-file"}, 1, 2 * time.Second},
		{"no master listening", []string{"--master", closed, "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "status"},
			[]string{"no master answers", "connection refused", "--master", "--wait-for-master"}, 1, 5 * time.Second},
		{"no master listening, a submission", []string{"--master", closed, "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "submit", "--", "/bin/true"},
			[]string{"not submitted", "no master answers", "--wait-for-master"}, 3, 5 * time.Second},
	}
	for _, c := range cases {
		r := runBerth(t, c.args...)
		t.Logf("%s: %s, %s", c.name, r.took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
		if r.code != c.exit || r.took > c.within || strings.Contains(r.stderr, "refused the secret") {
			t.Errorf("%s: %s\nwant exit %d within %s", c.name, r, c.exit, c.within)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q: %s", c.name, w, r)
			}
		}
	}

	// --wait-for-master asks for patience: it keeps trying that long.
	r := runBerth(t, "--master", closed, "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "--wait-for-master", "5s", "status")
	if r.code != 1 || r.took < 5*time.Second || r.took > 9*time.Second || !strings.Contains(r.stderr, "no master answers") {
		t.Errorf("--wait-for-master 5s: %s", r)
	}
	if r := runBerth(t, "--master", closed, "--wait-for-master", "-1s", "status"); r.code != 1 || !strings.Contains(r.stderr, "--wait-for-master -1s") {
		t.Errorf("a negative --wait-for-master: %s", r)
	}

	// host:port alone: https, since TLS flags are given; it works.
	r = runBerth(t, "--master", hostPort, "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "status")
	if r.code != 0 || !strings.Contains(r.stdout, "Master m1") {
		t.Errorf("--master %s (no scheme) with TLS flags: %s", hostPort, r)
	}
}

// misnamedMaster serves TLS on 127.0.0.1 with a master certificate of the
// test CA made for master.example only, and returns its https URL: a
// master called by a name its certificate does not hold.
func misnamedMaster(t *testing.T) string {
	t.Helper()
	dir := t.TempDir() // the test CA copied: the shared one is left as it is
	for _, f := range []string{"ca.pem", "ca-key.pem"} {
		data, err := os.ReadFile(filepath.Join(bin.PKI.Dir, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), data, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if r := runBerth(t, "tls", "cert", "create", "--dir", dir, "--role", "master", "--name", "elsewhere", "--host", "master.example"); r.code != 0 {
		t.Fatalf("berth tls cert create: %s", r)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "elsewhere.pem"), filepath.Join(dir, "elsewhere-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}
