package client

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/berth-cluster/berth/internal/httpx"
)

// ParseMasterURL checks that s is a master's API base URL,
// http(s)://host:port with an optional path prefix, and returns it without
// a trailing slash.
func ParseMasterURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("master address %q: %w", s, err)
	}
	bad := func(why string) error {
		return fmt.Errorf("master address %q: %s (want http://host:port or https://host:port)", s, why)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("scheme must be http or https")
	case u.Hostname() == "":
		return "", bad("no host")
	case u.Port() == "":
		return "", bad("no port")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", bad("user info, query and fragment are not allowed")
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return "", bad("port must be 1-65535")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// SplitMasters splits a comma-separated list of masters (the form of
// --master and wire.EnvMaster), dropping blanks.
func SplitMasters(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// leaderBase is the base URL of the leader a 307 names: a master names it
// in its body; a redirect from elsewhere (a proxy) has only Location, the
// full URL of the request there, whose base is what precedes the request's
// path. A bare host:port takes the scheme of the master that redirected.
func leaderBase(se *httpx.StatusError, from, reqPath string) (string, error) {
	leader := se.Leader
	if leader == "" {
		leader = se.Location
	}
	if !strings.Contains(leader, "://") {
		scheme := "http"
		if u, err := url.Parse(from); err == nil {
			scheme = u.Scheme
		}
		leader = scheme + "://" + leader
	}
	u, err := url.Parse(leader)
	if err != nil {
		return "", err
	}
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	u.Path = strings.TrimSuffix(u.Path, reqPath)
	return ParseMasterURL(u.String())
}
