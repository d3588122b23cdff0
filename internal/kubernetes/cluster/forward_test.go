package cluster

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"
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
