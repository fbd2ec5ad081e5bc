// Package httpx is the HTTP plumbing shared by the master, the workers and
// the client: shared-secret auth, strict JSON bodies, uniform errors.
package httpx

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// RequireSecret wraps h so that every request but GET /healthz must carry
// "Authorization: Bearer <secret>". The comparison is constant-time (on
// digests, so the secret's length does not leak either). An empty secret
// disables the check.
func RequireSecret(secret string, h http.Handler) http.Handler {
	if secret == "" {
		return h
	}
	want := sha256.Sum256([]byte(secret))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.MasterAPI.Health.Pattern {
			h.ServeHTTP(w, r)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			WriteError(w, http.StatusUnauthorized, "missing or wrong secret") // code unauthorized
			return
		}
		h.ServeHTTP(w, r)
	})
}

// StatusError is an error with the HTTP status it maps to. Servers return it
// from decoding and validation; the client returns it for non-2xx answers.
type StatusError struct {
	Status  int
	Message string
	Leader  string         // the leader's API base URL, on a redirect from a master
	Code    wire.ErrorCode // machine-readable kind, if it has one
	// Location is a redirect's Location header as received (the full URL of
	// the request there), for redirects from other servers than masters.
	Location string
}

// ErrorCode is e's code, the status's default when it has none: what
// WriteErr answers with.
func (e *StatusError) ErrorCode() wire.ErrorCode {
	if e.Code != "" {
		return e.Code
	}
	return defaultCode(e.Status)
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Errorf builds a StatusError. What it repeats of its arguments is cut to
// a small size (Echo): an error message must not hand a caller back, nor
// a log keep, the megabyte the caller sent.
func Errorf(status int, format string, args ...any) *StatusError {
	return &StatusError{Status: status, Message: fmt.Sprintf(format, Echo(args)...)}
}

// maxErrorArg bounds what an error argument of an error message repeats
// (it may quote a value itself, cut already, and say why it is wrong);
// maxErrorMessage bounds a whole message written to a caller.
const (
	maxErrorArg     = 1024
	maxErrorMessage = 4096
	// MaxEchoedURI bounds a request URI a redirect repeats (a follower's
	// 307 to the leader, the UI's sign-in next=): no route of berth's
	// needs more, and a 1 MB path sent to a follower came back as a 1 MB
	// Location. A longer one is redirected without it (the leader named
	// in the body; the UI's home page).
	MaxEchoedURI = 8 << 10
)

// Echo returns args with each string, byte slice, error or Stringer cut to
// a size an error message may repeat (wire.Clip: the cut says how much
// went); other values as they are.
func Echo(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = wire.Clip(v, wire.MaxEchoBytes)
		case []byte:
			out[i] = wire.Clip(string(v), wire.MaxEchoBytes)
		case error:
			out[i] = wire.Clip(v.Error(), maxErrorArg)
		case fmt.Stringer:
			out[i] = wire.Clip(v.String(), maxErrorArg)
		default:
			out[i] = a
		}
	}
	return out
}

// DecodeJSON reads r's body into v. The body must be one JSON value of at most
// wire.MaxBodyBytes with no unknown fields; otherwise a 400 or 413
// StatusError explains what is wrong.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, wire.MaxBodyBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return Errorf(http.StatusRequestEntityTooLarge, "request body larger than %d bytes", wire.MaxBodyBytes)
		}
		return Errorf(http.StatusBadRequest, "reading request body: %v", err)
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		// Decoding null changes nothing: PUT /v1/queues/q with it made
		// the queue as {} would, which no caller meant.
		return Errorf(http.StatusBadRequest, "request body null: want a JSON value of the route's type")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return Errorf(http.StatusBadRequest, "empty request body, want JSON")
		}
		return Errorf(http.StatusBadRequest, "malformed JSON: %v", err)
	}
	if dec.More() {
		return Errorf(http.StatusBadRequest, "malformed JSON: data after the object")
	}
	return nil
}

// WriteJSON writes v as the JSON body with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes a wire.Error body, with the code its status implies.
func WriteError(w http.ResponseWriter, status int, format string, args ...any) {
	WriteJSON(w, status, wire.Error{Error: wire.Clip(fmt.Sprintf(format, Echo(args)...), maxErrorMessage), Code: defaultCode(status)})
}

// WriteErr writes err, the answer to r, with its status (500 unless it is
// a StatusError). A redirect to the leader points at r's path and query
// there, so that any caller (curl -L, a driver, a browser) can follow it.
func WriteErr(w http.ResponseWriter, r *http.Request, err error) {
	var se *StatusError
	if errors.As(err, &se) {
		if se.Leader != "" && se.Status == http.StatusTemporaryRedirect {
			leader := strings.TrimSuffix(se.Leader, "/")
			if uri := r.URL.RequestURI(); len(uri) <= MaxEchoedURI {
				leader += uri
			}
			w.Header().Set("Location", leader)
		}
		code := se.Code
		if code == "" {
			code = defaultCode(se.Status)
		}
		WriteJSON(w, se.Status, wire.Error{Error: wire.Clip(se.Message, maxErrorMessage), Leader: se.Leader, Code: code})
		return
	}
	WriteError(w, http.StatusInternalServerError, "%v", err)
}
