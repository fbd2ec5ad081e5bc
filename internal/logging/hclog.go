package logging

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// HCLog adapts a slog.Logger to hclog.Logger, the interface hashicorp/raft
// logs through, so Raft's messages land in the same stream, format and
// level filter as berth's own.
func HCLog(l *slog.Logger, name string) hclog.Logger {
	return newHC(l, name, nil)
}

type hcAdapter struct {
	base    *slog.Logger // without the component, so renaming replaces it
	l       *slog.Logger // base with the component and the implied args
	name    string
	implied []any
}

func newHC(base *slog.Logger, name string, implied []any) *hcAdapter {
	return &hcAdapter{base: base, l: base.With("component", name).With(implied...), name: name, implied: implied}
}

// levelTrace is below slog's Debug; hclog's Trace maps there.
const levelTrace = slog.LevelDebug - 4

func toSlog(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (h *hcAdapter) Log(level hclog.Level, msg string, args ...any) {
	h.l.Log(context.Background(), toSlog(level), msg, formatted(args)...)
}

// formatted renders the values hclog formats itself: hclog.Fmt("%+v", x)
// is a format and its arguments, which slog would print as they are
// (Raft's `servers="[%+v [...]]"`).
func formatted(args []any) []any {
	copied := false
	for i, a := range args {
		f, ok := a.(hclog.Format)
		if !ok || len(f) == 0 {
			continue
		}
		if format, ok := f[0].(string); ok {
			if !copied { // args is the caller's
				args, copied = append([]any(nil), args...), true
			}
			args[i] = fmt.Sprintf(format, f[1:]...)
		}
	}
	return args
}
func (h *hcAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcAdapter) enabled(level hclog.Level) bool {
	return h.l.Enabled(context.Background(), toSlog(level))
}
func (h *hcAdapter) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hcAdapter) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hcAdapter) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hcAdapter) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hcAdapter) IsError() bool { return h.enabled(hclog.Error) }

func (h *hcAdapter) ImpliedArgs() []any { return h.implied }

func (h *hcAdapter) With(args ...any) hclog.Logger {
	return newHC(h.base, h.name, append(append([]any{}, h.implied...), args...))
}

func (h *hcAdapter) Name() string { return h.name }

func (h *hcAdapter) Named(name string) hclog.Logger {
	full := name
	if h.name != "" {
		full = h.name + "." + name
	}
	return newHC(h.base, full, h.implied)
}

func (h *hcAdapter) ResetNamed(name string) hclog.Logger {
	return newHC(h.base, name, h.implied)
}

// SetLevel is a no-op: the slog handler's level decides.
func (h *hcAdapter) SetLevel(hclog.Level) {}

func (h *hcAdapter) GetLevel() hclog.Level {
	for _, lv := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn} {
		if h.enabled(lv) {
			return lv
		}
	}
	return hclog.Error
}

func (h *hcAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(nil), "", 0)
}

func (h *hcAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		h.Info(string(bytes.TrimRight(p, "\n")))
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
