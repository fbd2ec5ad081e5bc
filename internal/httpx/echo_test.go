package httpx

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

type bigStringer struct{}

func (bigStringer) String() string { return strings.Repeat("s", 1<<20) }

// What an error repeats of what a caller sent is cut: each string or
// byte argument to wire.MaxEchoBytes, each error or Stringer to
// maxErrorArg, the whole message written to maxErrorMessage; each cut
// says so. Several 400s echoed a 900 KB value in full.
func TestErrorsEchoLittleOfWhatTheyWereSent(t *testing.T) {
	huge := strings.Repeat("a", 900<<10)
	e := Errorf(http.StatusBadRequest, "name %q, body %s, cause %v, value %s, count %d",
		huge, []byte(huge), errors.New(huge), bigStringer{}, 7)
	if n := len(e.Message); n > 2*wire.MaxEchoBytes+2*maxErrorArg+200 {
		t.Errorf("an error of four huge arguments is %d bytes", n)
	}
	if !strings.Contains(e.Message, "count 7") {
		t.Errorf("a number argument was changed: %.200q", e.Message)
	}
	for _, a := range Echo([]any{huge, []byte(huge), errors.New(huge), bigStringer{}}) {
		if s := a.(string); len(s) > maxErrorArg+64 {
			t.Errorf("an argument echoed as %d bytes", len(s))
		}
	}
	// Whatever a handler formats itself, what reaches the caller is cut.
	rec := httptest.NewRecorder()
	WriteErr(rec, httptest.NewRequest("GET", "/x", nil), &StatusError{Status: http.StatusBadRequest, Message: huge})
	var body wire.Error
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Error) > maxErrorMessage+64 || body.Error == huge {
		t.Errorf("a 900 KB message reached the caller as %d bytes", len(body.Error))
	}
	rec = httptest.NewRecorder()
	WriteError(rec, http.StatusBadRequest, "refused %s", huge)
	if rec.Body.Len() > maxErrorMessage+256 {
		t.Errorf("WriteError answered %d bytes", rec.Body.Len())
	}
}
