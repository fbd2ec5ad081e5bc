package httpx

import (
	"fmt"
	"net"
	"net/netip"
)

// CheckBind refuses to expose an unauthenticated API: without credentials
// (a secret or TLS) only a loopback host may be bound. flag names the
// option the host came from.
func CheckBind(host string, authenticated bool, flag string) error {
	if authenticated || IsLoopback(host) {
		return nil
	}
	return fmt.Errorf("%s %q is not a loopback address: without credentials (--tls-*-file or --secret-file) berth listens on loopback only", flag, host)
}

// IsLoopback reports whether host is a loopback IP or "localhost".
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}

// SplitHostPort splits "host:port" and checks the port.
func SplitHostPort(hostport string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, err
	}
	port, err := net.LookupPort("tcp", portStr)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}
