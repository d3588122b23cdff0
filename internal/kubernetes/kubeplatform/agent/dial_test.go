package agent

import (
	"io"
	"net"
	"strings"
	"testing"
)

func TestDialThrough(t *testing.T) {
	_, c := startAgent(t)
	ctx := testCtx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The far end reads to EOF (the client's half-close), then answers and closes.
	served := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer conn.Close()
		b, err := io.ReadAll(conn)
		if err == nil {
			_, err = conn.Write([]byte("got:" + string(b)))
		}
		served <- err
	}()
	conn, err := c.Dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(conn)
	if err != nil || string(b) != "got:hello" {
		t.Fatalf("read %q, %v; want got:hello", b, err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestDialErrorNamesAddress(t *testing.T) {
	_, c := startAgent(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the far dial is refused
	_, err = c.Dial(testCtx(t), "tcp", addr)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Dial = %v; want an error naming %s", err, addr)
	}
	if _, err := c.Dial(testCtx(t), "udp", addr); err == nil || !strings.Contains(err.Error(), `invalid network "udp"`) {
		t.Fatalf("Dial udp = %v", err)
	}
}
