package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/berth-cluster/berth/wire"
)

// Log streams of a process.
const (
	Stdout = wire.LogStdout
	Stderr = wire.LogStderr
)

// DriverLogs returns a driver's stdout or stderr through the master's log
// proxy; with tailBytes > 0, only its last tailBytes bytes (the master's and
// the workers' ?tail= counts bytes). The caller closes it.
func (c *Client) DriverLogs(ctx context.Context, id, stream string, tailBytes int) (io.ReadCloser, error) {
	rc, err := c.logs(ctx, wire.MasterAPI.DriverLogs.Path(id, stream), stream, tailBytes)
	if err != nil {
		return nil, fmt.Errorf("logs of driver %s: %w", id, err)
	}
	return rc, nil
}

// ExecutorLogs returns an executor's stdout or stderr through the master's
// log proxy; with tailBytes > 0, only its last tailBytes bytes. The caller
// closes it.
func (c *Client) ExecutorLogs(ctx context.Context, appID string, executorID int, stream string, tailBytes int) (io.ReadCloser, error) {
	rc, err := c.logs(ctx, executorLogPath(appID, executorID, stream), stream, tailBytes)
	if err != nil {
		return nil, fmt.Errorf("logs of executor %d of app %s: %w", executorID, appID, err)
	}
	return rc, nil
}

// DriverLogLines returns the last n lines of a driver's stdout or stderr.
func (c *Client) DriverLogLines(ctx context.Context, id, stream string, n int) ([]byte, error) {
	data, err := c.lastLines(ctx, wire.MasterAPI.DriverLogs.Path(id, stream), stream, n)
	if err != nil {
		return nil, fmt.Errorf("logs of driver %s: %w", id, err)
	}
	return data, nil
}

// ExecutorLogLines returns the last n lines of an executor's stdout or
// stderr.
func (c *Client) ExecutorLogLines(ctx context.Context, appID string, executorID int, stream string, n int) ([]byte, error) {
	data, err := c.lastLines(ctx, executorLogPath(appID, executorID, stream), stream, n)
	if err != nil {
		return nil, fmt.Errorf("logs of executor %d of app %s: %w", executorID, appID, err)
	}
	return data, nil
}

func executorLogPath(appID string, executorID int, stream string) string {
	return wire.MasterAPI.ExecutorLogs.Path(appID, strconv.Itoa(executorID), stream)
}

func (c *Client) logs(ctx context.Context, path, stream string, tailBytes int) (io.ReadCloser, error) {
	if err := wire.CheckLogStream(stream); err != nil {
		return nil, err
	}
	if tailBytes < 0 {
		return nil, fmt.Errorf("tail %d: must not be negative", tailBytes)
	}
	if tailBytes > 0 {
		path += "?" + wire.LogTailParam + "=" + strconv.Itoa(tailBytes)
	}
	resp, err := c.open(ctx, request{method: wire.MasterAPI.DriverLogs.Method, path: path})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// maxLogWindow bounds how much of a log lastLines fetches.
const maxLogWindow = 1 << 30

// lastLines fetches the end of a log in growing byte windows until the
// window holds n whole lines (or the whole log), then cuts those lines: the
// API tails in bytes, people in lines, and a log may be too big to fetch
// whole.
func (c *Client) lastLines(ctx context.Context, path, stream string, n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("lines %d: must be positive", n)
	}
	window := max(4096, n*160)
	for {
		rc, err := c.logs(ctx, path, stream, window)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("reading log: %w", err)
		}
		// Less than the window is the whole log; more means the server
		// ignored ?tail= and sent it all.
		whole := len(data) != window || window >= maxLogWindow
		// Each newline before the last byte ends a line that another
		// follows: with n of them, the last n lines start after the first,
		// possibly cut, line of the window.
		if whole || bytes.Count(data[:len(data)-1], []byte("\n")) >= n {
			return tailLines(data, n), nil
		}
		window = min(4*window, maxLogWindow)
	}
}

// tailLines returns the last n lines of data.
func tailLines(data []byte, n int) []byte {
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end-- // the final newline ends the last line, it does not start one
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			if n--; n == 0 {
				return data[i+1:]
			}
		}
	}
	return data
}
