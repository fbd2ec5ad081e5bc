package client

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

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
// path (its query left out: Location's is cut off too). A bare host:port
// takes the scheme of the master that redirected.
func leaderBase(se *httpx.StatusError, from, reqPath string) (string, error) {
	reqPath, _, _ = strings.Cut(reqPath, "?")
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
	if f, err := url.Parse(from); err == nil && f.Scheme == "https" && u.Scheme != "https" {
		// The request and its credential (a bearer token, the secret)
		// would go out in clear text to wherever the master was told.
		return "", fmt.Errorf("a redirect from https to %s is refused: the request would carry this client's credential in clear text", u.Scheme)
	}
	return wire.ParseMasterURL("leader", u.String())
}
