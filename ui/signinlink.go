package ui

import (
	"net/http"
)

// Signing in with a one-time link (berth ui): the link opens the sign-in
// page with its code, which the page posts back (a link prefetcher that
// only GETs spends nothing); a good code starts a session as the secret
// does.

// signInWithCode spends code and, if it was good, starts a session.
func (u *server) signInWithCode(w http.ResponseWriter, r *http.Request, next, code string) {
	if u.o.SignInCode == nil || u.o.Sessions == nil || !u.o.SignInCode(code) {
		u.render(w, r, http.StatusUnauthorized, "signin", role{}, u.signInData(next,
			"That sign-in link does not work (any more): each works once, within 5 minutes, on the master that made it. Run berth ui for another."))
		return
	}
	value, expires := u.o.Sessions.Start()
	http.SetCookie(w, &http.Cookie{
		Name: u.o.Sessions.Cookie, Value: value, Path: routes.UIPages.Pattern, Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.o.Secure,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}
