package ui

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/berth-cluster/berth/internal/httpx"
)

// act carries out a form's action. A form is posted from the UI's own pages
// only: it must carry this process's CSRF token (a page of another site
// cannot read it), the browser guard has checked its Origin, and the
// session cookie is SameSite=Strict. Each action's button asks for
// confirmation in the page (live.js) before the form is sent.
func (u *server) act(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil || !u.checkCSRF(r) {
		http.Error(w, "refused: the form does not carry this page's token (reload the page and try again)", http.StatusForbidden)
		return
	}
	a := Action{Kind: ActionKind(r.PostFormValue("kind")), ID: r.PostFormValue("id")}
	back := "/ui/"
	switch a.Kind {
	case ActionKillApp, ActionSetLimit:
		back = "/ui/apps/" + url.PathEscape(a.ID)
	case ActionKillDriver:
		back = "/ui/drivers/" + url.PathEscape(a.ID)
	case ActionDecommission, ActionUndrain:
		back = "/ui/workers/" + url.PathEscape(a.ID)
	default:
		http.Error(w, "unknown action "+strconv.Quote(string(a.Kind)), http.StatusBadRequest)
		return
	}
	if a.Kind == ActionSetLimit {
		n, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("limit")))
		if err != nil || n < 0 {
			http.Error(w, "limit: want a whole number of executors, 0 or more", http.StatusBadRequest)
			return
		}
		a.Limit = n
	}
	ctx, cancel := pageCtx(r)
	defer cancel()
	if err := u.o.Source.Act(ctx, a); err != nil {
		u.fail(w, err)
		return
	}
	http.Redirect(w, r, back+"?done="+url.QueryEscape(string(a.Kind)), http.StatusSeeOther)
}

// signInData is the sign-in page's.
type signInData struct {
	Next, Error string
	HasSecret   bool
}

func (u *server) signInPage(w http.ResponseWriter, r *http.Request) {
	u.render(w, http.StatusOK, "signin", signInData{Next: safeNext(r.URL.Query().Get("next")), HasSecret: u.o.Secret != ""})
}

// signIn checks the operator secret and sets the session cookie, which
// holds a value derived from the secret (httpx.UISession), never the
// secret itself.
func (u *server) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	_ = r.ParseForm()
	next := safeNext(r.PostFormValue("next"))
	token := r.PostFormValue("token")
	if u.o.Secret == "" || subtle.ConstantTimeCompare([]byte(token), []byte(u.o.Secret)) != 1 {
		u.render(w, http.StatusUnauthorized, "signin", signInData{Next: next, HasSecret: u.o.Secret != "", Error: "That token is not this cluster's operator secret."})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: httpx.UISessionCookie, Value: httpx.UISession(u.o.Secret), Path: httpx.UIPrefix,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.o.Secure, MaxAge: 12 * 3600,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (u *server) signOut(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil || !u.checkCSRF(r) {
		http.Error(w, "refused: the form does not carry this page's token", http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: httpx.UISessionCookie, Value: "", Path: httpx.UIPrefix, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.o.Secure})
	http.Redirect(w, r, httpx.UISignIn, http.StatusSeeOther)
}

// safeNext keeps a redirect after sign-in on this server's UI.
func safeNext(next string) string {
	if !strings.HasPrefix(next, httpx.UIPrefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return httpx.UIPrefix
	}
	return next
}
