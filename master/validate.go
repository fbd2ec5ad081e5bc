package master

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

// Requests are checked before they reach the loop: a bad one gets a 400
// with the reason and changes nothing.

var safeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

func badRequest(format string, args ...any) error {
	return httpx.Errorf(http.StatusBadRequest, format, args...)
}

func checkID(kind, id string) error {
	if !safeID.MatchString(id) {
		return badRequest("%s %q is not a valid id (letters, digits, . _ -; at most 200)", kind, id)
	}
	return nil
}

// maxIdempotencyKey bounds a key's length: it is stored with the record.
const maxIdempotencyKey = 128

// checkIdempotencyKey checks the values of an Idempotency-Key header and
// returns the key without its optional quotes ("" when there is none).
func checkIdempotencyKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", badRequest("%s: one key per request, got %d", wire.IdempotencyKeyHeader, len(values))
	}
	key := values[0]
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	if key == "" || len(key) > maxIdempotencyKey {
		return "", badRequest("%s: the key must have 1 to %d characters", wire.IdempotencyKeyHeader, maxIdempotencyKey)
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:+/=", r)) {
			return "", badRequest("%s: character %q is not allowed (letters, digits and -_.:+/= are)", wire.IdempotencyKeyHeader, r)
		}
	}
	return key, nil
}

func validateRegistration(r wire.RegisterWorker) error {
	if err := checkID("worker id", r.ID); err != nil {
		return err
	}
	if r.Host == "" || strings.ContainsAny(r.Host, "/ ") || !termtext.Safe(r.Host) {
		return badRequest("host %q is not a host name or address", r.Host)
	}
	if err := admission.Range("port", r.Port, 1, 65535); err != nil {
		return err
	}
	if err := admission.Range("cores", r.Cores, 1, wire.MaxCores); err != nil {
		return err
	}
	if err := admission.Range("memoryMB", r.MemoryMB, 1, wire.MaxMemoryMB); err != nil {
		return err
	}
	if r.PortRange != nil {
		if err := r.PortRange.Check(); err != nil {
			return badRequest("portRange: %v", err)
		}
	}
	if err := wire.CheckResourceOffer(r.Resources); err != nil {
		return badRequest("resources: %v", err)
	}
	if err := wire.CheckLabels(r.Labels); err != nil {
		return badRequest("%v", err)
	}
	// The master sends commands (and, without TLS, the secret) to this
	// address: exactly the registration's own host and port, with no
	// path, query or user that could point a request elsewhere.
	hostport := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	if r.Address != "http://"+hostport && r.Address != "https://"+hostport {
		return badRequest("address %q: want exactly http://%s or https://%s (the registration's host and port, nothing else)", r.Address, hostport, hostport)
	}
	return nil
}

// maxDrainDeadline bounds a drain's deadline (a week).
const maxDrainDeadline = 7 * 24 * 3600

func validateDrain(d wire.DrainRequest) error {
	return admission.Range("deadlineSeconds", d.DeadlineSeconds, 0, maxDrainDeadline)
}

func validateHeartbeat(h wire.Heartbeat) error {
	if len(h.DiskFull) > wire.MaxDiskFullLen || !termtext.Safe(h.DiskFull) {
		return badRequest("diskFull: at most %d bytes of text without control characters", wire.MaxDiskFullLen)
	}
	if len(h.BusyPorts) > wire.MaxBusyPorts {
		return badRequest("busyPorts: %d ports, more than %d", len(h.BusyPorts), wire.MaxBusyPorts)
	}
	for _, p := range h.BusyPorts {
		if p < 1 || p > 65535 {
			return badRequest("busyPorts: %d is not a port", p)
		}
	}
	return nil
}

func validateExecutorState(m wire.ExecutorStateChanged) error {
	if err := checkID("app id", m.AppID); err != nil {
		return err
	}
	if m.ExecutorID < 0 || m.ExecutorID >= maxExecutorID {
		return badRequest("executorId %d is out of range", m.ExecutorID)
	}
	if !m.State.Valid() {
		return badRequest("unknown executor state %q", m.State)
	}
	return nil
}

func validateDriverState(m wire.DriverStateChanged) error {
	if err := checkID("driver id", m.DriverID); err != nil {
		return err
	}
	if !m.State.Valid() || m.State == wire.DriverUnknown || m.State == wire.DriverRelaunching {
		return badRequest("a worker cannot report driver state %q", m.State)
	}
	return nil
}

func validateLatestState(r wire.WorkerLatestState) error {
	for _, e := range r.Executors {
		if err := checkID("app id", e.AppID); err != nil {
			return err
		}
		if e.ExecutorID < 0 || e.ExecutorID >= maxExecutorID || !e.State.Valid() || e.Cores < 0 || e.Cores > wire.MaxCores || e.MemoryMB < 0 || e.MemoryMB > wire.MaxMemoryMB {
			return badRequest("executor %s/%d: bad id, state, cores or memory", e.AppID, e.ExecutorID)
		}
		if err := checkGrants(e.Resources); err != nil {
			return badRequest("executor %s/%d: %v", e.AppID, e.ExecutorID, err)
		}
	}
	for _, d := range r.Drivers {
		if err := checkID("driver id", d.DriverID); err != nil {
			return err
		}
		if !d.State.Valid() || d.State == wire.DriverUnknown || d.State == wire.DriverRelaunching {
			return badRequest("driver %s: a worker cannot report state %q", d.DriverID, d.State)
		}
		if err := checkGrants(d.Resources); err != nil {
			return badRequest("driver %s: %v", d.DriverID, err)
		}
	}
	return nil
}

// checkGrants checks the shape of reported resource grants (the master
// counts only the addresses the worker offers).
func checkGrants(g wire.ResourceGrants) error {
	if len(g) > wire.MaxResources {
		return fmt.Errorf("%d resources, at most %d", len(g), wire.MaxResources)
	}
	for name, grant := range g {
		if !wire.ValidResourceName(name) || len(grant.Addresses) == 0 || len(grant.Addresses) > wire.MaxResourceAddresses ||
			!(grant.Share >= 0 && grant.Share < 1) || (grant.Share > 0 && len(grant.Addresses) != 1) {
			return fmt.Errorf("resource %q: malformed grant", name)
		}
	}
	return nil
}

func checkStream(s string) error {
	if err := wire.CheckLogStream(s); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

func checkExecutorID(s string) (int, error) {
	id, err := strconv.Atoi(s)
	if err != nil || id < 0 || id >= maxExecutorID {
		return 0, badRequest("executor id %q is not a number from 0 to %d", s, maxExecutorID-1)
	}
	return id, nil
}

// parseBoolParam reads a true/false query parameter (default true).
func parseBoolParam(name, q string) (bool, error) {
	switch q {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, badRequest("%s %q: want true or false", name, q)
}

func validateExecutorLimit(l wire.ExecutorLimit) error {
	return admission.Range("limit", l.Limit, 0, wire.MaxCores*1024)
}

func validateKillExecutors(k wire.KillExecutors) error {
	for _, e := range k.ExecutorIDs {
		if e < 0 || e >= maxExecutorID {
			return badRequest("executor id %d is out of range", e)
		}
	}
	return nil
}

func validateJoin(j wire.JoinRequest) error {
	if err := checkID("master id", j.ID); err != nil {
		return err
	}
	if _, _, err := httpx.SplitHostPort(j.RaftAddr); err != nil {
		return badRequest("raftAddr %q: %v", j.RaftAddr, err)
	}
	// The address clients are sent to once this master leads: the rule of
	// every master URL.
	if _, err := wire.ParseMasterURL("apiAddr", j.APIAddr); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

func validateLeave(l wire.LeaveRequest) error { return checkID("master id", l.ID) }
