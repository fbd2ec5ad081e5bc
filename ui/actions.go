package ui

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// act carries out a form's action. A form is posted from the UI's own pages
// only: it must carry this process's CSRF token (a page of another site
// cannot read it), the browser guard has checked its Origin, and the
// session cookie is SameSite=Strict. Every action is confirmed before it
// is carried out: a form without confirm=yes is answered with a page that
// says what will happen and posts the same form, confirmed (live.js asks
// in the page instead, and adds the field, so nobody is asked twice).
func (u *server) act(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil || !u.checkCSRF(r) {
		http.Error(w, "refused: the form does not carry this page's token (reload the page and try again)", http.StatusForbidden)
		return
	}
	a, back, msg := actionOf(r)
	if msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		u.confirm(w, r, a, back)
		return
	}
	ctx, cancel := pageCtx(r)
	defer cancel()
	if err := actionKinds[a.Kind].do(ctx, u.o.Source, a); err != nil {
		u.fail(w, r, role{}, err)
		return
	}
	http.Redirect(w, r, back+"?done="+url.QueryEscape(string(a.Kind)), http.StatusSeeOther)
}

// actionOf reads a posted action and the page it comes from; msg says
// what is wrong with it, if anything.
func actionOf(r *http.Request) (a Action, back, msg string) {
	a = Action{Kind: ActionKind(r.PostFormValue("kind")), ID: r.PostFormValue("id")}
	k, ok := actionKinds[a.Kind]
	if !ok {
		return a, "", "unknown action " + strconv.Quote(wire.Clip(string(a.Kind), wire.MaxEchoBytes))
	}
	if k.limit {
		n, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("limit")))
		if err != nil || n < 0 {
			return a, "", "limit: want a whole number of executors, 0 or more"
		}
		a.Limit = n
	}
	return a, k.on.page(a.ID), ""
}

// confirmData is the confirmation page's: the question, what the action
// applies to now, and the form that carries it out.
type confirmData struct {
	Question, Target string
	A                Action
	Back             string
}

// confirm asks whether to carry a out, with its target as this master
// sees it: a target that is gone, or a master that no longer leads, is
// said now rather than after the confirmation.
func (u *server) confirm(w http.ResponseWriter, r *http.Request, a Action, back string) {
	ctx, cancel := pageCtx(r)
	defer cancel()
	target, from, err := u.target(ctx, a)
	if err != nil {
		u.fail(w, r, from, err)
		return
	}
	u.render(w, r, http.StatusOK, "confirm", from, confirmData{Question: question(a, true), Target: target, A: a, Back: back})
}

// target describes what a acts on, as it is now.
func (u *server) target(ctx context.Context, a Action) (string, role, error) {
	switch actionKinds[a.Kind].on {
	case entityApp:
		app, _, err := u.o.Source.App(ctx, a.ID)
		if err != nil {
			return "", role{}, err
		}
		n, cores := 0, 0
		for _, e := range app.Executors {
			if !e.State.Finished() {
				n, cores = n+1, cores+e.Cores
			}
		}
		return fmt.Sprintf("Application %s (%s): %s, %d executors holding %d cores.", app.ID, app.Name, app.State, n, cores), role{}, nil
	case entityDriver:
		d, err := u.o.Source.Driver(ctx, a.ID)
		if err != nil {
			return "", role{}, err
		}
		return fmt.Sprintf("Driver %s: %s, %d cores, %s.", d.ID, d.State, d.Cores, strings.Join(d.Command, " ")), role{}, nil
	}
	c, err := u.o.Source.Cluster(ctx)
	if err != nil {
		return "", role{}, err
	}
	if r := roleOf(c); r.Follower {
		// A replica's view: only the leader acts, so nothing is offered here.
		return "", r, &httpx.StatusError{Status: http.StatusTemporaryRedirect, Code: wire.CodeNotLeader,
			Message: "this master is not the leader: act on the leader's page", Leader: r.Leader}
	}
	i := slices.IndexFunc(c.Workers, func(w wire.WorkerStatus) bool { return w.ID == a.ID })
	if i < 0 {
		return "", roleOf(c), unknown(wire.CodeUnknownWorker, "worker", a.ID)
	}
	wk := c.Workers[i]
	target := fmt.Sprintf("Worker %s: %s, %d of %d cores in use.", wk.ID, wk.State, wk.CoresUsed, wk.Cores)
	if wk.Unhealthy != "" {
		target += " Unhealthy: " + wk.Unhealthy + "."
	}
	if n := len(keptOff(c, wk.ID)); n > 0 {
		target += fmt.Sprintf(" %d apps are kept off it.", n)
	}
	return target, roleOf(c), nil
}

// question is what an action's confirmation asks; withLimit: the limit is
// known (the confirmation page's; the page's own forms ask before the
// limit is read).
func question(a Action, withLimit bool) string {
	if k, ok := actionKinds[a.Kind]; ok {
		return k.question(a, withLimit)
	}
	return ""
}

// signInData is the sign-in page's.
type signInData struct {
	Next, Error string
	HasSecret   bool
	// Tenants: a tenant may sign in with its token (a master's UI).
	Tenants bool
	// Code: a one-time sign-in link's (berth ui), to post.
	Code string
}

// signInData is the sign-in page's data, back to next, saying msg.
func (u *server) signInData(next, msg string) signInData {
	return signInData{Next: next, Error: msg, HasSecret: u.o.Secret != "", Tenants: u.o.TenantSignIn != nil && u.o.Sessions != nil}
}

func (u *server) signInPage(w http.ResponseWriter, r *http.Request) {
	d := u.signInData(safeNext(r.URL.Query().Get("next")), "")
	d.Code = r.URL.Query().Get(wire.SignInCodeParam)
	u.render(w, r, http.StatusOK, "signin", role{}, d)
}

// signIn checks the operator secret, or a tenant's token, and sets the
// session cookie: a new session (httpx.UISessions), never the secret or
// the token itself. The one field takes either: a tenant's token is
// told by its prefix (bt.), once it is not the operator secret.
func (u *server) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	_ = r.ParseForm()
	next := safeNext(r.PostFormValue("next"))
	if code := r.PostFormValue(wire.SignInCodeParam); code != "" {
		u.signInWithCode(w, r, next, code)
		return
	}
	token := r.PostFormValue("token")
	operator := u.o.Secret != "" && subtle.ConstantTimeCompare([]byte(token), []byte(u.o.Secret)) == 1
	tenants := u.signInData(next, "").Tenants
	if !operator && tenants && strings.HasPrefix(token, wire.TenantTokenPrefix) {
		u.signInTenant(w, r, next, token)
		return
	}
	if !operator || u.o.Sessions == nil {
		msg := "That token is not this cluster's operator secret."
		if tenants {
			msg = "That token is neither this cluster's operator secret nor a tenant's token (bt.NAME.…)."
		}
		u.render(w, r, http.StatusUnauthorized, "signin", role{}, u.signInData(next, msg))
		return
	}
	value, expires := u.o.Sessions.Start()
	http.SetCookie(w, &http.Cookie{
		Name: u.o.Sessions.Cookie, Value: value, Path: routes.UIPages.Pattern, Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.o.Secure,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut ends the session everywhere it is valid (on every master, for a
// master's), and clears its cookie. A session the masters could not end
// (no leader) is still cleared from this browser, and the page says until
// when a copy of it would work.
func (u *server) signOut(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil || !u.checkCSRF(r) {
		http.Error(w, "refused: the form does not carry this page's token", http.StatusForbidden)
		return
	}
	var failed error
	var expires time.Time
	if s := u.o.Sessions; s != nil {
		if c, err := r.Cookie(s.Cookie); err == nil {
			_, expires, _ = s.Parse(c.Value)
			ctx, cancel := pageCtx(r)
			failed = s.SignOut(ctx, c.Value)
			cancel()
		}
		http.SetCookie(w, &http.Cookie{Name: s.Cookie, Value: "", Path: routes.UIPages.Pattern, MaxAge: -1,
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.o.Secure})
	}
	if failed != nil {
		u.o.Log.Warn("a session signed out of its browser could not be ended", "err", failed)
		u.render(w, r, http.StatusServiceUnavailable, "signin", role{}, u.signInData(routes.UIPages.Pattern,
			fmt.Sprintf("Signed out of this browser, but the session could not be ended on the masters (%v): a copy of it stays valid until %s.", failed, expires.UTC().Format(time.RFC3339))))
		return
	}
	http.Redirect(w, r, routes.UISignIn.Pattern, http.StatusSeeOther)
}

// safeNext keeps a redirect after sign-in on this server's UI.
func safeNext(next string) string {
	home := routes.UIPages.Pattern
	if len(next) > httpx.MaxEchoedURI || !strings.HasPrefix(next, home) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return home
	}
	return next
}
