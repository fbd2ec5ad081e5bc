package wire

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// DefaultMasterPort is the port of a master's API URL that names none: the
// master's own --port default, and Spark standalone's.
const DefaultMasterPort = 7077

// ParseMasterURL is the one rule for a master's API base URL, wherever it
// comes from (--master, EnvMaster, --advertise, a leader a master names):
// http://host[:port] or https://host[:port], the port DefaultMasterPort
// when missing. It returns the URL in one form, scheme://host:port, so
// that two spellings of a master compare equal.
//
// A path beyond "/", a query, a fragment and user info are refused: the API
// is at the root of a master's address, and anything more would be dropped
// without a word or send requests, and the secret with them, elsewhere. A
// bare host:port is refused with the URL to write instead: http or https
// depends on the cluster's TLS, which this rule cannot guess. name is what
// the errors call s: a flag (--master) or a field (apiAddr).
func ParseMasterURL(name, s string) (string, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) error {
		return fmt.Errorf("%s %q: %s (want http://host[:port] or https://host[:port], port %d by default)", name, s, why, DefaultMasterPort)
	}
	if !strings.Contains(s, "://") {
		if host, port, err := net.SplitHostPort(s); err == nil && host != "" && port != "" {
			return "", fmt.Errorf("%s %q: no scheme: write http://%s, or https://%s with TLS", name, s, s, s)
		}
		return "", bad("not an http(s) URL")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", name, s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("scheme must be http or https")
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", bad("user info, query and fragment are not allowed")
	case u.Path != "" && u.Path != "/":
		return "", bad("a path is not allowed: the API is at the root of a master's address")
	case u.Hostname() == "":
		return "", bad("no host")
	}
	port := u.Port()
	if port == "" {
		port = strconv.Itoa(DefaultMasterPort)
	} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", bad("port must be 1-65535")
	}
	return (&url.URL{Scheme: u.Scheme, Host: net.JoinHostPort(u.Hostname(), port)}).String(), nil
}

// ParseMasterURLs parses a comma-separated list of masters' API base URLs
// (--master, EnvMaster), each by ParseMasterURL. Blanks are dropped and a
// master given twice is kept once, in the order given. An empty list is an
// error: there is no master to talk to.
func ParseMasterURLs(name, list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		base, err := ParseMasterURL(name, s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, base) {
			out = append(out, base)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is required: the masters' API URLs, comma-separated, e.g. http://10.0.0.1:7077,http://10.0.0.2:7077", name)
	}
	return out, nil
}
