package httpx

import (
	"context"
	"net/http"

	"github.com/berth-cluster/berth/wire"
)

// Call sends in to route r of the API at base (with the route's path
// parameters) and returns the decoded answer. A request of type wire.None
// sends no body; an answer of type wire.None is read and dropped.
func Call[Req, Resp any](ctx context.Context, c *Client, base string, r wire.Route[Req, Resp], in Req, params ...string) (Resp, error) {
	var out Resp
	var body any = in
	if _, none := body.(wire.None); none {
		body = nil
	}
	var dst any = &out
	if _, none := dst.(*wire.None); none {
		dst = nil
	}
	err := c.Do(ctx, r.Method, base+r.Path(params...), body, dst)
	return out, err
}

// Coded builds a StatusError with its machine-readable code.
func Coded(status int, code wire.ErrorCode, format string, args ...any) *StatusError {
	se := Errorf(status, format, args...)
	se.Code = code
	return se
}

// defaultCodes are the codes of error bodies whose error has none: the one
// their status implies ("" for the others).
var defaultCodes = map[int]wire.ErrorCode{
	http.StatusBadRequest:            wire.CodeBadRequest,
	http.StatusUnauthorized:          wire.CodeUnauthorized,
	http.StatusForbidden:             wire.CodeForbidden,
	http.StatusTooManyRequests:       wire.CodeLimitReached,
	http.StatusRequestEntityTooLarge: wire.CodeTooLarge,
	http.StatusInternalServerError:   wire.CodeInternal,
}

func defaultCode(status int) wire.ErrorCode { return defaultCodes[status] }
