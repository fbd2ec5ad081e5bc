package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// Following a log as it grows (berth logs --follow): the worker says
// where each answer ends (wire.LogCursorHeader), and the next read asks
// for what lies past that (wire.LogAfterParam), across the log's rolled
// files; nothing is printed twice or skipped, unless the worker rolled it
// away before it was read (Follow.Gap is told).

// Follow says how to follow a log.
type Follow struct {
	// TailLines: start with the last TailLines lines (0: the whole log).
	TailLines int
	// Every is the pause between two reads (0: 500 ms).
	Every time.Duration
	// Ended reports whether the process has ended: the log is then read
	// once more, to its end, and following stops.
	Ended func(ctx context.Context) (bool, error)
	// Gap, if set, is told when output was rolled away unread.
	Gap func()
}

// FollowDriverLog copies a driver's stdout or stderr to w as it grows,
// until the driver ends (f.Ended) or ctx is done.
func (c *Client) FollowDriverLog(ctx context.Context, id, stream string, f Follow, w io.Writer) error {
	if err := c.follow(ctx, wire.MasterAPI.DriverLogs.Path(id, stream), stream, f, w); err != nil {
		return fmt.Errorf("logs of driver %s: %w", id, err)
	}
	return nil
}

// FollowExecutorLog is FollowDriverLog for an executor.
func (c *Client) FollowExecutorLog(ctx context.Context, appID string, executorID int, stream string, f Follow, w io.Writer) error {
	if err := c.follow(ctx, executorLogPath(appID, executorID, stream), stream, f, w); err != nil {
		return fmt.Errorf("logs of executor %d of app %s: %w", executorID, appID, err)
	}
	return nil
}

// DriverEnded is a Follow.Ended for driver id: it has ended once its
// state is final.
func (c *Client) DriverEnded(id string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		st, err := c.Driver(ctx, id)
		return err == nil && st.State.Finished(), err
	}
}

// ExecutorEnded is a Follow.Ended for an executor: it has ended once its
// state is final, or its app has.
func (c *Client) ExecutorEnded(appID string, executorID int) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		st, err := c.App(ctx, appID)
		if err != nil {
			return false, err
		}
		if st.State.Finished() {
			return true, nil
		}
		for _, e := range st.Executors {
			if e.ID == executorID {
				return e.State.Finished(), nil
			}
		}
		return false, nil
	}
}

func (c *Client) follow(ctx context.Context, path, stream string, f Follow, w io.Writer) error {
	if err := wire.CheckLogStream(stream); err != nil {
		return err
	}
	every := f.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	cursor, err := c.followStart(ctx, path, f.TailLines, w)
	if err != nil {
		return err
	}
	for {
		ended := false
		if f.Ended != nil {
			if ended, err = f.Ended(ctx); err != nil {
				return err
			}
		}
		data, next, gap, err := c.logChunk(ctx, path, url.Values{wire.LogAfterParam: {cursor.String()}})
		if err != nil {
			return err
		}
		if gap && f.Gap != nil {
			f.Gap()
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		cursor = next
		if ended {
			return nil
		}
		if !poll.Sleep(ctx, every) {
			return ctx.Err()
		}
	}
}

// followStart writes the log's start (whole, or its last lines) and
// returns where it ends.
func (c *Client) followStart(ctx context.Context, path string, lines int, w io.Writer) (wire.LogCursor, error) {
	if lines <= 0 { // the whole log, however long: streamed
		_, cursor, _, err := c.logChunkTo(ctx, path, nil, w)
		return cursor, err
	}
	window := max(4096, lines*160)
	for {
		data, cursor, _, err := c.logChunk(ctx, path, url.Values{wire.LogTailParam: {strconv.Itoa(window)}})
		if err != nil {
			return cursor, err
		}
		whole := len(data) < window || window >= maxLogWindow
		if whole || bytes.Count(data[:len(data)-1], []byte("\n")) >= lines {
			_, err = w.Write(tailLines(data, lines))
			return cursor, err
		}
		window = min(4*window, maxLogWindow)
	}
}

// errNoCursor: the worker does not say where its answers end.
var errNoCursor = errors.New("the worker does not say where its log ends (" + wire.LogCursorHeader + "), so it cannot be followed: upgrade the worker")

// logChunk reads one answer of the log route with query q, and where it
// ends.
func (c *Client) logChunk(ctx context.Context, path string, q url.Values) (data []byte, cursor wire.LogCursor, gap bool, err error) {
	return c.logChunkTo(ctx, path, q, nil)
}

// logChunkTo is logChunk copying the answer to w instead, when w is not
// nil. The answer must be read whole: its cursor is where it ends.
func (c *Client) logChunkTo(ctx context.Context, path string, q url.Values, w io.Writer) (data []byte, cursor wire.LogCursor, gap bool, err error) {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	resp, err := c.open(ctx, request{method: wire.MasterAPI.DriverLogs.Method, path: path})
	if err != nil {
		return nil, cursor, false, err
	}
	defer resp.Body.Close()
	h := resp.Header.Get(wire.LogCursorHeader)
	if h == "" {
		return nil, cursor, false, errNoCursor
	}
	if cursor, err = wire.ParseLogCursor(h); err != nil {
		return nil, cursor, false, err
	}
	if w != nil {
		_, err = io.Copy(w, resp.Body)
	} else {
		data, err = io.ReadAll(resp.Body)
	}
	if err != nil {
		return nil, cursor, false, fmt.Errorf("reading log: %w", err)
	}
	return data, cursor, resp.Header.Get(wire.LogGapHeader) == "true", nil
}
