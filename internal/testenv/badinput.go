package testenv

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"testing"
	"time"
)

// OpenFDs is the number of this process's open file descriptors (skips where /proc is absent).
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// HeaderTimeout is the read-header timeout for a server under a bad-input test: short enough
// that SlowHeaders' stalled client is cut within a round, long enough for a server built with
// -race on a busy 2-core machine to read an oversized header up to its 1 MiB limit and answer
// 431. With 300 ms, at a load average of ~30, the timeout expired first: the server closed
// without an answer (net/http answers no read timeout) and RawHTTP saw a reset.
const HeaderTimeout = 2 * time.Second

// RawHTTP writes req as is to addr on a new connection and returns the status and body of the
// answer (failing the test when there is none within 15 s). It writes from another goroutine:
// a server may answer and stop reading mid-way (a header over its limit). It then closes with
// our unread bytes and its kernel resets the connection, but on Linux an answer already
// received stays readable after the reset (checked: read 2 s late, the 431 is still there), so
// a reset here means the server closed without answering, e.g. its header timeout expired
// before it had read up to its limit (see HeaderTimeout).
func RawHTTP(t testing.TB, addr, req string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go io.WriteString(c, req)
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%.60q: no answer (the server closed without one: a timeout shorter than HeaderTimeout?): %v", req, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// SlowHeaders opens a connection to addr that sends the start of a request (prefix, without the
// blank line ending its headers) and never finishes it, runs meanwhile (the server must keep
// serving others), then requires the server to close the connection within 15 s (its read
// header timeout). what names the server in the failure.
func SlowHeaders(t testing.TB, addr, prefix, what string, meanwhile func()) {
	t.Helper()
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprint(slow, prefix)
	meanwhile()
	_ = slow.SetReadDeadline(time.Now().Add(15 * time.Second))
	if rest, err := io.ReadAll(slow); err != nil {
		t.Fatalf("%s kept a client that never finished its headers (read %q): %v", what, rest, err)
	}
}

// NoLeaks runs round once, waits for a steady count of goroutines and descriptors, runs it
// twice more, and requires the counts back at or below that baseline within timeout.
// closeIdle closes the test's own idle client connections before each count.
func NoLeaks(t testing.TB, timeout time.Duration, closeIdle, round func()) {
	t.Helper()
	round()
	var baseG, baseFD int
	Eventually(t, timeout, "a steady baseline", func() bool {
		closeIdle()
		g, fd := runtime.NumGoroutine(), OpenFDs(t)
		steady := g == baseG && fd == baseFD
		baseG, baseFD = g, fd
		return steady
	})
	round()
	round()
	Eventually(t, timeout, "goroutines and descriptors back to the baseline", func() bool {
		closeIdle()
		return runtime.NumGoroutine() <= baseG && OpenFDs(t) <= baseFD
	})
}
