package testproc

import (
	"net"
	"net/http"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
)

// HandleJSON returns the handler of a fake server's JSON endpoint: it
// decodes the request body into a Req as the real servers do (refusing, as
// they do, a body that does not decode), passes it to answer, and writes
// answer's reply as JSON with status 200, or its error as the real servers
// write errors. answer does its own locking: a fake may need to block, or
// to hand the request on, outside its lock.
func HandleJSON[Req any](answer func(r *http.Request, req Req) (reply any, err error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := httpx.DecodeJSON(w, r, &req); err != nil {
			httpx.WriteErr(w, r, err)
			return
		}
		reply, err := answer(r, req)
		if err != nil {
			httpx.WriteErr(w, r, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, reply)
	}
}

// ClosedURL returns a base URL on which nothing listens: connecting to it
// is refused (until something else happens to take the port).
func ClosedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
