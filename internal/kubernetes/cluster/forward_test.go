package cluster

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

// TestForwarder: what a client sends through the forwarder reaches the target and the answer
// comes back, connection by connection; a target that refuses closes the client's connection;
// Close ends every connection and returns once the forwarder's goroutines have.
func TestForwarder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an echo server, upper-casing nothing: each line back as it came
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	var dialed atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	f, err := startForwarder("127.0.0.1:0", ln.Addr().String(), dial, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var open []net.Conn
	for i := range 3 {
		c, err := net.DialTimeout("tcp", f.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		msg := "hello " + string(rune('a'+i)) + "\n"
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || got != msg {
			t.Fatalf("connection %d: %q, %v; want %q back", i, got, err, msg)
		}
	}
	if n := dialed.Load(); n != 3 {
		t.Errorf("dialed %d times for 3 connections", n)
	}

	// A target where nothing listens: the client's connection ends.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nowhere := closed.Addr().String()
	closed.Close()
	g, err := startForwarder("127.0.0.1:0", nowhere, (&net.Dialer{}).DialContext, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", g.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read through a forwarder to nowhere: %d, %v; want EOF", n, err)
	}
	c.Close()
	g.Close()

	done := make(chan struct{})
	go func() { f.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with connections open")
	}
	for i, c := range open {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("connection %d still open after Close", i)
		}
		c.Close()
	}
	if _, err := net.DialTimeout("tcp", f.Addr(), time.Second); err == nil {
		t.Error("the forwarder still accepts after Close")
	}
}

// TestForwarderBoundsConnectsInProgress: with maxDialing connects stalled (an API server that
// accepts nothing), one more client is closed at once instead of taking another thread; once
// the stalled connects end, clients are served again.
func TestForwarderBoundsConnectsInProgress(t *testing.T) {
	release := make(chan struct{})
	var stalled atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		stalled.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("refused")
	}
	f, err := startForwarder("127.0.0.1:0", "192.0.2.1:6443", dial, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range maxDialing {
		c, err := net.DialTimeout("tcp", f.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	testenv.Eventually(t, 10*time.Second, "every connect in progress", func() bool { return stalled.Load() == maxDialing })
	extra, err := net.DialTimeout("tcp", f.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a client over the bound: read %d, %v; want EOF at once", n, err)
	}
	if n := stalled.Load(); n != maxDialing {
		t.Errorf("%d connects started, want %d", n, maxDialing)
	}
	close(release)
	// The stalled connects now fail and free their slots; a client that arrives after one is
	// free gets its connect (one arriving before is closed, as above: so try until one does).
	testenv.Eventually(t, 10*time.Second, "a connect after the stalled ones ended", func() bool {
		if c, err := net.DialTimeout("tcp", f.Addr(), 5*time.Second); err == nil {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Read(make([]byte, 1)) // returns once the forwarder is done with it
			c.Close()
		}
		return stalled.Load() > maxDialing
	})
}
