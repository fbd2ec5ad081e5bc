package httpx

import (
	"errors"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Guard refuses the requests a web page can make a browser send
// (cross-site request forgery, DNS rebinding), with 403 forbidden:
//   - a state-changing request (POST, PUT, PATCH, DELETE) with a body that
//     is not Content-Type application/json: a page can send text/plain and
//     form bodies cross-site without asking, JSON it cannot;
//     (The web UI's forms, posted to the routes wire declares for them,
//     are form-encoded: the UI checks their CSRF token instead.)
//   - any request whose Origin is not the server's own;
//   - when loopbackOnly (no credential at all, so everyone who reaches the
//     server is an operator), a request whose Host is not a loopback name
//     or address: a rebound DNS name reaches 127.0.0.1 with its own Host.
//
// GET /healthz always passes.
func Guard(h http.Handler, loopbackOnly bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.MasterAPI.Health.Pattern && r.Method == http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		if reason := refuse(r, loopbackOnly); reason != "" {
			WriteErr(w, r, Coded(http.StatusForbidden, wire.CodeForbidden, "%s", reason))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func refuse(r *http.Request, loopbackOnly bool) string {
	if loopbackOnly {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !IsLoopback(host) {
			return "Host " + r.Host + " is not a loopback address: this server has no credentials and serves loopback only"
		}
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			return "cross-site request refused: Origin " + origin + " is not this server"
		}
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		if r.ContentLength != 0 {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err == nil && mt == "application/x-www-form-urlencoded" && isUIForm(r) {
				break // the UI's forms: each carries the UI's CSRF token, checked by the UI
			}
			if err != nil || mt != "application/json" {
				return "a request body must be Content-Type: application/json"
			}
		}
	}
	return ""
}

// uiForms matches the routes wire declares for the web UI's forms (the
// same on master and worker). The guard runs before any route is chosen,
// so it asks the declarations rather than the handler.
var uiForms = func() *http.ServeMux {
	mux := http.NewServeMux()
	ui := wire.MasterAPI.UI
	for _, e := range []wire.Endpoint{ui.UIActions.Endpoint, ui.UISignInForm.Endpoint, ui.UISignOut.Endpoint} {
		mux.Handle(e.Mux(), http.NotFoundHandler())
	}
	return mux
}()

// isUIForm reports whether r is posted to one of the UI's form routes.
func isUIForm(r *http.Request) bool {
	_, pattern := uiForms.Handler(r)
	return pattern != ""
}

// Server timeouts: a client must send its headers promptly and its whole
// request within ReadTimeout, take its answer within WriteTimeout, and an
// idle keep-alive connection is closed (it would otherwise hold a file
// descriptor for ever: 1,500 idle connections opened after an
// unauthenticated /healthz all stayed). ReadTimeout also bounds a
// handler's run: once it passes, the server's background read fails and
// cancels the request's context. A long-lived response (an event stream)
// lifts both with LongLived and bounds each of its writes instead.
var (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 60 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 90 * time.Second
)

// LongLived lifts the server's read and write timeouts from a response
// that stays open for as long as its client reads; it must then bound its
// writes itself (WriteWithin).
func LongLived(w http.ResponseWriter) error {
	rc := http.NewResponseController(w)
	return errors.Join(rc.SetReadDeadline(time.Time{}), rc.SetWriteDeadline(time.Time{}))
}

// WriteWithin gives the next writes of w until d from now: a client that
// stops reading fails them instead of holding the handler for ever.
func WriteWithin(w http.ResponseWriter, d time.Duration) error {
	return http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

// NewServer is the HTTP server of a berth daemon, with the timeouts above
// and its errors (TLS handshakes refused, ...) logged at warn. Its
// ConnState and ConnContext hooks, and a wrapper around h, serve the
// connections of a LimitListener (they let it close connections that serve
// no request, and keep its reserve for health checks); on other
// connections they do nothing. Replace neither hook.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           reserveServesProbesOnly(h),
		ConnState:         trackConnState,
		ConnContext:       tagReserveConn,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
