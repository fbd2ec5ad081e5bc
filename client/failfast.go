package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Failing fast. Retrying is for what time mends: an election, a master
// restarting, a dropped connection. Some failures it cannot mend, and a
// client that retried them for its whole budget would only hide the cause
// for 30 s:
//
//   - a master whose certificate this client cannot verify (another CA,
//     another host name, expired), or that refuses this client's
//     certificate; an https URL to a master that speaks plain HTTP;
//   - a host name that does not resolve.
//
// Such a master is left out of the call; when every master is, the call
// fails at once with a *ConfigError saying why. And when no master
// answers at all (every connection refused), a client that has never
// reached one fails after WithWaitForMaster's patience with a
// *NoMasterError, not after its retry budget.

// ErrNotDone: a write gave up (its retry budget or its context ended)
// after attempts none of which may have been acted on: every master
// that answered refused it before proposing it (no leader, no quorum, a
// full disk: wire.CodeNoLeader, CodeNotCommitted, ...), and the others
// were not reached. Nothing changed; it is safe to send again later.
// It is the opposite of ErrUnknownOutcome.
var ErrNotDone = errors.New("not done: no master took the request, and none acted on it")

// Problem is what a ConfigError found wrong.
type Problem string

// The problems of a ConfigError.
const (
	// ProblemUnknownAuthority: the master's certificate is not signed by
	// the CA this client trusts.
	ProblemUnknownAuthority Problem = "unknown-authority"
	// ProblemHostname: the master's certificate is not for the host name
	// the client called it by.
	ProblemHostname Problem = "hostname"
	// ProblemCertificate: the master's certificate is invalid otherwise
	// (expired, not yet valid, not a master's).
	ProblemCertificate Problem = "certificate"
	// ProblemClientCertificate: the master refused this client's
	// certificate, or wants one and got none.
	ProblemClientCertificate Problem = "client-certificate"
	// ProblemHandshake: the master refused the TLS handshake (no
	// version or cipher suite in common).
	ProblemHandshake Problem = "handshake"
	// ProblemNotTLS: an https URL to a server that speaks plain HTTP.
	ProblemNotTLS Problem = "not-tls"
	// ProblemDNS: the host name does not resolve.
	ProblemDNS Problem = "dns"
)

// ConfigError is a failure retrying cannot fix: how the client is set up
// (its master URLs, its CA, its certificate) does not fit the masters.
type ConfigError struct {
	Problem Problem
	Master  string // the master's base URL
	Err     error  // what the attempt got
}

func (e *ConfigError) Error() string {
	what := map[Problem]string{
		ProblemUnknownAuthority:  "its certificate is not signed by the CA this client trusts",
		ProblemHostname:          "its certificate is not for the host name it was called by",
		ProblemCertificate:       "its certificate is not valid",
		ProblemClientCertificate: "it refused this client's certificate (or wants one and got none)",
		ProblemHandshake:         "it refused the TLS handshake",
		ProblemNotTLS:            "it does not speak TLS (an https URL to a plain HTTP server)",
		ProblemDNS:               "its host name does not resolve",
	}[e.Problem]
	return fmt.Sprintf("master %s: %s: %v", e.Master, what, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// NoMasterError: no master answered at all (every connection refused or
// unreachable) for the client's patience (WithWaitForMaster).
type NoMasterError struct {
	// Refused maps each master to its last failure.
	Refused map[string]error
	// Waited is how long the client tried.
	Waited time.Duration
}

func (e *NoMasterError) Error() string {
	var parts []string
	for m, err := range e.Refused {
		parts = append(parts, fmt.Sprintf("%s: %s", m, shortCause(err)))
	}
	return fmt.Sprintf("no master answers (tried for %s): %s", e.Waited.Round(10*time.Millisecond), strings.Join(sortedStrings(parts), "; "))
}

// WithWaitForMaster bounds how long a client that has not reached any
// master yet keeps trying while every master refuses its connections (no
// process listens, nothing routes there): past it, a call fails with a
// *NoMasterError. 0 (the default) waits for the whole retry budget. Once
// a master has answered, outages are ridden out within the budget as
// before (a failover, a restart).
func WithWaitForMaster(d time.Duration) Option { return func(c *Client) { c.waitForMaster = d } }

// configProblem classifies err, a failed attempt on master, as a problem
// retrying cannot fix; nil if it is not one.
func configProblem(master string, err error) *ConfigError {
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		verifyErr *tls.CertificateVerificationError
		alert     tls.AlertError
		record    tls.RecordHeaderError
		dnsErr    *net.DNSError
		op        *net.OpError
	)
	p := Problem("")
	var refused *peerRefused
	switch {
	case errors.As(err, &refused):
		p = ProblemCertificate
	case errors.As(err, &unknownCA):
		p = ProblemUnknownAuthority
	case errors.As(err, &hostErr):
		p = ProblemHostname
	case errors.As(err, &invalid), errors.As(err, &verifyErr):
		p = ProblemCertificate
	case errors.As(err, &alert):
		p = alertProblem(uint8(alert))
	case errors.As(err, &op) && op.Op == "remote error":
		// The master sent an alert: crypto/tls gives it as an OpError
		// of its own (unexported) alert type, a uint8.
		if v := reflect.ValueOf(op.Err); v.IsValid() && v.Kind() == reflect.Uint8 {
			p = alertProblem(uint8(v.Uint()))
		}
	case errors.As(err, &record), errors.Is(err, http.ErrSchemeMismatch):
		// net/http turns the record header error of a plain HTTP
		// answer ("HTTP/") into ErrSchemeMismatch.
		p = ProblemNotTLS
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			p = ProblemDNS
		}
	}
	if p == "" {
		return nil
	}
	return &ConfigError{Problem: p, Master: master, Err: err}
}

// alertProblem is what a TLS alert from the master says is wrong: it
// refused this client's certificate (or wants one), or the handshake.
func alertProblem(code uint8) Problem {
	switch code {
	case 42, 43, 44, 45, 46, 48, 116: // bad, unsupported, revoked, expired, unknown certificate; unknown CA; certificate required
		return ProblemClientCertificate
	case 40, 70, 71: // handshake failure, protocol version, insufficient security
		return ProblemHandshake
	}
	return ""
}

// unreachable reports whether err says nothing listens at the master's
// address or nothing routes there: the attempt reached no master.
func unreachable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// preSend reports whether err happened before the request could leave:
// the connection or its TLS handshake failed. Such an attempt did
// nothing, whatever it was.
func preSend(err error) bool {
	return notSent(err) || unreachable(err) || configProblem("", err) != nil
}

// outage tracks, within one call, the masters that answered nothing at
// all and since when none has: the run of attempts that reached no
// master, which any answer ends.
type outage struct {
	since   time.Time
	refused map[string]error
}

// add counts a failed attempt on master: an HTTP answer (se != nil) ends
// the run; an unreachable master joins it.
func (o *outage) add(master string, err error, answered bool) {
	if answered {
		o.since, o.refused = time.Time{}, nil
		return
	}
	if !unreachable(err) {
		return
	}
	if o.refused == nil {
		o.since, o.refused = time.Now(), map[string]error{}
	}
	o.refused[master] = err
}

// hopeless reports whether a client that never reached a master should
// give up: every master it may try refused within the run, for longer
// than it waits for one.
func (c *Client) hopeless(o *outage, broken map[string]*ConfigError) bool {
	if c.waitForMaster <= 0 || c.reached.Load() || o.refused == nil || time.Since(o.since) < c.waitForMaster {
		return false
	}
	for _, m := range c.masters {
		if _, ok := o.refused[m]; !ok && broken[m] == nil {
			return false
		}
	}
	return true
}

// unasked is the first master that this call has neither heard no_quorum
// from nor found unreachable or broken, "" if none.
func (c *Client) unasked(quorumless, gone map[string]bool, broken map[string]*ConfigError) string {
	for _, m := range c.masters {
		if !quorumless[m] && !gone[m] && broken[m] == nil {
			return m
		}
	}
	return ""
}

// nextUsable is the master after target to try, skipping those found
// broken in this call ("" when every master is).
func (c *Client) nextUsable(target string, timedOut bool, broken map[string]*ConfigError) string {
	next := c.failed(target, timedOut)
	for range len(c.masters) + 1 {
		if broken[next] == nil {
			return next
		}
		next = c.failed(next, false)
	}
	return ""
}

// shortCause is the end of an error chain that says what happened to a
// connection ("connection refused"), without the request before it.
func shortCause(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}

// peerRefused is the error of a TLS configuration's own check of the
// master it reached (VerifyConnection: its certificate's role), as
// verifiedTLS wraps it.
type peerRefused struct{ err error }

func (e *peerRefused) Error() string { return e.err.Error() }
func (e *peerRefused) Unwrap() error { return e.err }

// verifiedTLS is cfg (a copy) whose VerifyConnection's refusal is a
// peerRefused, which configProblem knows: the server is not what the
// client was told to call (a worker's address given for a master's).
func verifiedTLS(cfg *tls.Config) *tls.Config {
	if cfg == nil || cfg.VerifyConnection == nil {
		return cfg
	}
	cfg = cfg.Clone()
	check := cfg.VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := check(cs); err != nil {
			return &peerRefused{err}
		}
		return nil
	}
	return cfg
}

// noQuorumAnywhere reports whether a call should end for want of a
// quorum: a master said so (no_quorum), and every other one did too, is
// unreachable, or is broken. A master of a partition's minority says
// no_quorum while the majority may have a leader: the call tries them
// all before it gives up.
func (c *Client) noQuorumAnywhere(quorumless, gone map[string]bool, broken map[string]*ConfigError) bool {
	return len(quorumless) > 0 && c.unasked(quorumless, gone, broken) == ""
}
