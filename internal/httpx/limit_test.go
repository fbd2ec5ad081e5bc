package httpx

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// LimitListener holds the connection over its cap until one closes.
func TestLimitListenerWaitsForASlot(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted over the cap of 2")
	case <-time.After(200 * time.Millisecond): // a negative: nothing may come
	}
	first.Close()
	first.Close() // a second Close gives back nothing more
	select {
	case third := <-accepted:
		third.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the third connection was not accepted once one closed")
	}
	second.Close()
	if n := DefaultMaxConnections(); n < 64 {
		t.Errorf("DefaultMaxConnections %d", n)
	}
}

// A request whose body trickles in past ReadTimeout is cut off; a
// long-lived response lifts the timeouts and outlives them.
func TestServerTimeouts(t *testing.T) {
	defer func(r, w time.Duration) { ReadTimeout, WriteTimeout = r, w }(ReadTimeout, WriteTimeout)
	ReadTimeout, WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		if err := LongLived(w); err != nil {
			t.Error(err)
		}
		for i := range 4 {
			if r.Context().Err() != nil {
				return // the read timeout cancelled the request
			}
			w.Write([]byte("line\n"))
			w.(http.Flusher).Flush()
			if i < 3 {
				time.Sleep(200 * time.Millisecond) // the stream's own pace: 600 ms in all, past both timeouts
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(mux, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go srv.Serve(ln)
	defer srv.Close()

	// A body promised and never sent: the server gives up at ReadTimeout.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err == nil {
		// The handler may answer before reading the body; the connection
		// must still be closed by the deadline.
		for err == nil {
			_, err = c.Read(buf)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a stalled request held its connection %v", d)
	}

	resp, err := http.Get("http://" + ln.Addr().String() + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		n += strings.Count(sc.Text(), "line")
	}
	if n != 4 {
		t.Errorf("the long-lived response carried %d lines of 4 (%v)", n, sc.Err())
	}
}
