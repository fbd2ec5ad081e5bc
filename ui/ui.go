package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configure the master's UI.
type Options struct {
	Source Source
	// Secret is the operator secret the sign-in page checks ("" for none:
	// then only a cli certificate, or the loopback mode, signs in).
	Secret string
	// Secure marks the session cookie Secure (the server is TLS).
	Secure bool
	// SignInNeeded: the server has credentials, so pages need a session
	// or a client certificate (false in the loopback dev mode).
	SignInNeeded bool
	Log          *slog.Logger
}

// Handler serves the UI's pages under /ui/. The caller puts it behind the
// API's authorization (httpx.Authorize with UI set) and its browser guard.
func Handler(o Options) http.Handler {
	u := &server{o: o, pages: parse(), csrf: newCSRF()}
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", cacheFor(time.Hour, http.FileServerFS(static))))
	mux.HandleFunc("GET /ui/{$}", u.overview)
	mux.HandleFunc("GET /ui/topology", u.topology)
	mux.HandleFunc("GET /ui/workers/{id}", u.worker)
	mux.HandleFunc("GET /ui/apps/{id}", u.app)
	mux.HandleFunc("GET /ui/drivers/{id}", u.driver)
	mux.HandleFunc("GET /ui/logs", u.logs)
	mux.HandleFunc("POST /ui/act", u.act)
	mux.HandleFunc("GET /ui/sign-in", u.signInPage)
	mux.HandleFunc("POST /ui/sign-in", u.signIn)
	mux.HandleFunc("POST /ui/sign-out", u.signOut)
	return securityHeaders(mux)
}

type server struct {
	o     Options
	pages map[string]*template.Template
	csrf  string
}

// newCSRF is this process's form token: every form of its pages carries
// it, and a post without it is refused. A page of another site cannot read
// it (same-origin policy), so it cannot forge a form that carries it.
func newCSRF() string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Errorf("ui: no randomness for the CSRF key: %w", err))
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("berth ui form"))
	return hex.EncodeToString(m.Sum(nil))
}

func (u *server) checkCSRF(r *http.Request) bool {
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(u.csrf))
}

// securityHeaders keeps the pages out of frames (clickjacking) and
// limits what they may load to themselves.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

func cacheFor(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age="+strconv.Itoa(int(d.Seconds())))
		h.ServeHTTP(w, r)
	})
}

// render writes page with data inside the layout.
func (u *server) render(w http.ResponseWriter, status int, page string, data any) {
	t, ok := u.pages[page]
	if !ok {
		http.Error(w, "no page "+page, http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", view{Page: page, CSRF: u.csrf, SignedIn: u.o.SignInNeeded, Data: data}); err != nil {
		u.o.Log.Error("ui: rendering", "page", page, "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// view is what every page's template gets.
type view struct {
	Page     string
	CSRF     string
	SignedIn bool // a sign-out button makes sense
	Data     any
}

// fail renders an error page with err's message and status.
func (u *server) fail(w http.ResponseWriter, err error) {
	status := http.StatusBadGateway
	var se *httpx.StatusError
	leader := ""
	if errors.As(err, &se) {
		status, leader = se.Status, se.Leader
		if status == http.StatusTemporaryRedirect {
			status = http.StatusOK // shown as a page that links to the leader
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		status = http.StatusGatewayTimeout
	}
	u.render(w, status, "error", struct {
		Message, Leader string
	}{err.Error(), leader})
}

// ctx bounds a page's reads: a page must answer even when the loop is busy.
func pageCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 5*time.Second)
}
