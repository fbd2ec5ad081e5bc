package main

// What berth says when it cannot talk to the masters: at once for what
// retrying cannot fix, naming the flag to change, and with exit codes
// that tell "certainly not done" from "outcome unknown".

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/httpx"
)

// Exit codes beyond 0 (done) and 1 (failed; the message says why).
const (
	// exitNotDone: a change was certainly not made, and nothing else
	// went wrong with it: no master could take it (no leader, no quorum,
	// none reachable). Run it again once a master leads.
	exitNotDone = 3
	// exitUnknown: a change may or may not have been made (a leader lost
	// before it knew whether it committed, a connection dropped).
	exitUnknown = 4
)

// defaultWaitForMaster is --wait-for-master's default: long enough for
// a master's restart to pass unnoticed, short enough that a mistyped
// address or a stopped cluster is said within seconds.
const defaultWaitForMaster = 3 * time.Second

// waitForMasterFlag is the global --wait-for-master.
func waitForMasterFlag() cli.Flag {
	return &cli.DurationFlag{Name: "wait-for-master", Value: defaultWaitForMaster, EnvVars: env("wait-for-master"),
		Usage: "how long to keep trying while no master answers at all (every connection refused) before giving up; raise it to wait for masters that are starting (within --timeout)"}
}

// masterList is --master with a scheme on each URL that has none: https
// when TLS flags are given, http otherwise (as the masters themselves
// choose). Without --master, the default master takes the same scheme.
func masterList(c *cli.Context) string {
	scheme := "http://"
	if c.String("tls-ca-file") != "" || c.String("tls-cert-file") != "" {
		scheme = "https://"
	}
	list := c.String("master")
	if !c.IsSet("master") && scheme == "https://" {
		return strings.Replace(list, "http://", scheme, 1)
	}
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if p = strings.TrimSpace(p); p != "" && !strings.Contains(p, "://") {
			parts[i] = scheme + p
		}
	}
	return strings.Join(parts, ",")
}

// explainFailure turns the client's errors into what the user reads:
// the cause, the flag to change, and the exit code.
func explainFailure(err error) error {
	if err == nil {
		return nil
	}
	var ce *client.ConfigError
	var nm *client.NoMasterError
	var se *httpx.StatusError
	switch {
	case errors.As(err, &ce):
		return hinted{err, configHint(ce)}
	case errors.As(err, &nm):
		code := 1
		if errors.Is(err, client.ErrNotDone) { // a change, certainly not made
			code = exitNotDone
		}
		return exitHinted{hinted{err, "--master: is a master running at these addresses, and are they the right ones? (--wait-for-master 1m waits for one that is starting)"}, code}
	case errors.Is(err, client.ErrNotDone):
		return exitHinted{hinted{err, "nothing was changed: no master could take it (no leader, or no quorum: berth status says which); run it again once a master leads"}, exitNotDone}
	case errors.Is(err, client.ErrUnknownOutcome):
		return exitHinted{err, exitUnknown}
	case errors.As(err, &se) && se.Status == 400 && se.Code == "":
		// Not a berth master's answer (those carry a code): most often an
		// http:// URL to a master that speaks TLS.
		return hinted{err, "--master: that is not how a berth master answers; if it speaks TLS, write https:// and give --tls-ca-file"}
	}
	return err
}

// configHint names the flag to change for a ConfigError.
func configHint(ce *client.ConfigError) string {
	switch ce.Problem {
	case client.ProblemUnknownAuthority:
		return "--tls-ca-file: give the CA that signed the masters' certificates (the ca.pem of berth tls ca create); without it, only the system's CAs are trusted"
	case client.ProblemHostname:
		var he x509.HostnameError
		if errors.As(ce, &he) && he.Certificate != nil {
			names := append([]string(nil), he.Certificate.DNSNames...)
			for _, ip := range he.Certificate.IPAddresses {
				names = append(names, ip.String())
			}
			return fmt.Sprintf("--master: call the master by a name its certificate holds (%s), or make its certificate with --host %s", strings.Join(names, ", "), he.Host)
		}
		return "--master: call the master by a name its certificate holds (berth tls cert create --host)"
	case client.ProblemCertificate:
		return "the master's certificate is not valid (expired, not yet valid, or not a master's): make it again with berth tls cert create --role master, or check --master and --tls-ca-file"
	case client.ProblemClientCertificate:
		return "--tls-cert-file, --tls-key-file: the master refused this client's certificate; give a cli certificate of the cluster's CA (berth tls cert create --role cli), or no certificate and the secret (--secret-file)"
	case client.ProblemHandshake:
		return "--tls-ca-file, --tls-cert-file: the master and this client share no TLS version or cipher suite; are both berth's, of this release?"
	case client.ProblemNotTLS:
		return "--master: that master speaks plain HTTP: write http:// (or start it with TLS)"
	case client.ProblemDNS:
		var dns *net.DNSError
		if errors.As(ce, &dns) {
			return fmt.Sprintf("--master: no host %q: check the name", dns.Name)
		}
		return "--master: check the host names"
	}
	return "check --master and the --tls-* flags"
}

// exitHinted is an error with its exit code (cli.ExitCoder).
type exitHinted struct {
	error
	code int
}

func (e exitHinted) ExitCode() int { return e.code }
func (e exitHinted) Unwrap() error { return e.error }

// submissionFailed says "not submitted" of a submission (berth submit,
// berth run) that certainly was not made; explainFailure adds the hint
// and the exit code.
func submissionFailed(err error) error {
	if errors.Is(err, client.ErrNotDone) {
		return fmt.Errorf("not submitted: %w", err)
	}
	return err
}
